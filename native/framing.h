// Wire-framing scan of PostgreSQL protocol messages: exported to JS by addon.cc.
#pragma once
#include <napi.h>

namespace tidepool {
// scanFrames(buf, offset, end, out, maxMessageSize) -> count
Napi::Value ScanFrames(const Napi::CallbackInfo& info);
}  // namespace tidepool
