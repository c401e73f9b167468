// Out-of-band TCP channel for bootstrap (address exchange, per-size sync), like fabtests'.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace pollfab::apps {

class Oob {
 public:
  ~Oob();
  // Server: listen on port (all addresses) and accept one client (waits up to timeout_s).
  bool serve(uint16_t port, int timeout_s, std::string& err);
  // Client: connect to host:port, retrying for up to timeout_s.
  bool connect(const std::string& host, uint16_t port, int timeout_s, std::string& err);
  bool send_all(const void* buf, size_t len);
  bool recv_all(void* buf, size_t len);
  // Length-prefixed blob.
  bool send_blob(const void* buf, uint32_t len);
  bool recv_blob(void* buf, uint32_t cap, uint32_t& len);
  bool sync();  // both sides exchange one byte
  // True once the peer's next bytes can be read (or the channel closed) within timeout_ms (0:
  // a check). Lets a caller keep a fabric progressing while it waits for the channel.
  bool readable(int timeout_ms);

 private:
  int fd_ = -1;
};

}  // namespace pollfab::apps
