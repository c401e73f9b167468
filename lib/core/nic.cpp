#include "lib/core/nic.hpp"

#include <cstring>
#include <new>  // std::bad_alloc

#include <fmt/format.h>

#include "lib/core/fid.hpp"
#include "lib/core/ops_fid.hpp"

namespace pollfab::core {

namespace {

char* c_str_or_null(std::string& s) noexcept { return s.empty() ? nullptr : s.data(); }

const char* text(const char* s) noexcept { return s ? s : "(null)"; }

const char* link_state_text(fi_link_state s) noexcept {
  switch (s) {
    case FI_LINK_UNKNOWN: return "FI_LINK_UNKNOWN";
    case FI_LINK_DOWN: return "FI_LINK_DOWN";
    case FI_LINK_UP: return "FI_LINK_UP";
  }
  return "Unknown";
}

class Nic final : public Object {
 public:
  explicit Nic(const NicDesc& d) : d_(d) {
    init_fid(box_, FI_CLASS_NIC, nullptr, &ops_fid<Nic>);
    dev_.name = c_str_or_null(d_.name);
    dev_.device_id = c_str_or_null(d_.device_id);
    dev_.device_version = c_str_or_null(d_.device_version);
    dev_.vendor_id = c_str_or_null(d_.vendor_id);
    dev_.driver = c_str_or_null(d_.driver);
    dev_.firmware = c_str_or_null(d_.firmware);
    bus_.bus_type = d_.bus_type;
    if (d_.bus_type == FI_BUS_PCI) bus_.attr.pci = d_.pci;
    link_.address = c_str_or_null(d_.address);
    link_.mtu = d_.mtu;
    link_.speed = d_.speed;
    link_.state = d_.state;
    link_.network_type = c_str_or_null(d_.network_type);
    box_.fid.device_attr = &dev_;
    box_.fid.bus_attr = &bus_;
    box_.fid.link_attr = &link_;
  }
  fid_nic* fid() noexcept { return &box_.fid; }

  int close() {
    delete this;
    return 0;
  }
  int control(int command, void* arg) {
    if (command != FI_DUP) return -FI_ENOSYS;
    if (!arg) return -FI_EINVAL;
    fid_nic* copy = make_nic(d_);
    if (!copy) return -FI_ENOMEM;
    *static_cast<fid_nic**>(arg) = copy;
    return 0;
  }
  int tostr(char* buf, size_t len) const {
    if (!buf || !len) return -FI_EINVAL;
    const size_t used = strlen(buf);  // buf holds a NUL-terminated string; len bytes follow it
    std::string s = "    nic:\n";
    const char* in = "            ";
    s += fmt::format("        fi_device_attr:\n{0}name: {1}\n{0}device_id: {2}\n"
                     "{0}device_version: {3}\n{0}vendor_id: {4}\n{0}driver: {5}\n"
                     "{0}firmware: {6}\n",
                     in, text(dev_.name), text(dev_.device_id), text(dev_.device_version),
                     text(dev_.vendor_id), text(dev_.driver), text(dev_.firmware));
    s += "        fi_bus_attr:\n";
    if (bus_.bus_type == FI_BUS_PCI) {
      const fi_pci_attr& p = bus_.attr.pci;
      s += fmt::format("{0}bus_type: FI_BUS_PCI\n{0}fi_pci_attr:\n{0}    domain_id: {1}\n"
                       "{0}    bus_id: {2}\n{0}    device_id: {3}\n{0}    function_id: {4}\n",
                       in, p.domain_id, p.bus_id, p.device_id, p.function_id);
    } else {
      s += fmt::format("{}bus_type: FI_BUS_UNKNOWN\n", in);
    }
    s += fmt::format("        fi_link_attr:\n{0}address: {1}\n{0}mtu: {2}\n{0}speed: {3}\n"
                     "{0}state: {4}\n{0}network_type: {5}\n",
                     in, text(link_.address), link_.mtu, link_.speed,
                     link_state_text(link_.state), text(link_.network_type));
    // Appends what fits; the result stays NUL-terminated (fi_tostr truncates likewise).
    const size_t n = s.size() < len - 1 ? s.size() : len - 1;
    memcpy(buf + used, s.data(), n);
    buf[used + n] = '\0';
    return 0;
  }

 private:
  NicDesc d_;  // owns the strings the attribute structs point into
  fi_device_attr dev_{};
  fi_bus_attr bus_{};
  fi_link_attr link_{};
  FidBox<fid_nic> box_;
};

}  // namespace

fid_nic* make_nic(const NicDesc& d) noexcept {
  try {
    return (new Nic(d))->fid();
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

}  // namespace pollfab::core
