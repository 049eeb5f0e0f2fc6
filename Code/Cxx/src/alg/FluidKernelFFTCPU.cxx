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
#include "CPUThreads.h"
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

#ifdef PYCA_FFTW_SPAWN_CALLBACK
/// FFTW's parallel loops (FFTW 3.3.9 and later) on the CPU back end's team
/// (CPUThreads.h): the plans are made for GetCPUMaxThreads() threads and
/// their jobs run on GetCPUThreads() of them, one after another when that is
/// 1. The jobs are independent, so the arithmetic, and the bits, are those
/// of the plan whatever the team.
void fftwParallelLoop(void* (*work)(char*), char* jobdata, size_t elsize, int njobs, void*) {
  int t = GetCPUThreads();
  if (t > njobs) t = njobs;
  if (t <= 1) {
    for (int i = 0; i < njobs; ++i) work(jobdata + size_t(i) * elsize);
    return;
  }
#pragma omp parallel for num_threads(t) schedule(static)
  for (int i = 0; i < njobs; ++i) work(jobdata + size_t(i) * elsize);
}
#endif

/// Caller holds the mutex.
void initOnce(PlanCache& c) {
  if (c.initialised) return;
  c.initialised = true;
  fftwf_init_threads();
#ifdef PYCA_FFTW_SPAWN_CALLBACK
  fftwf_threads_set_callback(&fftwParallelLoop, nullptr);
#endif
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

/// The threads a plan is made for. With FFTW's loop callback, the team's
/// maximum (fftwParallelLoop runs the jobs on the current team); without it
/// (FFTW before 3.3.9), the current team, each size planned when first used.
int planThreads(size_t nReal) {
#ifdef _OPENMP
  if (nReal < (size_t(1) << 15)) return 1;
#ifdef PYCA_FFTW_SPAWN_CALLBACK
  return GetCPUMaxThreads();
#else
  return GetCPUThreads();
#endif
#else
  (void)nReal;
  return 1;
#endif
}

/// SIMD-aligned scratch arrays of a layout's full size to plan on (only the
/// measuring planners touch them; the plans are applied later to other
/// arrays of the same alignment: new-array execute). Freed on scope exit.
struct PlanningBuffers {
  float* r;
  fftwf_complex* z;
  explicit PlanningBuffers(const SpectralLayout& L)
      : r(fftwf_alloc_real(L.nReal)), z(fftwf_alloc_complex(L.nComplex)) {
    if (!r || !z) {
      release();
      throw PyCAMemoryException(__FILE__, __LINE__, "FluidKernelFFT: cannot allocate FFTW planning buffers");
    }
  }
  ~PlanningBuffers() { release(); }
  PlanningBuffers(const PlanningBuffers&) = delete;
  PlanningBuffers& operator=(const PlanningBuffers&) = delete;
  void release() {
    fftwf_free(r);
    fftwf_free(z);
    r = nullptr;
    z = nullptr;
  }
};

/// A plan by the cache's planner policy (caller holds the mutex): in
/// estimate mode a plan FFTW has wisdom for (FFTW_MEASURE |
/// FFTW_WISDOM_ONLY) if there is one, else an estimated one; the measuring
/// modes plan with FFTW_MEASURE or FFTW_PATIENT. make(flags) makes the plan.
template <class Make>
fftwf_plan planByPolicy(const PlanCache& c, const Make& make) {
  if (c.planner == Planner::Estimate) {
    fftwf_plan p = make(FFTW_MEASURE | FFTW_WISDOM_ONLY);
    return p ? p : make(FFTW_ESTIMATE);
  }
  return make(c.planner == Planner::Patient ? FFTW_PATIENT : FFTW_MEASURE);
}

/// The shared plans for a layout with `threads` threads (planned on first use).
const FftwPlans& plansFor(const SpectralLayout& L, int threads) {
  PlanCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  initOnce(c);
  const PlanKey key(L.rank, L.n[0], L.n[1], L.n[2], threads, int(c.planner));
  auto it = c.plans.find(key);
  if (it != c.plans.end()) return it->second;

  FftwPlans p;
  {
    const PlanningBuffers buf(L);
    fftwf_plan_with_nthreads(threads);
    p.r2c = planByPolicy(c, [&](unsigned f) {
      return fftwf_plan_many_dft_r2c(L.rank, L.n, 1, buf.r, nullptr, 1, 0, buf.z, nullptr, 1, 0, f);
    });
    p.c2r = planByPolicy(c, [&](unsigned f) {
      return fftwf_plan_many_dft_c2r(L.rank, L.n, 1, buf.z, nullptr, 1, 0, buf.r, nullptr, 1, 0, f);
    });
  }
  if (!p.r2c || !p.c2r) {
    if (p.r2c) fftwf_destroy_plan(p.r2c);
    if (p.c2r) fftwf_destroy_plan(p.c2r);
    throw PyCAException(__FILE__, __LINE__, "FluidKernelFFT: FFTW could not plan the transforms");
  }
  if (c.planner != Planner::Estimate) exportWisdom(c);
  return c.plans.emplace(key, p).first->second;
}

/// The plans of the pruned transforms (SpectralBand) of a 3-D grid: along x
/// (r2c / c2r, every row), along y (the kept kx, every z) and along z (the
/// kept kx and ky: two plans, ky < cy and ky > ny - cy), forward and
/// backward, in place on the half spectrum (x fastest, hx = nx/2 + 1).
struct PrunedPlans {
  fftwf_plan x_r2c = nullptr, x_c2r = nullptr;
  fftwf_plan y_fwd = nullptr, y_bwd = nullptr;
  fftwf_plan z_fwd[2] = {nullptr, nullptr}, z_bwd[2] = {nullptr, nullptr};
  size_t zOffset[2] = {0, 0};  ///< complex offset of each z plan's first line
};

typedef std::tuple<int, int, int, int, int, int, int, int> PrunedKey;  // nx ny nz cx cy cz threads planner

std::map<PrunedKey, PrunedPlans>& prunedPlans() {
  static auto* m = new std::map<PrunedKey, PrunedPlans>;  // guarded by cache().mutex; never destroyed
  return *m;
}

/// The pruned plans for a 3-D layout and a band that drops some kx or ky.
const PrunedPlans& prunedPlansFor(const SpectralLayout& L, const SpectralBand& b, int threads) {
  PlanCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  initOnce(c);
  const int nx = L.size.x, ny = L.size.y, nz = L.size.z, hx = L.half.x;
  const int cx = b.x < hx ? b.x : hx;
  const int cy = b.y < ny ? b.y : ny;
  const PrunedKey key(nx, ny, nz, cx, cy, 0, threads, int(c.planner));
  auto it = prunedPlans().find(key);
  if (it != prunedPlans().end()) return it->second;

  PrunedPlans p;
  {
    const PlanningBuffers buf(L);
    float* r = buf.r;
    fftwf_complex* z = buf.z;
    fftwf_plan_with_nthreads(threads);
    auto r2c = [&](int n, int howmany) {
      return planByPolicy(c, [&](unsigned f) {
        return fftwf_plan_many_dft_r2c(1, &n, howmany, r, nullptr, 1, n, z, nullptr, 1, n / 2 + 1, f);
      });
    };
    auto c2r = [&](int n, int howmany) {
      return planByPolicy(c, [&](unsigned f) {
        return fftwf_plan_many_dft_c2r(1, &n, howmany, z, nullptr, 1, n / 2 + 1, r, nullptr, 1, n, f);
      });
    };
    auto guru = [&](const fftwf_iodim& dim, const fftwf_iodim* hm, fftwf_complex* at, int sign) {
      return planByPolicy(c, [&](unsigned f) { return fftwf_plan_guru_dft(1, &dim, 2, hm, at, at, sign, f); });
    };
    const int line = hx * ny;  // complex values per z plane
    p.x_r2c = r2c(nx, ny * nz);
    p.x_c2r = c2r(nx, ny * nz);
    {
      const fftwf_iodim dim = {ny, hx, hx};
      const fftwf_iodim hm[2] = {{cx, 1, 1}, {nz, line, line}};
      p.y_fwd = guru(dim, hm, z, FFTW_FORWARD);
      p.y_bwd = guru(dim, hm, z, FFTW_BACKWARD);
    }
    // the kept ky: [0, cy) and (ny - cy, ny) (one range when y keeps all)
    const int count[2] = {cy, cy < ny ? cy - 1 : 0};
    const size_t first[2] = {0, size_t(ny - cy + 1) * size_t(hx)};
    const fftwf_iodim dim = {nz, line, line};
    for (int k = 0; k < 2; ++k) {
      if (count[k] <= 0) continue;
      const fftwf_iodim hm[2] = {{cx, 1, 1}, {count[k], hx, hx}};
      p.zOffset[k] = first[k];
      p.z_fwd[k] = guru(dim, hm, z + first[k], FFTW_FORWARD);
      p.z_bwd[k] = guru(dim, hm, z + first[k], FFTW_BACKWARD);
    }
  }
  const bool ok = p.x_r2c && p.x_c2r && p.y_fwd && p.y_bwd && p.z_fwd[0] && p.z_bwd[0] &&
                  (!p.zOffset[1] || (p.z_fwd[1] && p.z_bwd[1]));
  if (!ok) {
    for (fftwf_plan q : {p.x_r2c, p.x_c2r, p.y_fwd, p.y_bwd, p.z_fwd[0], p.z_bwd[0], p.z_fwd[1], p.z_bwd[1]})
      if (q) fftwf_destroy_plan(q);
    throw PyCAException(__FILE__, __LINE__, "FluidKernelFFT: FFTW could not plan the pruned transforms");
  }
  if (c.planner != Planner::Estimate) exportWisdom(c);
  return prunedPlans().emplace(key, p).first->second;
}

/// Whether a band is worth the pruned transforms: it drops some kx or ky
/// (dropping only kz saves no transform: z is transformed last).
bool prunes(const SpectralLayout& L, const SpectralBand& b) {
  return L.rank == 3 && L.halvedAxis == 0 && (b.x < L.half.x || b.y < L.half.y);
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
    const bool pruned = prunes(mLayout, mBand);
    const FftwPlans* p = pruned ? nullptr : &plans();
    const PrunedPlans* q = pruned ? &pruned3(mBand) : nullptr;
    std::unique_ptr<Image3D> tmp;
    for (int d = 0; d < 3; ++d) {
      const float* src = in.getComponent(d);
      if (!simdAligned(src)) {  // not from PyCA's allocator: copy to aligned scratch
        if (!tmp) tmp = scratchImage(mGrid, MEM_HOST);
        std::memcpy(tmp->get(), src, mLayout.nReal * sizeof(float));
        src = tmp->get();
      }
      fftwf_complex* out = reinterpret_cast<fftwf_complex*>(spec(d));
      if (!pruned) {
        fftwf_execute_dft_r2c(p->r2c, const_cast<float*>(src), out);
        continue;
      }
      // x (every row), then y (the kept kx), then z (the kept kx and ky);
      // the other modes keep partial transforms, which the spectral step zeroes
      fftwf_execute_dft_r2c(q->x_r2c, const_cast<float*>(src), out);
      fftwf_execute_dft(q->y_fwd, out, out);
      for (int k = 0; k < 2; ++k)
        if (q->z_fwd[k]) fftwf_execute_dft(q->z_fwd[k], out + q->zOffset[k], out + q->zOffset[k]);
    }
  }

  void backward(Field3D& out, StreamT) override {
    if (mLayout.rank == 0) {
      for (int d = 0; d < 3; ++d) out.getComponent(d)[0] = spec(d)[0];
      return;
    }
    const bool pruned = prunes(mLayout, mBand);
    const FftwPlans* p = pruned ? nullptr : &plans();
    const PrunedPlans* q = pruned ? &pruned3(mBand) : nullptr;
    std::unique_ptr<Image3D> tmp;
    for (int d = 0; d < 3; ++d) {
      float* dst = out.getComponent(d);
      const bool direct = simdAligned(dst);
      if (!direct && !tmp) tmp = scratchImage(mGrid, MEM_HOST);
      float* o = direct ? dst : tmp->get();
      fftwf_complex* in = reinterpret_cast<fftwf_complex*>(spec(d));
      if (!pruned) {
        fftwf_execute_dft_c2r(p->c2r, in, o);
      } else {
        // the reverse order; the modes outside the band are zero
        for (int k = 0; k < 2; ++k)
          if (q->z_bwd[k]) fftwf_execute_dft(q->z_bwd[k], in + q->zOffset[k], in + q->zOffset[k]);
        fftwf_execute_dft(q->y_bwd, in, in);
        fftwf_execute_dft_c2r(q->x_c2r, in, o);
      }
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

  /// The pruned plans for band b and the current thread count.
  const PrunedPlans& pruned3(const SpectralBand& b) {
    const int t = planThreads(mLayout.nReal);
    if (!mPruned || t != mPrunedThreads || b.x != mPrunedBand.x || b.y != mPrunedBand.y) {
      mPruned = &prunedPlansFor(mLayout, b, t);
      mPrunedThreads = t;
      mPrunedBand = b;
    }
    return *mPruned;
  }

  GridInfo mGrid;
  int mThreads = 1;
  const FftwPlans* mPlans = nullptr;
  const PrunedPlans* mPruned = nullptr;
  int mPrunedThreads = 0;
  SpectralBand mPrunedBand;
};

}  // namespace

std::unique_ptr<FluidFFTBackend> makeCpuFftBackend(const GridInfo& g) {
  return std::make_unique<FftwBackend>(g);
}

const char* cpuFftBackendName() { return "fftw"; }

}  // namespace detail
}  // namespace PyCA
