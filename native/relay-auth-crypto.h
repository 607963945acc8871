// Digests, random-free encodings and comparisons the relay's logins need (relay-auth.cc), over OpenSSL's EVP.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <openssl/types.h>

namespace tidepool {
namespace relay {

/** Standard base64 with padding. */
std::string Base64(const uint8_t* p, size_t n);
/** Standard base64 with its padding; false for anything else. */
bool Unbase64(const std::string& s, std::string* out);
/** HMAC-SHA-256 of `data` under a 32-byte key, keyed at each call (HmacKey keys once). */
void Hmac(const uint8_t key[32], const std::string& data, uint8_t out[32]);
void Sha256(const uint8_t* data, size_t n, uint8_t out[32]);
/** The 32 lower-case hex digits of md5(data). */
std::string Md5Hex(const std::string& data);
/** Bytes from OpenSSL's CSPRNG, drawn 4 KiB at a time: RAND_bytes asks getpid() at every call (its fork check),
 *  two system calls a login for a salt and a cancel key. False when OpenSSL could not give any. */
bool RandomBytes(uint8_t* out, size_t n);
/** Equality in time that does not depend on where the bytes differ. */
bool ConstantEqual(const uint8_t* a, const uint8_t* b, size_t n);

/** HMAC-SHA-256 under one 32-byte key (a SCRAM user's StoredKey or ServerKey), keyed once: each Sign starts again
 *  from the keyed state instead of hashing the key's pads anew. Used by one thread at a time (the relay's). */
class HmacKey {
 public:
  explicit HmacKey(const uint8_t key[32]);
  ~HmacKey();
  HmacKey(const HmacKey&) = delete;
  HmacKey& operator=(const HmacKey&) = delete;
  void Sign(const std::string& data, uint8_t out[32]) const;

 private:
  uint8_t key_[32];
  EVP_MAC_CTX* ctx_ = nullptr;  // null: Sign falls back to Hmac
};

}  // namespace relay
}  // namespace tidepool
