// The login digests and encodings of relay-auth-crypto.h: base64, HMAC-SHA-256, SHA-256, md5 over OpenSSL's EVP.
#include "relay-auth-crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
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

namespace {

/** SHA-256 and MD5 fetched once per thread, and one digest context reused. OpenSSL 3 looks an algorithm up by name
 *  (under locks, in hash tables) at every EVP_Digest with EVP_sha256()/EVP_md5(), and makes a new context each time:
 *  under pgbench -C those lookups were a tenth of the relay's own CPU a login. A null member (the algorithm not
 *  available from the default provider) falls back to those calls. */
struct Digests {
  EVP_MD* sha256 = EVP_MD_fetch(nullptr, "SHA2-256", nullptr);
  EVP_MD* md5 = EVP_MD_fetch(nullptr, "MD5", nullptr);
  EVP_MD_CTX* md = EVP_MD_CTX_new();

  Digests() = default;
  ~Digests() {
    EVP_MD_CTX_free(md);
    EVP_MD_free(md5);
    EVP_MD_free(sha256);
  }
  Digests(const Digests&) = delete;
  Digests& operator=(const Digests&) = delete;
};

Digests& ThreadDigests() {
  thread_local Digests d;
  return d;
}

/** One digest of `data` with a fetched `md` on the thread's context; false to fall back. */
bool Digest(EVP_MD* md, const void* data, size_t n, uint8_t* out) {
  EVP_MD_CTX* ctx = ThreadDigests().md;
  return md && ctx && EVP_DigestInit_ex2(ctx, md, nullptr) == 1 && EVP_DigestUpdate(ctx, data, n) == 1 &&
         EVP_DigestFinal_ex(ctx, out, nullptr) == 1;
}

}  // namespace

void Hmac(const uint8_t key[32], const std::string& data, uint8_t out[32]) {
  unsigned int len = 32;
  HMAC(EVP_sha256(), key, 32, reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
}

HmacKey::HmacKey(const uint8_t key[32]) {
  std::memcpy(key_, key, 32);
  // Once per user and table (relayAuthSet): HMAC and its digest are looked up here, not at each Sign.
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (!mac) return;
  ctx_ = EVP_MAC_CTX_new(mac);
  EVP_MAC_free(mac);
  char digest[] = "SHA2-256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0), OSSL_PARAM_construct_end()};
  if (ctx_ && (EVP_MAC_CTX_set_params(ctx_, params) != 1 || EVP_MAC_init(ctx_, key_, 32, nullptr) != 1)) {
    EVP_MAC_CTX_free(ctx_);
    ctx_ = nullptr;
  }
}

HmacKey::~HmacKey() {
  EVP_MAC_CTX_free(ctx_);
  OPENSSL_cleanse(key_, sizeof key_);
}

void HmacKey::Sign(const std::string& data, uint8_t out[32]) const {
  size_t len = 0;
  // A null key restarts HMAC from the key it has (hmac_init: HMAC_Init_ex with no key).
  if (ctx_ && EVP_MAC_init(ctx_, nullptr, 0, nullptr) == 1 && EVP_MAC_update(ctx_, reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1 &&
      EVP_MAC_final(ctx_, out, &len, 32) == 1 && len == 32) {
    return;
  }
  Hmac(key_, data, out);
}

void Sha256(const uint8_t* data, size_t n, uint8_t out[32]) {
  if (Digest(ThreadDigests().sha256, data, n, out)) return;
  unsigned int len = 32;
  EVP_Digest(data, n, out, &len, EVP_sha256(), nullptr);
}

std::string Md5Hex(const std::string& data) {
  uint8_t d[16];
  if (!Digest(ThreadDigests().md5, data.data(), data.size(), d)) {
    unsigned int len = 16;
    EVP_Digest(data.data(), data.size(), d, &len, EVP_md5(), nullptr);
  }
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
