// FluidKernelFFTCPU.cxx -- the FFTW back end of FluidKernelFFT<EXEC_CPU>:
// single-precision real-to-complex / complex-to-real plans, multi-threaded
// with the OpenMP thread count (fftw3f_omp or fftw3f_threads).
//
// Planning. FFTW's planner is not thread-safe: every planner call (and the
// one-time thread set-up and wisdom import) runs under one mutex. Executing
// a plan on new arrays (fftwf_execute_dft_r2c/c2r) is thread-safe, so a plan
// is made once per (dimensions, thread count) and shared by every instance
// through an in-process cache (never freed: plans are small, a process sees
// few grid sizes). The default planner is FFTW_ESTIMATE (128^3: well under a
// millisecond; the legacy's FFTW_MEASURE took 1.4 s in every process), except
// that a plan FFTW already has wisdom for (FFTW_MEASURE | FFTW_WISDOM_ONLY) is
// taken as it is. PYCA_FFTW_PLANNER=measure (or patient) measures plans that
// have no wisdom yet and saves the wisdom, so later processes get measured
// plans at no cost. Wisdom lives in $PYCA_FFTW_WISDOM (empty: none), else
// $XDG_CACHE_HOME/pyca/fftwf-wisdom, else ~/.cache/pyca/fftwf-wisdom; a
// missing or unwritable folder is ignored.
#include <fftw3.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include <sys/stat.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "AtomicFile.h"
#include "FluidKernelFFTBackend.h"
#include "Image3D.h"
#include "MemAlloc.h"
#include "PyCAException.h"
#include "Scratch.h"
#include "conditionMacro.h"

namespace PyCA {
namespace detail {

namespace {

/// A pair of plans for one problem (r2c and c2r), immutable once made.
struct FftwPlans {
  fftwf_plan r2c = nullptr;
  fftwf_plan c2r = nullptr;
};

enum class Planner { Estimate, Measure, Patient };

Planner plannerFromEnv() {
  const char* e = std::getenv("PYCA_FFTW_PLANNER");
  if (!e) return Planner::Estimate;
  std::string s(e);
  for (char& c : s) c = char(std::tolower((unsigned char)c));
  if (s == "measure") return Planner::Measure;
  if (s == "patient") return Planner::Patient;
  return Planner::Estimate;
}

/// The wisdom file, or "" for none.
std::string wisdomPath() {
  if (const char* w = std::getenv("PYCA_FFTW_WISDOM")) return w;
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    base = x;
  else if (const char* h = std::getenv("HOME"); h && *h)
    base = std::string(h) + "/.cache";
  else
    return "";
  return base + "/pyca/fftwf-wisdom";
}

/// mkdir -p of the folder of path (errors ignored: the export then fails quietly).
void makeParentDirs(const std::string& path) {
  for (size_t p = path.find('/', 1); p != std::string::npos; p = path.find('/', p + 1)) {
    const std::string dir = path.substr(0, p);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return;
  }
}

typedef std::tuple<int, int, int, int, int, int> PlanKey;  // rank, n0, n1, n2, threads, planner

struct PlanCache {
  std::mutex mutex;  ///< guards every FFTW planner call and the map
  std::map<PlanKey, FftwPlans> plans;
  bool initialised = false;
  Planner planner = Planner::Estimate;
  std::string wisdom;
};

PlanCache& cache() {
  static PlanCache* c = new PlanCache;  // never destroyed: plans outlive static destructors
  return *c;
}

/// Caller holds the mutex.
void initOnce(PlanCache& c) {
  if (c.initialised) return;
  c.initialised = true;
  fftwf_init_threads();
  c.planner = plannerFromEnv();
  c.wisdom = wisdomPath();
  if (!c.wisdom.empty()) fftwf_import_wisdom_from_filename(c.wisdom.c_str());  // may not exist
}

/// Caller holds the mutex. Written atomically (AtomicFile.h): a reader in
/// another process never sees half a file, and a process killed at any
/// moment leaves the earlier file or the complete new one. An unwritable
/// folder only costs the next process its planning.
void exportWisdom(const PlanCache& c) {
  if (c.wisdom.empty()) return;
  makeParentDirs(c.wisdom);
  char* text = fftwf_export_wisdom_to_string();
  if (!text) return;
  const std::string content(text);
  std::free(text);  // fftw_export_wisdom_to_string allocates with malloc
  // A failed save keeps the earlier file (AtomicFile.h) and only costs the
  // next process its planning: never an exception out of a computation. An
  // unwritable location is ignored without a word (a read-only shared
  // wisdom file); a write that fails for want of room warns, once.
  std::string why;
  int err = 0;
  if (!writeFileAtomically(c.wisdom, content, &why, &err) &&
      (err == ENOSPC || err == EFBIG || err == EIO || err == EDQUOT)) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      std::fprintf(stderr, "PyCA: warning: FFTW wisdom not saved (%s); the earlier file is kept\n", why.c_str());
  }
}

int planThreads(size_t nReal) {
#ifdef _OPENMP
  return nReal < (size_t(1) << 15) ? 1 : omp_get_max_threads();
#else
  (void)nReal;
  return 1;
#endif
}

/// The shared plans for a layout with `threads` threads (planned on first use).
const FftwPlans& plansFor(const SpectralLayout& L, int threads) {
  PlanCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  initOnce(c);
  const PlanKey key(L.rank, L.n[0], L.n[1], L.n[2], threads, int(c.planner));
  auto it = c.plans.find(key);
  if (it != c.plans.end()) return it->second;

  // Plans are made on SIMD-aligned scratch arrays of the full size (only the
  // measuring planners touch them); applied later to other arrays of the same
  // alignment (new-array execute).
  float* r = fftwf_alloc_real(L.nReal);
  fftwf_complex* z = fftwf_alloc_complex(L.nComplex);
  if (!r || !z) {
    fftwf_free(r);
    fftwf_free(z);
    throw PyCAMemoryException(__FILE__, __LINE__, "FluidKernelFFT: cannot allocate FFTW planning buffers");
  }
  fftwf_plan_with_nthreads(threads);
  FftwPlans p;
  bool measured = false;
  if (c.planner == Planner::Estimate) {
    const unsigned wise = FFTW_MEASURE | FFTW_WISDOM_ONLY;
    p.r2c = fftwf_plan_many_dft_r2c(L.rank, L.n, 1, r, nullptr, 1, 0, z, nullptr, 1, 0, wise);
    p.c2r = fftwf_plan_many_dft_c2r(L.rank, L.n, 1, z, nullptr, 1, 0, r, nullptr, 1, 0, wise);
    if (!p.r2c)
      p.r2c = fftwf_plan_many_dft_r2c(L.rank, L.n, 1, r, nullptr, 1, 0, z, nullptr, 1, 0, FFTW_ESTIMATE);
    if (!p.c2r)
      p.c2r = fftwf_plan_many_dft_c2r(L.rank, L.n, 1, z, nullptr, 1, 0, r, nullptr, 1, 0, FFTW_ESTIMATE);
  } else {
    const unsigned flags = c.planner == Planner::Patient ? FFTW_PATIENT : FFTW_MEASURE;
    p.r2c = fftwf_plan_many_dft_r2c(L.rank, L.n, 1, r, nullptr, 1, 0, z, nullptr, 1, 0, flags);
    p.c2r = fftwf_plan_many_dft_c2r(L.rank, L.n, 1, z, nullptr, 1, 0, r, nullptr, 1, 0, flags);
    measured = true;
  }
  fftwf_free(r);
  fftwf_free(z);
  if (!p.r2c || !p.c2r) {
    if (p.r2c) fftwf_destroy_plan(p.r2c);
    if (p.c2r) fftwf_destroy_plan(p.c2r);
    throw PyCAException(__FILE__, __LINE__, "FluidKernelFFT: FFTW could not plan the transforms");
  }
  if (measured) exportWisdom(c);
  return c.plans.emplace(key, p).first->second;
}

bool simdAligned(const void* p) { return fftwf_alignment_of(const_cast<float*>(static_cast<const float*>(p))) == 0; }

class FftwBackend final : public FluidFFTBackend {
 public:
  explicit FftwBackend(const GridInfo& g) : FluidFFTBackend(g, MEM_HOST), mGrid(g) {
    if (mLayout.rank > 0) {
      mThreads = planThreads(mLayout.nReal);
      mPlans = &plansFor(mLayout, mThreads);
    }
  }

  void forward(const Field3D& in, StreamT) override {
    if (mLayout.rank == 0) {  // one voxel: the transform is the value
      for (int d = 0; d < 3; ++d) {
        spec(d)[0] = in.getComponent(d)[0];
        spec(d)[1] = 0.f;
      }
      return;
    }
    const FftwPlans& p = plans();
    std::unique_ptr<Image3D> tmp;
    for (int d = 0; d < 3; ++d) {
      const float* src = in.getComponent(d);
      if (!simdAligned(src)) {  // not from PyCA's allocator: copy to aligned scratch
        if (!tmp) tmp = scratchImage(mGrid, MEM_HOST);
        std::memcpy(tmp->get(), src, mLayout.nReal * sizeof(float));
        src = tmp->get();
      }
      fftwf_execute_dft_r2c(p.r2c, const_cast<float*>(src), reinterpret_cast<fftwf_complex*>(spec(d)));
    }
  }

  void backward(Field3D& out, StreamT) override {
    if (mLayout.rank == 0) {
      for (int d = 0; d < 3; ++d) out.getComponent(d)[0] = spec(d)[0];
      return;
    }
    const FftwPlans& p = plans();
    std::unique_ptr<Image3D> tmp;
    for (int d = 0; d < 3; ++d) {
      float* dst = out.getComponent(d);
      const bool direct = simdAligned(dst);
      if (!direct && !tmp) tmp = scratchImage(mGrid, MEM_HOST);
      float* o = direct ? dst : tmp->get();
      fftwf_execute_dft_c2r(p.c2r, reinterpret_cast<fftwf_complex*>(spec(d)), o);
      if (!direct) std::memcpy(dst, o, mLayout.nReal * sizeof(float));
    }
  }

 private:
  /// The plans for the current OpenMP thread count (re-fetched if it changed).
  const FftwPlans& plans() {
    const int t = planThreads(mLayout.nReal);
    if (t != mThreads) {
      mPlans = &plansFor(mLayout, t);
      mThreads = t;
    }
    return *mPlans;
  }

  GridInfo mGrid;
  int mThreads = 1;
  const FftwPlans* mPlans = nullptr;
};

}  // namespace

std::unique_ptr<FluidFFTBackend> makeFftwBackend(const GridInfo& g) {
  return std::make_unique<FftwBackend>(g);
}

}  // namespace detail
}  // namespace PyCA
