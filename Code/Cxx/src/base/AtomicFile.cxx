// AtomicFile.cxx -- see AtomicFile.h.
#include "AtomicFile.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace PyCA {
namespace detail {

namespace {
std::atomic<unsigned long> gCounter{0};

}  // namespace

bool writeFileAtomically(const std::string& path, const std::string& content, std::string* why,
                         int* errOut) {
  auto fail = [&](const std::string& what, int e) {
    if (why) *why = what + ": " + std::strerror(e);
    if (errOut) *errOut = e;
    return false;
  };
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" +
                          std::to_string(gCounter.fetch_add(1));
  // Keep the mode of a file being replaced (a new one gets 0666 & ~umask).
  struct stat st;
  const mode_t mode = ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0666;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    const int e = errno;
    return fail("cannot create '" + tmp + "'", e);
  }
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(tmp.c_str());
      return fail("cannot write '" + path + "'", err);
    }
    p += n;
    left -= size_t(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return fail("cannot sync '" + tmp + "'", err);
  }
  // Verified before it replaces the target: the whole content is on disk.
  struct stat written{};
  if (::fstat(fd, &written) != 0 || uint64_t(written.st_size) != uint64_t(content.size())) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return fail("cannot write '" + path + "' (" + std::to_string(uint64_t(written.st_size)) + " of " +
                         std::to_string(content.size()) + " bytes written)", EIO);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return fail("cannot replace '" + path + "'", err);
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_CLOEXEC);
  if (dfd >= 0) {  // some file systems cannot sync folders; the rename is still atomic
    ::fsync(dfd);
    ::close(dfd);
  }
  return true;
}

}  // namespace detail
}  // namespace PyCA
