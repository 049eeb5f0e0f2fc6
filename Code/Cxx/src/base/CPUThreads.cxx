// CPUThreads.cxx -- the CPU back end's team size (see CPUThreads.h).
#include "CPUThreads.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__linux__)
#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#define PYCA_HAVE_PROC_STAT 1
#endif

namespace PyCA {
namespace detail {

bool parseProcStat(const std::string& text, const std::vector<bool>& use, long ticksPerSecond,
                   CPUTimes& out) {
  out = CPUTimes();
  if (ticksPerSecond <= 0) return false;
  unsigned long long busy = 0, total = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) break;  // a cut last line does not count
    const char* p = text.c_str() + pos;
    pos = eol + 1;
    // "cpuN f1 f2 ...": the aggregate "cpu " line is skipped (its CPUs may
    // not all be ours), so are other lines
    if (std::strncmp(p, "cpu", 3) != 0 || p[3] < '0' || p[3] > '9') continue;
    char* end = nullptr;
    const unsigned long n = std::strtoul(p + 3, &end, 10);
    if (!use.empty() && (n >= use.size() || !use[n])) continue;
    // user nice system idle iowait irq softirq steal (guest time is already
    // in user and nice)
    unsigned long long f[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int got = 0;
    const char* q = end;
    for (; got < 8; ++got) {
      char* e = nullptr;
      const unsigned long long v = std::strtoull(q, &e, 10);
      if (e == q || e > text.c_str() + eol) break;
      f[got] = v;
      q = e;
    }
    if (got < 4) continue;  // not a line of this format
    const unsigned long long idle = f[3] + f[4];
    const unsigned long long b = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
    busy += b;
    total += b + idle;
    ++out.cpus;
  }
  if (out.cpus == 0) return false;
  out.busy = double(busy) / double(ticksPerSecond);
  out.total = double(total) / double(ticksPerSecond);
  return true;
}

int freeCPUThreads(double otherCpus, int allowedCpus) {
  if (allowedCpus < 1) return 1;
  if (!(otherCpus > 0)) return allowedCpus;  // also NaN
  const double freeCpus = double(allowedCpus) - otherCpus;
  const int t = int(std::floor(freeCpus + 0.5));
  return t < 1 ? 1 : (t > allowedCpus ? allowedCpus : t);
}

}  // namespace detail

namespace {

constexpr long long kWindowNs = 100000000;  // 100 ms between measurements

std::atomic<int> gAdaptive{-1};  // -1: not yet read from the environment
std::atomic<int> gLimit{0};      // the free CPUs measured last; 0: none yet
std::atomic<int> gForced{0};
std::atomic<long long> gNextNs{0};

long long nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool adaptive() {
  int a = gAdaptive.load(std::memory_order_relaxed);
  if (a < 0) {
    const char* e = std::getenv("PYCA_ADAPTIVE_THREADS");
    a = (e && (std::strcmp(e, "0") == 0 || std::strcmp(e, "off") == 0 || std::strcmp(e, "false") == 0 ||
               std::strcmp(e, "no") == 0))
            ? 0
            : 1;
    int expected = -1;
    if (!gAdaptive.compare_exchange_strong(expected, a)) a = expected;  // a concurrent setter won
  }
  return a == 1;
}

#ifdef PYCA_HAVE_PROC_STAT

struct Sample {
  long long wallNs = 0;
  double ownCpu = 0;  // this process's CPU time, seconds
  detail::CPUTimes sys;
  pid_t pid = 0;      // a forked child's first sample has no predecessor
};

// The measuring thread's process id (0: nobody measures). A try-lock that a
// forked child does not inherit: a parent's id found there is stale.
std::atomic<pid_t> gSampler{0};
Sample gLast;  // guarded by gSampler
bool gHaveLast = false;

bool tryAcquireSampler(pid_t me) {
  pid_t cur = 0;
  if (gSampler.compare_exchange_strong(cur, me, std::memory_order_acquire)) return true;
  // held by this process: another thread measures; held by another process:
  // the fork of a process that was measuring, take it over
  return cur != me && gSampler.compare_exchange_strong(cur, me, std::memory_order_acquire);
}

bool readProcStat(std::string& text) {
  const int fd = ::open("/proc/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // The per-CPU lines come first; they fit in this much (sysconf reads
  // /sys: once per process).
  static const size_t kBytes = [] {
    const long conf = sysconf(_SC_NPROCESSORS_CONF);
    return size_t(256) * size_t((conf < 1 ? 1 : conf) + 2);
  }();
  text.resize(kBytes);
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t r = ::read(fd, &text[got], text.size() - got);
    if (r <= 0) break;
    got += size_t(r);
  }
  ::close(fd);
  text.resize(got);
  return got > 0;
}

bool takeSample(Sample& s, int& allowed) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<bool> use;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    use.assign(CPU_SETSIZE, false);
    for (int c = 0; c < CPU_SETSIZE; ++c) use[size_t(c)] = CPU_ISSET(c, &set) != 0;
  }
  std::string text;
  if (!readProcStat(text)) return false;
  static const long kTicksPerSecond = sysconf(_SC_CLK_TCK);
  if (!detail::parseProcStat(text, use, kTicksPerSecond, s.sys)) return false;
  timespec ts;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return false;
  s.ownCpu = double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  s.wallNs = nowNs();
  s.pid = getpid();
  allowed = s.sys.cpus;
  return true;
}

/// A new measurement; the caller holds gSampler.
void remeasureLocked() {
  Sample s;
  int allowed = 0;
  if (!takeSample(s, allowed)) {
    gLimit.store(0, std::memory_order_relaxed);
    gNextNs.store(nowNs() + 100 * kWindowNs, std::memory_order_relaxed);  // try again in 10 s
    gHaveLast = false;
    return;
  }
  if (gHaveLast && gLast.pid == s.pid && gLast.sys.cpus == s.sys.cpus) {
    const double dt = 1e-9 * double(s.wallNs - gLast.wallNs);
    const double dTotal = s.sys.total - gLast.sys.total, dBusy = s.sys.busy - gLast.sys.busy;
    const double dOwn = s.ownCpu - gLast.ownCpu;
    // /proc/stat counts in ticks (10 ms): allow one per CPU, and 20 % for
    // clocks read at slightly different moments. Implausible totals (a
    // sandbox's synthetic /proc/stat) leave the team at its maximum.
    const double slack = 0.2 * allowed * dt + 0.011 * allowed;
    if (dt > 0 && std::fabs(dTotal - allowed * dt) <= slack) {
      double others = (dBusy - dOwn) / dt;
      if (others < 0) others = 0;
      gLimit.store(detail::freeCPUThreads(others, allowed), std::memory_order_relaxed);
    } else {
      gLimit.store(0, std::memory_order_relaxed);
    }
  }
  gLast = s;
  gHaveLast = true;
  gNextNs.store(s.wallNs + kWindowNs, std::memory_order_relaxed);
}

/// A new measurement, when the last is at least a window old and no other
/// thread is taking one.
void remeasure() {
  const pid_t me = getpid();
  if (!tryAcquireSampler(me)) return;
  remeasureLocked();
  gSampler.store(0, std::memory_order_release);
}

#endif  // PYCA_HAVE_PROC_STAT

}  // namespace

int GetCPUMaxThreads() {
#ifdef _OPENMP
  const int m = omp_get_max_threads();
  return m < 1 ? 1 : m;
#else
  return 1;
#endif
}

int GetCPUThreads() {
  const int maxT = GetCPUMaxThreads();
  if (maxT <= 1) return 1;
  const int forced = gForced.load(std::memory_order_relaxed);
  if (forced > 0) return forced < maxT ? forced : maxT;
  if (!adaptive()) return maxT;
#ifdef PYCA_HAVE_PROC_STAT
#ifdef _OPENMP
  if (omp_in_parallel()) return maxT;  // a nested region: not this thread's to measure
#endif
  if (nowNs() >= gNextNs.load(std::memory_order_relaxed)) remeasure();
  const int lim = gLimit.load(std::memory_order_relaxed);
  return lim > 0 && lim < maxT ? lim : maxT;
#else
  return maxT;
#endif
}

void SetCPUThreadsAdaptive(bool on) { gAdaptive.store(on ? 1 : 0); }

bool GetCPUThreadsAdaptive() { return adaptive(); }

namespace detail {
void forceCPUThreads(int n) { gForced.store(n > 0 ? n : 0); }
}  // namespace detail

}  // namespace PyCA
