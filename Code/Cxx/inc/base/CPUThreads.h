// CPUThreads.h -- how many threads the CPU back end's parallel regions use
// (an extension: the legacy library has no such header).
//
// Every parallel region of the CPU back end (the voxel, element-wise, splat
// and reduction loops, the box filters, large copies and FFTW's transforms)
// asks GetCPUThreads() for its team size. That is OpenMP's thread count
// (OMP_NUM_THREADS, omp_set_num_threads; PyCA's Python package sets a
// default from the affinity mask, the cgroup quota and the MPI ranks on the
// node), lowered while other processes keep the allowed CPUs busy:
//
//  * every 100 ms (checked when a region starts) the CPU time the allowed
//    CPUs spent busy (/proc/stat) minus this process's own CPU time gives
//    the CPUs other processes used; the team is the CPUs left over, rounded,
//    at least 1;
//  * why: a team larger than the free CPUs puts a thread on a core another
//    process holds, and every barrier then waits a scheduler slice for it.
//    The demo's 4-mm LDDMM with both cores busy elsewhere took 3x its
//    one-thread time (170x in the builds of an earlier issue).
//
// Results do not depend on the team size chosen: the splat's slabs and the
// reductions' chunks are cut by GetCPUMaxThreads() and by size, and FFTW runs
// the plan made for GetCPUMaxThreads() on fewer threads (same arithmetic).
// Set PYCA_ADAPTIVE_THREADS=0 in the environment, or call
// SetCPUThreadsAdaptive(false), to keep the team at GetCPUMaxThreads().
// Where /proc/stat is missing or implausible (not Linux, some sandboxes) the
// team stays at GetCPUMaxThreads().
#ifndef __PYCA_CPU_THREADS_H__
#define __PYCA_CPU_THREADS_H__

#include <cstddef>
#include <string>
#include <vector>

namespace PyCA {

/// The largest team of the CPU back end: OpenMP's omp_get_max_threads() of
/// the calling thread (1 in a build without OpenMP).
int GetCPUMaxThreads();

/// The team size of the CPU back end's next parallel region: between 1 and
/// GetCPUMaxThreads(), lowered while other processes use the allowed CPUs
/// (see the header's comment). May take a fresh measurement (a few
/// microseconds, at most every 100 ms).
int GetCPUThreads();

/// Turns the adaptive team size on (the default, unless the environment
/// says PYCA_ADAPTIVE_THREADS=0) or off (teams of GetCPUMaxThreads()).
void SetCPUThreadsAdaptive(bool on);
/// Whether the team size adapts to the load of other processes.
bool GetCPUThreadsAdaptive();

namespace detail {

/// CPU time in seconds summed over a set of CPUs, from /proc/stat.
struct CPUTimes {
  double busy = 0;   ///< user, nice, system, irq, softirq, steal
  double total = 0;  ///< busy plus idle and iowait
  int cpus = 0;      ///< the CPUs counted
};

/// Parses the per-CPU lines ("cpuN ...") of /proc/stat's text. `use[N]`
/// says whether CPU N counts (CPUs beyond use.size() do not; an empty `use`
/// counts every CPU). Fields are in clock ticks of `ticksPerSecond`.
/// False when no CPU line that counts was found.
bool parseProcStat(const std::string& text, const std::vector<bool>& use, long ticksPerSecond,
                   CPUTimes& out);

/// The team size for `allowedCpus` CPUs of which other processes used
/// `otherCpus` on average: the free CPUs rounded to nearest, between 1 and
/// allowedCpus (the caller caps it at GetCPUMaxThreads()).
int freeCPUThreads(double otherCpus, int allowedCpus);

/// Forces GetCPUThreads() to min(n, GetCPUMaxThreads()) until called with
/// n <= 0 (tests: results must not depend on the team size).
void forceCPUThreads(int n);

}  // namespace detail
}  // namespace PyCA

#endif
