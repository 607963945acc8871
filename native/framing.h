// Wire-framing scan of PostgreSQL protocol messages: exported to JS by addon.cc.
#pragma once
#include <node_api.h>

namespace tidepool {
// scanFrames(buf, offset, end, out, maxMessageSize) -> count
napi_value ScanFrames(napi_env env, napi_callback_info info);
}  // namespace tidepool
