// Search hits written as the API's JSON straight from stored bytes (one call per run of hits): exported by addon.cc.
#pragma once
#include <node_api.h>

namespace tidepool {
// writeHits(out, pos, raw, offsets, first, count, step, ids, times, base, idsHex, hitOffs, hitTimes, at) -> new pos or -1
napi_value WriteHits(napi_env env, napi_callback_info info);
// joinHits(out, pos, json, offs, from, to) -> new pos or -1
napi_value JoinHits(napi_env env, napi_callback_info info);
}  // namespace tidepool
