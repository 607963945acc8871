// Client/server byte forwarding on Node's event loop (see relay.cc).
#pragma once
#include <napi.h>

namespace tidepool {
void InitRelay(Napi::Env env, Napi::Object exports);
}
