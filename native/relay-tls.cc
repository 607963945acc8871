// TLS toward clients terminated in the relay: OpenSSL (the one Node.js is built with and exports to addons) runs each
// session on memory BIOs, so the relay keeps its own recv/send, its backpressure and its pending output (ciphertext),
// and a write never stops half way inside OpenSSL (SSL_write into a memory BIO takes the whole buffer).
//
// A client that asked for TLS is handed over right after the pooler's 'S' (or at its first byte, for direct TLS) as an
// endpoint in login mode: the relay does the handshake and passes every decrypted byte to JavaScript (kLoginData,
// relayTake), which runs the startup and the password exchange exactly as for a plaintext client and writes its
// answers with relayWrite; relayAdopt then makes the same endpoint a relayed client. Contexts are built from the PEM
// bytes JavaScript read (relayTlsContext); a session keeps its context alive, so RELOAD's new context serves new
// connections while connected ones keep theirs. Renegotiation is off (as in PostgreSQL); TLS 1.3 KeyUpdate and
// close_notify are answered by OpenSSL inside SSL_read and their records sent by TlsFlush.
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <climits>
#include <cstring>
#include <string>

#include "relay-engine.h"
#include "relay-tls.h"

namespace tidepool {
namespace relay {

/** OpenSSL's reason for the last error of this thread, and the queue cleared (Node's own calls share it). */
std::string TakeSslError(const char* fallback) {
  unsigned long e = ERR_peek_last_error();
  std::string out;
  if (e != 0) {
    const char* reason = ERR_reason_error_string(e);
    if (reason) out = reason;
    else {
      char buf[256];
      ERR_error_string_n(e, buf, sizeof buf);
      out = buf;
    }
  }
  ERR_clear_error();
  return out.empty() ? fallback : out;
}

void Relay::OnTlsReadable(Endpoint* ep) {
  ssize_t n = Receive(ep, tlsIn_.data(), tlsIn_.size());
  if (n <= 0 || ep->closing || ep->stopped) return;  // nothing yet, lost, or discarding until EOF
  TlsIngest(ep, tlsIn_.data(), static_cast<size_t>(n));
}

void Relay::TlsIngest(Endpoint* ep, const uint8_t* data, size_t len) {
  if (len > 0 && BIO_write(ep->rbio, data, static_cast<int>(len)) != static_cast<int>(len)) {
    TlsFail(ep);
    return;
  }
  ERR_clear_error();
  if (!ep->tlsReady) {
    const int rc = SSL_do_handshake(ep->ssl);
    const int err = rc == 1 ? SSL_ERROR_NONE : SSL_get_error(ep->ssl, rc);
    if (err != SSL_ERROR_NONE && err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
      // The alert OpenSSL wrote goes out first, as far as the socket takes it.
      std::string why = TakeSslError("TLS handshake failed");
      TlsFlush(ep);
      if (ep->fd < 0) return;
      if (tlsErrors_.size() >= 4096) tlsErrors_.clear();
      tlsErrors_[ep->id] = why;
      Lost(ep, kCloseTls);
      return;
    }
    if (!TlsFlush(ep)) return;
    if (rc != 1) return;
    ep->tlsReady = true;
    Emit(kTlsReady, ep->id);
    if (!ep->tlsPlainOut.empty()) {
      std::string early;
      early.swap(ep->tlsPlainOut);
      if (!TlsWrite(ep, reinterpret_cast<const uint8_t*>(early.data()), early.size())) return;
    }
  } else if (!ep->tlsPlainOut.empty()) {
    // SSL_write asked to be called again (it never does on memory BIOs, but OpenSSL's contract is kept).
    std::string again;
    again.swap(ep->tlsPlainOut);
    if (!TlsWrite(ep, reinterpret_cast<const uint8_t*>(again.data()), again.size())) return;
  }
  // Decrypted bytes land after the carried partial header, as recv's do in OnReadable; a full buffer is handed on and
  // reading goes on, so nothing stays inside OpenSSL (SSL_pending) with no poll event left to fetch it.
  uint8_t* buf = readBuf_.data();
  for (;;) {
    const size_t carry = ep->login ? 0 : ep->carryLen;
    if (carry) std::memcpy(buf, ep->carry, carry);
    const size_t cap = carry + kReadSize;
    size_t got = carry;
    int err = SSL_ERROR_NONE;
    while (got < cap) {
      const size_t room = cap - got;
      const int r = SSL_read(ep->ssl, buf + got, room > INT_MAX ? INT_MAX : static_cast<int>(room));
      if (r > 0) {
        got += static_cast<size_t>(r);
        continue;
      }
      err = SSL_get_error(ep->ssl, r);
      break;
    }
    std::string why;
    if (err != SSL_ERROR_NONE && err != SSL_ERROR_WANT_READ && err != SSL_ERROR_ZERO_RETURN) why = TakeSslError("TLS error");
    else ERR_clear_error();
    // Answers OpenSSL wrote while reading (KeyUpdate, alerts) go out now.
    if (!TlsFlush(ep)) return;
    if (got > carry) {
      if (ep->login) {
        LoginBytes(ep, buf, got);
      } else if (ep->server) {
        OnServerBytes(ep, buf, got);
      } else {
        OnClientBytes(ep, buf, got);
      }
      if (ep->fd < 0 || ep->closing || ep->stopped) return;
    }
    if (err == SSL_ERROR_NONE) continue;  // the buffer filled up: read on
    if (err == SSL_ERROR_WANT_READ) return;
    if (err == SSL_ERROR_ZERO_RETURN) {
      // close_notify: the client is done, as at EOF.
      Lost(ep, 0);
      return;
    }
    if (tlsErrors_.size() >= 4096) tlsErrors_.clear();
    tlsErrors_[ep->id] = why;
    Lost(ep, kCloseTls);
    return;
  }
}

bool Relay::TlsWrite(Endpoint* ep, const uint8_t* data, size_t len) {
  if (ep->fd < 0) return false;
  if (len == 0) return true;
  if (!ep->tlsReady || !ep->tlsPlainOut.empty()) {
    // Before the handshake ends, or behind bytes OpenSSL asked to have again: they wait, in order.
    ep->tlsPlainOut.append(reinterpret_cast<const char*>(data), len);
    return true;
  }
  ERR_clear_error();
  while (len > 0) {
    const int chunk = len > (1u << 30) ? (1 << 30) : static_cast<int>(len);
    const int r = SSL_write(ep->ssl, data, chunk);
    if (r <= 0) {
      const int err = SSL_get_error(ep->ssl, r);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        // Retried from tlsPlainOut after the next read (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER lets the buffer move).
        ep->tlsPlainOut.append(reinterpret_cast<const char*>(data), len);
        ERR_clear_error();
        break;
      }
      TlsFail(ep);
      return false;
    }
    data += r;
    len -= static_cast<size_t>(r);
  }
  return TlsFlush(ep);
}

bool Relay::TlsFlush(Endpoint* ep) {
  char* p = nullptr;
  const long n = BIO_get_mem_data(ep->wbio, &p);
  if (n <= 0) return ep->fd >= 0;
  const bool ok = RawWrite(ep, reinterpret_cast<const uint8_t*>(p), static_cast<size_t>(n));
  (void)BIO_reset(ep->wbio);
  return ok && ep->fd >= 0;
}

void Relay::TlsFail(Endpoint* ep) {
  std::string why = TakeSslError("TLS error");
  if (tlsErrors_.size() >= 4096) tlsErrors_.clear();
  tlsErrors_[ep->id] = why;
  Lost(ep, kCloseTls);
}

void Relay::TlsShutdown(Endpoint* ep) {
  if (!ep->tlsReady) return;
  if (!ep->tlsPlainOut.empty()) {
    // Whatever SSL_write still owes goes before the close_notify.
    std::string rest;
    rest.swap(ep->tlsPlainOut);
    ERR_clear_error();
    if (SSL_write(ep->ssl, rest.data(), static_cast<int>(rest.size())) <= 0) ERR_clear_error();
  }
  ERR_clear_error();
  SSL_shutdown(ep->ssl);
  ERR_clear_error();
  TlsFlush(ep);
}

}  // namespace relay
}  // namespace tidepool
