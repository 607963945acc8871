// Descriptors passed between processes over a Unix socket (SCM_RIGHTS): the pooler's takeover (see fd-passing.cc).
#pragma once
#include <napi.h>

namespace tidepool {
/** Registers fdUnixConnect, fdSend, fdSendSome, fdReceive, fdPeerUid, fdClose, fdDup, fdWatch and fdUnwatch. */
void InitFdPassing(Napi::Env env, Napi::Object exports);
}  // namespace tidepool
