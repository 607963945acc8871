// What the relay's TLS engine (relay-tls.cc) and its bindings (relay-tls-napi.cc) share.
#pragma once

#include <string>

namespace tidepool {
namespace relay {

/** OpenSSL's reason for the last error of this thread (`fallback` when there is none); the queue is cleared, since
 *  Node's own OpenSSL calls share it. */
std::string TakeSslError(const char* fallback);

}  // namespace relay
}  // namespace tidepool
