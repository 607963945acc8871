// Descriptors passed between processes over a Unix socket (SCM_RIGHTS): the pooler's takeover (see fd-passing.cc).
#pragma once
#include <napi.h>

namespace tidepool {
/** Registers fdUnixConnect, fdSend, fdReceive, fdPeerUid and fdClose. */
void InitFdPassing(Napi::Env env, Napi::Object exports);
}  // namespace tidepool
