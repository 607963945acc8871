// The login digests and encodings of relay-auth-crypto.h: base64, HMAC-SHA-256, SHA-256, md5 over OpenSSL's EVP.
#include "relay-auth-crypto.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>

namespace tidepool {
namespace relay {

namespace {

const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int B64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

bool RandomBytes(uint8_t* out, size_t n) {
  // Per thread, and never shared with a forked child: the relay runs on the main thread of a process that does not fork.
  thread_local uint8_t pool[4096];
  thread_local size_t left = 0;
  while (n > 0) {
    if (left == 0) {
      if (RAND_bytes(pool, sizeof pool) != 1) return false;
      left = sizeof pool;
    }
    const size_t take = n < left ? n : left;
    uint8_t* from = pool + sizeof pool - left;
    std::memcpy(out, from, take);
    // Handed-out bytes are not kept.
    std::memset(from, 0, take);
    left -= take;
    out += take;
    n -= take;
  }
  return true;
}

std::string Base64(const uint8_t* p, size_t n) {
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = (p[i] << 16) | (i + 1 < n ? p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += i + 1 < n ? kB64[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kB64[v & 63] : '=';
  }
  return out;
}


/** Standard base64 with its padding; false for anything else. */
bool Unbase64(const std::string& s, std::string* out) {
  if (s.size() % 4 != 0) return false;
  out->clear();
  for (size_t i = 0; i < s.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; k++) {
      const char c = s[i + k];
      if (c == '=' && i + 4 == s.size() && k >= 2) {
        pad++;
        v[k] = 0;
        continue;
      }
      if (pad) return false;
      v[k] = B64Value(c);
      if (v[k] < 0) return false;
    }
    const uint32_t x = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out->push_back(static_cast<char>(x >> 16));
    if (pad < 2) out->push_back(static_cast<char>((x >> 8) & 0xff));
    if (pad < 1) out->push_back(static_cast<char>(x & 0xff));
  }
  return true;
}

void Hmac(const uint8_t key[32], const std::string& data, uint8_t out[32]) {
  unsigned int len = 32;
  HMAC(EVP_sha256(), key, 32, reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
}

void Sha256(const uint8_t* data, size_t n, uint8_t out[32]) {
  unsigned int len = 32;
  EVP_Digest(data, n, out, &len, EVP_sha256(), nullptr);
}

std::string Md5Hex(const std::string& data) {
  uint8_t d[16];
  unsigned int len = 16;
  EVP_Digest(data.data(), data.size(), d, &len, EVP_md5(), nullptr);
  static const char hex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; i++) {
    out[2 * i] = hex[d[i] >> 4];
    out[2 * i + 1] = hex[d[i] & 15];
  }
  return out;
}

bool ConstantEqual(const uint8_t* a, const uint8_t* b, size_t n) {
  uint8_t diff = 0;
  for (size_t i = 0; i < n; i++) diff |= a[i] ^ b[i];
  return diff == 0;
}

}  // namespace relay
}  // namespace tidepool
