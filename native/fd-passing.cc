// Descriptors passed between processes over a Unix socket (SCM_RIGHTS), which Node cannot do between unrelated
// processes: a restarting pooler receives the running one's listening sockets (src/pooler/takeover.ts). The calls are
// synchronous: the sender's socket is non-blocking and its messages are a few hundred bytes, and the receiver (a
// process not yet serving) blocks for at most the timeout given to fdUnixConnect.
//
// A received descriptor refers to the same open socket as the sender's: closing either copy leaves the other
// working (the socket closes with its last descriptor), so a listening socket moves without a moment closed.
#include "fd-passing.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <uv.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace tidepool {
namespace {

/** Descriptors one message may carry (a takeover passes two). */
constexpr int kMaxFds = 16;
/** Bytes one fdReceive reads at most. */
constexpr size_t kMaxBytes = 64 * 1024;

void ThrowErrno(Napi::Env env, const char* what, int err) {
  Napi::Error e = Napi::Error::New(env, std::string(what) + ": " + strerror(err));
  const char* name = err == ENOENT ? "ENOENT" : err == ECONNREFUSED ? "ECONNREFUSED" : err == EAGAIN ? "EAGAIN"
                     : err == EACCES ? "EACCES" : err == ENAMETOOLONG ? "ENAMETOOLONG" : err == EPIPE ? "EPIPE"
                     : err == ECONNRESET ? "ECONNRESET" : err == EBADF ? "EBADF" : err == ENOTSOCK ? "ENOTSOCK" : "EIO";
  e.Set("code", Napi::String::New(env, name));
  e.Set("errno", Napi::Number::New(env, err));
  e.ThrowAsJavaScriptException();
}

bool IsFd(const Napi::Value& v) {
  return v.IsNumber() && v.As<Napi::Number>().Int32Value() >= 0;
}

/** fdUnixConnect(path, timeoutMs) -> descriptor of a blocking, close-on-exec stream socket connected to `path`,
 *  whose reads and writes give up after timeoutMs (EAGAIN). */
Napi::Value FdUnixConnect(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsString() || !info[1].IsNumber()) {
    Napi::TypeError::New(env, "fdUnixConnect(path, timeoutMs)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const std::string path = info[0].As<Napi::String>().Utf8Value();
  sockaddr_un addr;
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    ThrowErrno(env, "connect", ENAMETOOLONG);
    return env.Undefined();
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ThrowErrno(env, "socket", errno);
    return env.Undefined();
  }
  const int64_t ms = info[1].As<Napi::Number>().Int64Value();
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int rc;
  do rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    const int err = errno;
    close(fd);
    ThrowErrno(env, "connect", err);
    return env.Undefined();
  }
  return Napi::Number::New(env, fd);
}

/** fdSend(socket, data: Buffer, fds: number[]) -> bytes sent: one sendmsg carrying `fds` (SCM_RIGHTS) with the
 *  first byte of `data`. Throws when not every byte went (the messages are small: a short send is an error here). */
Napi::Value FdSend(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !IsFd(info[0]) || !info[1].IsBuffer() || !info[2].IsArray()) {
    Napi::TypeError::New(env, "fdSend(socket, data, fds)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int sock = info[0].As<Napi::Number>().Int32Value();
  auto data = info[1].As<Napi::Buffer<uint8_t>>();
  auto list = info[2].As<Napi::Array>();
  if (data.Length() == 0 || list.Length() > static_cast<uint32_t>(kMaxFds)) {
    Napi::RangeError::New(env, "fdSend: data must not be empty, at most 16 descriptors").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  std::vector<int> fds;
  for (uint32_t i = 0; i < list.Length(); i++) {
    Napi::Value v = list.Get(i);
    if (!IsFd(v)) {
      Napi::TypeError::New(env, "fdSend: descriptors must be non-negative integers").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    fds.push_back(v.As<Napi::Number>().Int32Value());
  }
  iovec iov;
  iov.iov_base = data.Data();
  iov.iov_len = data.Length();
  msghdr msg;
  std::memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  if (!fds.empty()) {
    std::memset(control, 0, sizeof control);
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  do n = sendmsg(sock, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  // fdSendSome: a full socket buffer sends nothing (0), a nearly full one part of the bytes (the descriptors went
  // with the first of them); the caller sends the rest later.
  const bool some = info.Data() != nullptr;
  if (some && n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Napi::Number::New(env, 0);
  if (n < 0) {
    ThrowErrno(env, "sendmsg", errno);
    return env.Undefined();
  }
  if (some) return Napi::Number::New(env, static_cast<double>(n));
  if (static_cast<size_t>(n) != data.Length()) {
    ThrowErrno(env, "sendmsg (short)", EAGAIN);
    return env.Undefined();
  }
  return Napi::Number::New(env, static_cast<double>(n));
}

/** fdReceive(socket) -> { data: Buffer, fds: number[] }: one recvmsg (up to 64 KiB), the descriptors that came with
 *  it close-on-exec; data is empty at end of stream. Throws on a truncated descriptor list (after closing what came). */
Napi::Value FdReceive(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !IsFd(info[0])) {
    Napi::TypeError::New(env, "fdReceive(socket)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int sock = info[0].As<Napi::Number>().Int32Value();
  std::vector<uint8_t> buf(kMaxBytes);
  iovec iov;
  iov.iov_base = buf.data();
  iov.iov_len = buf.size();
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  msghdr msg;
  std::memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  // fdReceive(socket, true): nothing there yet is undefined rather than a wait.
  const bool dontWait = info.Length() > 1 && info[1].ToBoolean().Value();
  ssize_t n;
  do n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | (dontWait ? MSG_DONTWAIT : 0));
  while (n < 0 && errno == EINTR);
  if (n < 0 && dontWait && (errno == EAGAIN || errno == EWOULDBLOCK)) return env.Undefined();
  if (n < 0) {
    ThrowErrno(env, "recvmsg", errno);
    return env.Undefined();
  }
  std::vector<int> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; i++) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.push_back(fd);
    }
  }
  if (msg.msg_flags & MSG_CTRUNC) {
    for (int fd : fds) close(fd);
    Napi::Error::New(env, "recvmsg: descriptor list truncated").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("data", Napi::Buffer<uint8_t>::Copy(env, buf.data(), static_cast<size_t>(n)));
  Napi::Array list = Napi::Array::New(env, fds.size());
  for (size_t i = 0; i < fds.size(); i++) list.Set(static_cast<uint32_t>(i), Napi::Number::New(env, fds[i]));
  out.Set("fds", list);
  return out;
}

/** fdPeerUid(socket) -> the user id of the process at the other end of a Unix socket (SO_PEERCRED), -1 if unknown. */
Napi::Value FdPeerUid(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !IsFd(info[0])) {
    Napi::TypeError::New(env, "fdPeerUid(socket)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
#ifdef SO_PEERCRED
  ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(info[0].As<Napi::Number>().Int32Value(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
    return Napi::Number::New(env, static_cast<double>(cred.uid));
  }
#endif
  return Napi::Number::New(env, -1);
}

/** fdClose(fd): closes a descriptor fdUnixConnect or fdReceive gave and nothing else owns. */
Napi::Value FdClose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !IsFd(info[0])) {
    Napi::TypeError::New(env, "fdClose(fd)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  close(info[0].As<Napi::Number>().Int32Value());
  return env.Undefined();
}

/** fdDup(fd) -> a close-on-exec duplicate of `fd` (the same open socket), the caller's to close. */
Napi::Value FdDup(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !IsFd(info[0])) {
    Napi::TypeError::New(env, "fdDup(fd)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int fd = fcntl(info[0].As<Napi::Number>().Int32Value(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) {
    ThrowErrno(env, "dup", errno);
    return env.Undefined();
  }
  return Napi::Number::New(env, fd);
}

/** A descriptor watched for reads on Node's loop (fdWatch): the callback runs when it is readable or hung up. */
struct Watch {
  uv_poll_t poll;
  napi_env env;
  napi_ref callback = nullptr;
};
std::map<int, Watch*> watches;

void OnWatch(uv_poll_t* h, int, int) {
  Watch* w = static_cast<Watch*>(h->data);
  napi_handle_scope scope;
  napi_open_handle_scope(w->env, &scope);
  napi_value cb, global, result;
  napi_get_reference_value(w->env, w->callback, &cb);
  napi_get_global(w->env, &global);
  // make_callback drains the microtask queue afterwards, as any I/O callback into JavaScript does.
  if (napi_make_callback(w->env, nullptr, global, cb, 0, nullptr, &result) != napi_ok) {
    bool pending = false;
    napi_is_exception_pending(w->env, &pending);
    if (pending) {
      napi_value ex;
      napi_get_and_clear_last_exception(w->env, &ex);
      napi_fatal_exception(w->env, ex);
    }
  }
  napi_close_handle_scope(w->env, scope);
}

/** fdWatch(fd, callback): calls `callback` on Node's loop whenever `fd` is readable (or its peer hung up) until
 *  fdUnwatch(fd). The watch keeps the process alive, as an open socket does. */
Napi::Value FdWatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !IsFd(info[0]) || !info[1].IsFunction()) {
    Napi::TypeError::New(env, "fdWatch(fd, callback)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int fd = info[0].As<Napi::Number>().Int32Value();
  if (watches.count(fd)) {
    Napi::Error::New(env, "fdWatch: already watched").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  uv_loop_t* loop = nullptr;
  napi_get_uv_event_loop(env, &loop);
  Watch* w = new Watch();
  w->env = env;
  napi_create_reference(env, info[1], 1, &w->callback);
  if (uv_poll_init(loop, &w->poll, fd) != 0) {
    napi_delete_reference(env, w->callback);
    delete w;
    ThrowErrno(env, "uv_poll_init", EBADF);
    return env.Undefined();
  }
  w->poll.data = w;
  uv_poll_start(&w->poll, UV_READABLE | UV_DISCONNECT, OnWatch);
  watches[fd] = w;
  return env.Undefined();
}

/** fdUnwatch(fd): stops fdWatch's calls (before the descriptor is closed). */
Napi::Value FdUnwatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !IsFd(info[0])) return env.Undefined();
  auto it = watches.find(info[0].As<Napi::Number>().Int32Value());
  if (it == watches.end()) return env.Undefined();
  Watch* w = it->second;
  watches.erase(it);
  uv_poll_stop(&w->poll);
  napi_delete_reference(env, w->callback);
  w->callback = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(&w->poll), [](uv_handle_t* h) { delete static_cast<Watch*>(h->data); });
  return env.Undefined();
}

}  // namespace

void InitFdPassing(Napi::Env env, Napi::Object exports) {
  exports.Set("fdUnixConnect", Napi::Function::New(env, FdUnixConnect, "fdUnixConnect"));
  exports.Set("fdSend", Napi::Function::New(env, FdSend, "fdSend"));
  exports.Set("fdReceive", Napi::Function::New(env, FdReceive, "fdReceive"));
  exports.Set("fdPeerUid", Napi::Function::New(env, FdPeerUid, "fdPeerUid"));
  exports.Set("fdClose", Napi::Function::New(env, FdClose, "fdClose"));
  exports.Set("fdSendSome", Napi::Function::New(env, FdSend, "fdSendSome", reinterpret_cast<void*>(1)));
  exports.Set("fdDup", Napi::Function::New(env, FdDup, "fdDup"));
  exports.Set("fdWatch", Napi::Function::New(env, FdWatch, "fdWatch"));
  exports.Set("fdUnwatch", Napi::Function::New(env, FdUnwatch, "fdUnwatch"));
}

}  // namespace tidepool
