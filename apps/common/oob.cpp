#include "apps/common/oob.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace pollfab::apps {

Oob::~Oob() {
  if (fd_ >= 0) close(fd_);
}

bool Oob::serve(uint16_t port, int timeout_s, std::string& err) {
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l < 0) { err = strerror(errno); return false; }
  int one = 1;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(l, 1) != 0) {
    err = std::string("bind/listen on port ") + std::to_string(port) + ": " + strerror(errno);
    close(l);
    return false;
  }
  pollfd p{l, POLLIN, 0};
  if (poll(&p, 1, timeout_s * 1000) != 1) {
    err = "no client connected within " + std::to_string(timeout_s) + " s";
    close(l);
    return false;
  }
  fd_ = accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
  close(l);
  if (fd_ < 0) { err = strerror(errno); return false; }
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return true;
}

bool Oob::connect(const std::string& host, uint16_t port, int timeout_s, std::string& err) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res) {
    err = "cannot resolve " + host;
    return false;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ >= 0 && ::connect(fd_, res->ai_addr, res->ai_addrlen) == 0) break;
    err = host + ":" + std::to_string(port) + ": " + strerror(errno);
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    if (std::chrono::steady_clock::now() > deadline) {
      freeaddrinfo(res);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  freeaddrinfo(res);
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return true;
}

bool Oob::send_all(const void* buf, size_t len) {
  auto* p = static_cast<const char*>(buf);
  while (len) {
    ssize_t n = send(fd_, p, len, MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

bool Oob::recv_all(void* buf, size_t len) {
  auto* p = static_cast<char*>(buf);
  while (len) {
    ssize_t n = recv(fd_, p, len, 0);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

bool Oob::send_blob(const void* buf, uint32_t len) {
  uint32_t be = htonl(len);
  return send_all(&be, 4) && send_all(buf, len);
}

bool Oob::recv_blob(void* buf, uint32_t cap, uint32_t& len) {
  uint32_t be;
  if (!recv_all(&be, 4)) return false;
  len = ntohl(be);
  return len <= cap && recv_all(buf, len);
}

bool Oob::readable(int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1;
}

bool Oob::sync() {
  char c = 's';
  return send_all(&c, 1) && recv_all(&c, 1);
}

}  // namespace pollfab::apps
