#include "providers/udp/io.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

#include "lib/util/bits.hpp"

namespace pollfab::providers::udp {

using transport::PacketBuf;

std::unique_ptr<UdpIo> UdpIo::open(uint32_t ip, uint16_t port, uint64_t sockbuf_bytes,
                                   std::string& err) {
  std::unique_ptr<UdpIo> io(new UdpIo());
  io->fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (io->fd_ < 0) {
    err = std::string("socket: ") + strerror(errno);
    return nullptr;
  }
  int sz = static_cast<int>(std::min<uint64_t>(sockbuf_bytes, 1u << 30));
  setsockopt(io->fd_, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
  setsockopt(io->fd_, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(ip);
  if (bind(io->fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    char txt[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &a.sin_addr, txt, sizeof txt);
    err = std::string("bind ") + txt + ":" + std::to_string(port) + ": " + strerror(errno) +
          " (udp.iface_ip / udp.port in the config)";
    return nullptr;
  }
  socklen_t len = sizeof a;
  getsockname(io->fd_, reinterpret_cast<sockaddr*>(&a), &len);
  io->ip_ = ip;
  io->port_ = ntohs(a.sin_port);
  io->arena_ = std::make_unique<uint8_t[]>(size_t(kPoolBuffers) * kMaxPacketBytes);
  io->free_.reserve(kPoolBuffers);
  for (uint32_t i = kPoolBuffers; i-- > 0;) io->free_.push_back(io->arena_.get() + size_t(i) * kMaxPacketBytes);
  return io;
}

UdpIo::~UdpIo() {
  if (fd_ >= 0) close(fd_);
}

uint8_t* UdpIo::get() noexcept {
  if (free_.empty()) return nullptr;
  uint8_t* b = free_.back();
  free_.pop_back();
  return b;
}

uint16_t UdpIo::alloc(PacketBuf* out, uint16_t n) noexcept {
  uint16_t i = 0;
  for (; i < n; ++i) {
    uint8_t* b = get();
    if (!b) break;
    out[i] = PacketBuf{};
    out[i].data = b;
    out[i].handle = b;
    out[i].cap = kMaxPacketBytes;
  }
  return i;
}

void UdpIo::free(PacketBuf* pkts, uint16_t n) noexcept {
  for (uint16_t i = 0; i < n; ++i) put(static_cast<uint8_t*>(pkts[i].handle));
}

void UdpIo::resolve(const transport::HostAddr& host, transport::Route& route) noexcept {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  std::memcpy(&a.sin_port, host.bytes + 6, 2);   // big-endian in names and host addresses
  std::memcpy(&a.sin_addr, host.bytes + 8, 4);
  static_assert(sizeof a <= sizeof route.bytes);
  std::memcpy(route.bytes, &a, sizeof a);
}

// Sends n datagrams with one sendmmsg; returns how many the kernel took.
uint16_t UdpIo::send(uint8_t** data, uint32_t* len, const sockaddr_in** to, uint16_t n) noexcept {
  mmsghdr m[64];
  iovec iov[64];
  if (n > 64) n = 64;
  for (uint16_t i = 0; i < n; ++i) {
    iov[i] = {data[i], len[i]};
    m[i] = mmsghdr{};
    m[i].msg_hdr.msg_iov = &iov[i];
    m[i].msg_hdr.msg_iovlen = 1;
    m[i].msg_hdr.msg_name = const_cast<sockaddr_in*>(to[i]);
    m[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
  }
  int r = sendmmsg(fd_, m, n, MSG_DONTWAIT);
  if (r < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS) ++stats_.tx_errors;
    return 0;
  }
  stats_.tx_datagrams += static_cast<uint64_t>(r);
  return static_cast<uint16_t>(r);
}

uint16_t UdpIo::tx_burst(PacketBuf* pkts, uint16_t n) noexcept {
  if (n > 64) n = 64;
  uint8_t* data[64];
  uint32_t len[64];
  const sockaddr_in* to[64];
  for (uint16_t i = 0; i < n; ++i) {
    data[i] = pkts[i].data;
    len[i] = pkts[i].len;
    to[i] = reinterpret_cast<const sockaddr_in*>(pkts[i].route->bytes);
  }
  uint16_t sent = send(data, len, to, n);
  for (uint16_t i = 0; i < sent; ++i) put(static_cast<uint8_t*>(pkts[i].handle));
  return sent;
}

size_t UdpIo::counters(util::Counter* out, size_t max) const noexcept {
  const util::Counter c[] = {
      {"rx_datagrams", stats_.rx_datagrams},
      {"tx_datagrams", stats_.tx_datagrams},
      {"tx_errors", stats_.tx_errors},
  };
  size_t n = std::min(max, std::size(c));
  std::copy(c, c + n, out);
  return n;
}

uint16_t UdpIo::rx_burst(PacketBuf* out, uint16_t n) noexcept {
  if (n > 64) n = 64;
  mmsghdr m[64];
  iovec iov[64];
  sockaddr_in from[64];
  uint8_t* bufs[64];
  uint16_t k = 0;
  for (; k < n; ++k) {
    bufs[k] = get();
    if (!bufs[k]) break;
    iov[k] = {bufs[k], kMaxPacketBytes};
    m[k] = mmsghdr{};
    m[k].msg_hdr.msg_iov = &iov[k];
    m[k].msg_hdr.msg_iovlen = 1;
    m[k].msg_hdr.msg_name = &from[k];
    m[k].msg_hdr.msg_namelen = sizeof from[k];
  }
  if (k == 0) return 0;
  int r = recvmmsg(fd_, m, k, MSG_DONTWAIT, nullptr);
  int got = r < 0 ? 0 : r;
  for (int i = got; i < k; ++i) put(bufs[i]);
  for (int i = 0; i < got; ++i) {
    out[i] = PacketBuf{};
    out[i].data = bufs[i];
    out[i].handle = bufs[i];
    out[i].len = m[i].msg_len;
    // port at bytes 6-7, address at 8-11, composed in registers: one store (store_host)
    transport::store_host(out[i].src, uint64_t(from[i].sin_port) << 48, from[i].sin_addr.s_addr);
  }
  stats_.rx_datagrams += static_cast<uint64_t>(got);
  return static_cast<uint16_t>(got);
}

}  // namespace pollfab::providers::udp
