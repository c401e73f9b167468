// net_memif helpers (dpdk_glue/memif.hpp): vdev parsing, stale socket removal, prefaulting the
// shared regions. No EAL needed.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dpdk_glue/memif.hpp"

using namespace pollfab::dpdk_glue;

TEST(MemifVdev, ParsesRoleSocketAndAbstract) {
  std::string name, role, sock;
  bool abstract = false;
  ASSERT_TRUE(parse_memif_vdev("net_memif0,role=server,id=0,socket-abstract=no,socket=/run/x.sock",
                               name, role, sock, abstract));
  EXPECT_EQ(name, "net_memif0");
  EXPECT_EQ(role, "server");
  EXPECT_EQ(sock, "/run/x.sock");
  EXPECT_FALSE(abstract);
  ASSERT_TRUE(parse_memif_vdev("net_memif3", name, role, sock, abstract));
  EXPECT_EQ(name, "net_memif3");
  EXPECT_EQ(role, "client");  // DPDK's default
  EXPECT_TRUE(sock.empty());
  EXPECT_TRUE(abstract);
  EXPECT_FALSE(parse_memif_vdev("net_tap0,iface=pftap0", name, role, sock, abstract));
  EXPECT_EQ(vdev_for({"net_tap0,iface=a", "net_memif1,role=client"}, "net_memif1"),
            "net_memif1,role=client");
  EXPECT_EQ(vdev_for({"net_tap0,iface=a"}, "net_memif1"), "");
}

namespace {
struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/pollfab-memif-XXXXXX";
    path = mkdtemp(t);
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
};

int bind_unix(const std::string& path, bool listen_too) {
  int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strcpy(sa.sun_path, path.c_str());
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  if (listen_too) {
    EXPECT_EQ(listen(fd, 1), 0);
  }
  return fd;
}

bool exists(const std::string& p) {
  struct stat st{};
  return lstat(p.c_str(), &st) == 0;
}
}  // namespace

TEST(MemifSocket, RemovesOnlyStaleServerSockets) {
  TempDir d;
  const std::string stale = d.path + "/stale.sock", live = d.path + "/live.sock",
                    client = d.path + "/client.sock", plain = d.path + "/plain";
  close(bind_unix(stale, false));  // a killed server's leftover: nobody listens
  int live_fd = bind_unix(live, true);
  close(bind_unix(client, false));
  { FILE* f = fopen(plain.c_str(), "w"); fclose(f); }
  auto removed = remove_stale_memif_sockets({
      "net_memif0,role=server,socket-abstract=no,socket=" + stale,
      "net_memif1,role=server,socket-abstract=no,socket=" + live,
      "net_memif2,role=client,socket-abstract=no,socket=" + client,  // clients never remove
      "net_memif3,role=server,socket-abstract=no,socket=" + plain,   // not a socket
      "net_memif4,role=server,socket=" + d.path + "/abstract",      // abstract namespace
  });
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0], stale);
  EXPECT_FALSE(exists(stale));
  EXPECT_TRUE(exists(live));
  EXPECT_TRUE(exists(client));
  EXPECT_TRUE(exists(plain));
  close(live_fd);
}

// A region as memif makes one (memfd "memif_region_N", mapped shared and writable): after
// prefault_memif_regions() touching every page takes no page fault in this thread, what was
// written is unchanged, and the call reports at least the region's bytes. A private mapping of
// a region (not what memif does) is left alone: touching it still faults.
TEST(MemifRegions, PrefaultMapsEveryPageInAndKeepsTheContents) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t pages = 64, len = pages * page;
  {  // Linux before 5.14 has no MADV_POPULATE_WRITE: the prefault is a no-op there (memif.hpp)
    void* probe = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(probe, MAP_FAILED);
    const bool supported = madvise(probe, page, 23 /* MADV_POPULATE_WRITE */) == 0;
    munmap(probe, page);
    if (!supported) GTEST_SKIP() << "kernel without MADV_POPULATE_WRITE (Linux < 5.14)";
  }
  auto region = [&](const char* name, int flags) {
    const int fd = memfd_create(name, MFD_CLOEXEC);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(len)), 0);
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, flags, fd, 0);
    close(fd);  // the mapping keeps the memfd
    EXPECT_NE(p, MAP_FAILED);
    return static_cast<uint8_t*>(p);
  };
  uint8_t* shared = region("memif_region_7", MAP_SHARED);
  uint8_t* priv = region("memif_region_8", MAP_PRIVATE);
  shared[0] = 0x5a;  // one slot in use, as a ring's first
  shared[len - 1] = 0xa5;
  auto faults_touching = [&](uint8_t* p) {  // minor faults of this thread writing every page
    rusage before{}, after{};
    getrusage(RUSAGE_THREAD, &before);
    for (size_t off = page / 2; off < len; off += page) *reinterpret_cast<volatile uint8_t*>(p + off) = 1;
    getrusage(RUSAGE_THREAD, &after);
    return after.ru_minflt - before.ru_minflt;
  };
  EXPECT_GE(prefault_memif_regions(), len);
  EXPECT_EQ(shared[0], 0x5a);
  EXPECT_EQ(shared[len - 1], 0xa5);
  EXPECT_EQ(shared[len / 2], 0);
  EXPECT_LE(faults_touching(shared), 1);            // mapped in: no faults left
  EXPECT_GE(faults_touching(priv), long(pages) / 2);  // a private mapping was not touched
  munmap(shared, len);
  munmap(priv, len);
}
