// N-API bindings of the relay's TLS (relay-tls.cc): OpenSSL contexts from PEM bytes, clients handed over for their
// handshake and login, the login's end (relayAdopt), and what a handshake established.
#include <errno.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstring>
#include <string>

#include "relay-engine.h"
#include "relay-auth.h"
#include "relay-napi.h"
#include "relay-tls.h"

namespace tidepool {

namespace {

using relay::Endpoint;
using relay::Relay;

void FreeContext(Napi::Env, SSL_CTX* ctx) { SSL_CTX_free(ctx); }

/** ALPN: "postgresql" when the client offers it; a client offering only other protocols is refused, as PostgreSQL
 *  does (one that offers none never gets here, and direct TLS then refuses it at its startup packet). */
int SelectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen, void*) {
  static const unsigned char kPostgresql[] = {10, 'p', 'o', 's', 't', 'g', 'r', 'e', 's', 'q', 'l'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kPostgresql, sizeof kPostgresql, in, inlen) == OPENSSL_NPN_NEGOTIATED) {
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/** The verdict is read after the handshake (SSL_get_verify_result), as Node's rejectUnauthorized: false does. */
int AcceptAnyCertificate(int, X509_STORE_CTX*) { return 1; }

bool Bytes(const Napi::Value& v, std::string* out) {
  uint8_t* data = nullptr;
  size_t len = 0;
  if (!Typed(v, napi_uint8_array, &data, &len)) return false;
  out->assign(reinterpret_cast<const char*>(data), len);
  return true;
}

/** relayTlsContext({ key, cert, ca?, minVersion, maxVersion, cipherList, cipherSuites }) -> context (an external).
 *  PEM bytes as Uint8Array; versions as TLS1_x_VERSION numbers; the cipher strings split as Node splits `ciphers`.
 *  Throws with OpenSSL's reason. */
Napi::Value RelayTlsContext(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsObject()) {
    Napi::TypeError::New(env, "relayTlsContext(options)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Object o = info[0].As<Napi::Object>();
  std::string key, cert, ca;
  if (!Bytes(o.Get("key"), &key) || !Bytes(o.Get("cert"), &cert)) {
    Napi::TypeError::New(env, "relayTlsContext: key and cert must be Uint8Array").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const bool hasCa = Bytes(o.Get("ca"), &ca) && !ca.empty();
  const int minVersion = o.Get("minVersion").ToNumber().Int32Value();
  const int maxVersion = o.Get("maxVersion").ToNumber().Int32Value();
  const std::string cipherList = o.Get("cipherList").ToString().Utf8Value();
  const std::string cipherSuites = o.Get("cipherSuites").ToString().Utf8Value();

  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  auto fail = [&](const char* what) -> Napi::Value {
    std::string why = relay::TakeSslError("unknown error");
    if (ctx) SSL_CTX_free(ctx);
    Napi::Error::New(env, std::string(what) + ": " + why).ThrowAsJavaScriptException();
    return env.Undefined();
  };
  if (!ctx) return fail("SSL_CTX_new");
  // As PostgreSQL: no renegotiation, no session tickets or cache (a pooler's clients keep their connections).
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if ((minVersion && !SSL_CTX_set_min_proto_version(ctx, minVersion)) || (maxVersion && !SSL_CTX_set_max_proto_version(ctx, maxVersion))) return fail("protocol versions");
  if (!cipherList.empty() && !SSL_CTX_set_cipher_list(ctx, cipherList.c_str())) return fail("ciphers");
  if (!SSL_CTX_set_ciphersuites(ctx, cipherSuites.c_str())) return fail("TLS 1.3 cipher suites");

  BIO* certBio = BIO_new_mem_buf(cert.data(), static_cast<int>(cert.size()));
  X509* leaf = PEM_read_bio_X509_AUX(certBio, nullptr, nullptr, nullptr);
  if (!leaf || SSL_CTX_use_certificate(ctx, leaf) != 1) {
    if (leaf) X509_free(leaf);
    BIO_free(certBio);
    return fail("certificate");
  }
  X509_free(leaf);
  // The rest of the file is the chain sent with the certificate.
  while (X509* extra = PEM_read_bio_X509(certBio, nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add0_chain_cert(ctx, extra) != 1) {
      X509_free(extra);
      BIO_free(certBio);
      return fail("certificate chain");
    }
  }
  BIO_free(certBio);
  ERR_clear_error();  // the end of the PEM file reads as an error

  BIO* keyBio = BIO_new_mem_buf(key.data(), static_cast<int>(key.size()));
  EVP_PKEY* pkey = PEM_read_bio_PrivateKey(keyBio, nullptr, nullptr, nullptr);
  BIO_free(keyBio);
  if (!pkey || SSL_CTX_use_PrivateKey(ctx, pkey) != 1) {
    if (pkey) EVP_PKEY_free(pkey);
    return fail("private key");
  }
  EVP_PKEY_free(pkey);
  if (SSL_CTX_check_private_key(ctx) != 1) return fail("private key");

  if (hasCa) {
    // Client certificates chain to these (and only these), and their names are sent in the CertificateRequest.
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    BIO* caBio = BIO_new_mem_buf(ca.data(), static_cast<int>(ca.size()));
    int added = 0;
    while (X509* c = PEM_read_bio_X509(caBio, nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(store, c);
      SSL_CTX_add_client_CA(ctx, c);
      X509_free(c);
      added++;
    }
    BIO_free(caBio);
    ERR_clear_error();
    if (added == 0) {
      SSL_CTX_free(ctx);
      Napi::Error::New(env, "CA certificates: no certificate found").ThrowAsJavaScriptException();
      return env.Undefined();
    }
  }
  SSL_CTX_set_alpn_select_cb(ctx, SelectAlpn, nullptr);
  ERR_clear_error();
  return Napi::External<SSL_CTX>::New(env, ctx, FreeContext);
}

/** An OpenSSL server session on memory BIOs for `c` under `ctx`; false (and nothing changed) when OpenSSL cannot
 *  make one (`why` says why). */
bool StartTlsSession(Endpoint* c, SSL_CTX* ctx, bool askCertificate, std::string* why) {
  ERR_clear_error();
  SSL* ssl = SSL_new(ctx);
  BIO* rbio = BIO_new(BIO_s_mem());
  BIO* wbio = BIO_new(BIO_s_mem());
  if (!ssl || !rbio || !wbio) {
    if (ssl) SSL_free(ssl);
    if (rbio) BIO_free(rbio);
    if (wbio) BIO_free(wbio);
    *why = relay::TakeSslError("out of memory");
    return false;
  }
  SSL_set_bio(ssl, rbio, wbio);
  SSL_set_accept_state(ssl);
  if (askCertificate) SSL_set_verify(ssl, SSL_VERIFY_PEER, AcceptAnyCertificate);
  c->ssl = ssl;
  c->rbio = rbio;
  c->wbio = wbio;
  c->login = true;
  return true;
}

/** Ciphertext JavaScript read before the handoff (info[at], a Uint8Array), then what the relay held for it. */
void IngestInitial(Relay* r, Endpoint* c, const Napi::CallbackInfo& info, size_t at) {
  std::string first;
  uint8_t* data = nullptr;
  size_t len = 0;
  if (info.Length() > at && Typed(info[at], napi_uint8_array, &data, &len) && len > 0) first.assign(reinterpret_cast<const char*>(data), len);
  first.append(c->interceptIn);
  c->interceptIn.clear();
  c->dataQueued = false;
  if (!first.empty()) r->TlsIngest(c, reinterpret_cast<const uint8_t*>(first.data()), first.size());
}

/** relayAddTlsClient(fd, context, askCertificate, initial?: Uint8Array) -> id: a client in login mode whose handshake
 *  the relay runs (initial: ciphertext JavaScript already read). The fd is duplicated. */
Napi::Value RelayAddTlsClient(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  if (info.Length() < 3 || !info[0].IsNumber() || !info[1].IsExternal()) {
    Napi::TypeError::New(env, "relayAddTlsClient(fd, context, askCertificate, initial?)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  SSL_CTX* ctx = info[1].As<Napi::External<SSL_CTX>>().Data();
  const int fd = DupFd(info[0]);
  if (fd < 0) {
    Napi::Error::New(env, std::string("dup: ") + strerror(errno)).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Endpoint* c = r->Add(fd, false);
  std::string why;
  if (!StartTlsSession(c, ctx, info[2].ToBoolean().Value(), &why)) {
    r->Destroy(c);
    Napi::Error::New(env, "TLS session: " + why).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int32_t id = c->id;
  IngestInitial(r, c, info, 3);
  return Napi::Number::New(env, id);
}

/** relayStartTls(id, context, askCertificate, initial?: Uint8Array) -> false when gone: a plaintext client in login
 *  (accepted on the relay's listener) starts its TLS handshake after the pooler's 'S', or at a direct TLS hello whose
 *  first bytes JavaScript took (`initial`). Throws when OpenSSL cannot make a session. */
Napi::Value RelayStartTls(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  if (info.Length() < 3 || !info[0].IsNumber() || !info[1].IsExternal()) {
    Napi::TypeError::New(env, "relayStartTls(id, context, askCertificate, initial?)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Endpoint* c = r->Find(info[0].As<Napi::Number>().Int32Value());
  if (!c || c->dead || c->server || !c->login || c->ssl || c->fd < 0) return Napi::Boolean::New(env, false);
  std::string why;
  if (!StartTlsSession(c, info[1].As<Napi::External<SSL_CTX>>().Data(), info[2].ToBoolean().Value(), &why)) {
    Napi::Error::New(env, "TLS session: " + why).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  IngestInitial(r, c, info, 3);
  return Napi::Boolean::New(env, true);
}

/** relayAdopt(id, stats: Float64Array, maxMessage, initial?: Uint8Array, divert?: boolean, app?: Float64Array(8), pinMask?) ->
 *  false when gone: the login is over and the endpoint becomes a relayed client, as relayAddClient makes one. Bytes
 *  JavaScript has not taken yet follow `initial`. */
Napi::Value RelayAdopt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  relay::ClientOptions opts;
  if (!info[0].IsNumber() || !ReadClientOptions(info, &opts)) {
    Napi::TypeError::New(env, "relayAdopt(id, Float64Array, maxMessage, initial?, divert?, app?, pinMask?)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Endpoint* c = r->Find(info[0].As<Napi::Number>().Int32Value());
  if (!c || c->dead || c->server || !c->login || c->fd < 0) return Napi::Boolean::New(env, false);
  c->login = false;
  if (c->exchange) {
    relay::DeleteExchange(c->exchange);
    c->exchange = nullptr;
  }
  ApplyClientOptions(info, r, c, opts);
  std::string first;
  uint8_t* data = nullptr;
  size_t len = 0;
  if (info.Length() > 3 && Typed(info[3], napi_uint8_array, &data, &len)) first.assign(reinterpret_cast<const char*>(data), len);
  first.append(c->interceptIn);
  c->interceptIn.clear();
  c->dataQueued = false;
  r->UpdatePoll(c);
  if (!first.empty()) r->OnClientBytes(c, reinterpret_cast<const uint8_t*>(first.data()), first.size());
  return Napi::Boolean::New(env, true);
}

/** Node's names for certificate verification errors (crypto_common.cc), so both relays report the same words. */
const char* VerifyErrorName(long code) {
  switch (code) {
#define NODE_NAME(x) \
  case X509_V_ERR_##x: \
    return #x;
    NODE_NAME(UNABLE_TO_GET_ISSUER_CERT)
    NODE_NAME(UNABLE_TO_GET_CRL)
    NODE_NAME(UNABLE_TO_DECRYPT_CERT_SIGNATURE)
    NODE_NAME(UNABLE_TO_DECRYPT_CRL_SIGNATURE)
    NODE_NAME(UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY)
    NODE_NAME(CERT_SIGNATURE_FAILURE)
    NODE_NAME(CRL_SIGNATURE_FAILURE)
    NODE_NAME(CERT_NOT_YET_VALID)
    NODE_NAME(CERT_HAS_EXPIRED)
    NODE_NAME(CRL_NOT_YET_VALID)
    NODE_NAME(CRL_HAS_EXPIRED)
    NODE_NAME(ERROR_IN_CERT_NOT_BEFORE_FIELD)
    NODE_NAME(ERROR_IN_CERT_NOT_AFTER_FIELD)
    NODE_NAME(ERROR_IN_CRL_LAST_UPDATE_FIELD)
    NODE_NAME(ERROR_IN_CRL_NEXT_UPDATE_FIELD)
    NODE_NAME(OUT_OF_MEM)
    NODE_NAME(DEPTH_ZERO_SELF_SIGNED_CERT)
    NODE_NAME(SELF_SIGNED_CERT_IN_CHAIN)
    NODE_NAME(UNABLE_TO_GET_ISSUER_CERT_LOCALLY)
    NODE_NAME(UNABLE_TO_VERIFY_LEAF_SIGNATURE)
    NODE_NAME(CERT_CHAIN_TOO_LONG)
    NODE_NAME(CERT_REVOKED)
    NODE_NAME(INVALID_CA)
    NODE_NAME(PATH_LENGTH_EXCEEDED)
    NODE_NAME(INVALID_PURPOSE)
    NODE_NAME(CERT_UNTRUSTED)
    NODE_NAME(CERT_REJECTED)
    NODE_NAME(HOSTNAME_MISMATCH)
#undef NODE_NAME
    default:
      return nullptr;
  }
}

/** relayTlsInfo(id) -> { protocol, cipher, alpn, commonName, verifyError } or null: what the handshake established
 *  (verifyError: '' when the client's certificate verified, else why; commonName '' without a certificate). */
Napi::Value RelayTlsInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  Endpoint* c = r->Find(info[0].As<Napi::Number>().Int32Value());
  if (!c || !c->ssl || !c->tlsReady) return env.Null();
  SSL* ssl = c->ssl;
  Napi::Object out = Napi::Object::New(env);
  out.Set("protocol", SSL_get_version(ssl));
  const SSL_CIPHER* cipher = SSL_get_current_cipher(ssl);
  const char* standard = cipher ? SSL_CIPHER_standard_name(cipher) : nullptr;
  out.Set("cipher", standard ? standard : cipher ? SSL_CIPHER_get_name(cipher) : "");
  const unsigned char* alpn = nullptr;
  unsigned int alpnLen = 0;
  SSL_get0_alpn_selected(ssl, &alpn, &alpnLen);
  out.Set("alpn", std::string(reinterpret_cast<const char*>(alpn ? alpn : reinterpret_cast<const unsigned char*>("")), alpnLen));
  std::string cn;
  std::string verifyError;
  X509* peer = SSL_get1_peer_certificate(ssl);
  if (peer) {
    X509_NAME* subject = X509_get_subject_name(peer);
    const int at = subject ? X509_NAME_get_index_by_NID(subject, NID_commonName, -1) : -1;
    if (at >= 0) {
      ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, at));
      unsigned char* utf8 = nullptr;
      const int n = ASN1_STRING_to_UTF8(&utf8, data);
      if (n >= 0 && utf8) cn.assign(reinterpret_cast<const char*>(utf8), static_cast<size_t>(n));
      if (utf8) OPENSSL_free(utf8);
    }
    const long result = SSL_get_verify_result(ssl);
    if (result != X509_V_OK) {
      const char* name = VerifyErrorName(result);
      verifyError = name ? name : X509_verify_cert_error_string(result);
    }
    X509_free(peer);
  } else {
    verifyError = "no certificate";
  }
  ERR_clear_error();
  out.Set("commonName", cn);
  out.Set("verifyError", verifyError);
  return out;
}

/** relayTlsError(id) -> why OpenSSL refused the client that closed with reason 3, once ('' when unknown). */
Napi::Value RelayTlsError(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  const int32_t id = info[0].As<Napi::Number>().Int32Value();
  auto it = r->tlsErrors_.find(id);
  if (it == r->tlsErrors_.end()) return Napi::String::New(env, "");
  Napi::String s = Napi::String::New(env, it->second);
  r->tlsErrors_.erase(it);
  return s;
}

}  // namespace

void InitRelayTls(Napi::Env env, Napi::Object exports) {
  exports.Set("relayTlsContext", Napi::Function::New(env, RelayTlsContext, "relayTlsContext"));
  exports.Set("relayAddTlsClient", Napi::Function::New(env, RelayAddTlsClient, "relayAddTlsClient"));
  exports.Set("relayStartTls", Napi::Function::New(env, RelayStartTls, "relayStartTls"));
  exports.Set("relayAdopt", Napi::Function::New(env, RelayAdopt, "relayAdopt"));
  exports.Set("relayTlsInfo", Napi::Function::New(env, RelayTlsInfo, "relayTlsInfo"));
  exports.Set("relayTlsError", Napi::Function::New(env, RelayTlsError, "relayTlsError"));
}

}  // namespace tidepool
