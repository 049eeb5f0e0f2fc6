// AtomicFile.cxx -- see AtomicFile.h.
#include "AtomicFile.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace PyCA {
namespace detail {

namespace {
std::atomic<unsigned long> gCounter{0};

std::vector<std::string> filesWithPrefix(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.compare(0, prefix.size(), prefix) == 0) out.push_back(n);
  }
  ::closedir(d);
  return out;
}

// The files of this write: tmpStem + ext and tmpStem + ".*".
std::vector<std::string> ours(const StagedFiles& f) {
  std::vector<std::string> out;
  for (const std::string& n : filesWithPrefix(f.dir, f.tmpStem))
    if (n == f.tmpStem + f.ext || n.compare(0, f.tmpStem.size() + 1, f.tmpStem + ".") == 0) out.push_back(n);
  return out;
}

// A file's data and size before the rename (fdatasync); a folder's entries
// after it (fsync; some file systems cannot sync folders: the rename is
// still atomic).
void fsyncPath(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0) {
    if (directory) return;
    throw StagedWriteError(StagedWriteError::Open, path, errno);
  }
  const int rc = directory ? ::fsync(fd) : ::fdatasync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && !directory) throw StagedWriteError(StagedWriteError::Sync, path, err);
}

}  // namespace

StagedWriteError::StagedWriteError(Kind k, const std::string& p, int e)
    : std::runtime_error("staged write: '" + p + "'" + (e ? std::string(": ") + std::strerror(e) : std::string())),
      kind(k), path(p), err(e) {}

std::string stagedTarget(const std::string& path) {
  struct stat lst;
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    if (char* real = ::realpath(path.c_str(), nullptr)) {
      std::string target = real;
      std::free(real);
      return target;
    }
  }
  return path;
}

void writeStaged(const std::string& path, const std::string& ext,
                 const std::function<void(const std::string& tmp)>& write,
                 const std::function<void(const StagedFiles& files)>& check) {
  StagedFiles f;
  f.target = stagedTarget(path);
  const size_t slash = f.target.rfind('/');
  f.dir = slash == std::string::npos ? "." : slash == 0 ? "/" : f.target.substr(0, slash);
  const std::string base = slash == std::string::npos ? f.target : f.target.substr(slash + 1);
  f.ext = ext.size() < base.size() && base.compare(base.size() - ext.size(), ext.size(), ext) == 0
              ? ext : std::string();
  f.stem = base.substr(0, base.size() - f.ext.size());
  f.tmpStem = f.stem + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(gCounter.fetch_add(1));
  f.tmp = f.dir + "/" + f.tmpStem + f.ext;
  struct stat st;
  if (::stat(f.dir.c_str(), &st) != 0)
    throw StagedWriteError(StagedWriteError::NoFolder, f.tmp, errno);
  if (!S_ISDIR(st.st_mode)) throw StagedWriteError(StagedWriteError::NoFolder, f.tmp, ENOTDIR);
  if (::stat(f.target.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw StagedWriteError(StagedWriteError::IsDirectory, f.target, EISDIR);
  const bool hadTarget = ::stat(f.target.c_str(), &st) == 0;
  try {
    write(f.tmp);
    const std::vector<std::string> made = ours(f);
    bool haveMain = false;
    for (const std::string& n : made) {
      if (n == f.tmpStem + f.ext) haveMain = true;
      else f.companions.push_back(n);
    }
    if (!haveMain) throw StagedWriteError(StagedWriteError::NoFile, f.tmp, 0);
    if (check) check(f);
    for (const std::string& n : made) {
      if (hadTarget) ::chmod((f.dir + "/" + n).c_str(), st.st_mode & 07777);  // keep the earlier mode
      fsyncPath(f.dir + "/" + n, false);
    }
    for (const std::string& n : f.companions) {  // the data file first, then the header naming it
      const std::string to = f.dir + "/" + f.stem + n.substr(f.tmpStem.size());
      if (std::rename((f.dir + "/" + n).c_str(), to.c_str()) != 0)
        throw StagedWriteError(StagedWriteError::Rename, to, errno);
    }
    if (std::rename(f.tmp.c_str(), f.target.c_str()) != 0)
      throw StagedWriteError(StagedWriteError::Rename, f.target, errno);
    fsyncPath(f.dir, true);
  } catch (...) {
    for (const std::string& n : ours(f)) std::remove((f.dir + "/" + n).c_str());
    throw;
  }
}

bool writeFileAtomically(const std::string& path, const std::string& content, std::string* why,
                         int* errOut) {
  auto fail = [&](const std::string& what, int e) {
    if (why) *why = what + ": " + std::strerror(e);
    if (errOut) *errOut = e;
    return false;
  };
  struct Failure {
    std::string what;
    int err;
  };
  std::string tmpName;
  try {
    writeStaged(
        path, "",
        [&](const std::string& tmp) {
          tmpName = tmp;
          const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
          if (fd < 0) throw Failure{"cannot create '" + tmp + "'", errno};
          const char* p = content.data();
          size_t left = content.size();
          while (left > 0) {
            const ssize_t n = ::write(fd, p, left);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
              const int err = n < 0 ? errno : EIO;
              ::close(fd);
              throw Failure{"cannot write '" + path + "'", err};
            }
            p += n;
            left -= size_t(n);
          }
          if (::close(fd) != 0) throw Failure{"cannot replace '" + path + "'", errno};
        },
        [&](const StagedFiles& f) {  // the whole content is there before it replaces the target
          struct stat written{};
          if (::stat(f.tmp.c_str(), &written) != 0 || uint64_t(written.st_size) != uint64_t(content.size()))
            throw Failure{"cannot write '" + path + "' (" + std::to_string(uint64_t(written.st_size)) + " of " +
                              std::to_string(content.size()) + " bytes written)",
                          EIO};
        });
  } catch (const Failure& e) {
    return fail(e.what, e.err);
  } catch (const StagedWriteError& e) {
    switch (e.kind) {
      case StagedWriteError::NoFolder:
        return fail("cannot create '" + e.path + "'", e.err);
      case StagedWriteError::Open:
      case StagedWriteError::Sync:
        return fail("cannot sync '" + e.path + "'", e.err);
      default:
        return fail("cannot replace '" + path + "'", e.err ? e.err : EIO);
    }
  } catch (const std::exception& e) {
    return fail(std::string("cannot write '") + path + "' (" + e.what() + ")", EIO);
  } catch (...) {
    return fail("cannot write '" + path + "'", EIO);
  }
  return true;
}

}  // namespace detail
}  // namespace PyCA
