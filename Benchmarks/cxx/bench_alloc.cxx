// bench_alloc.cxx -- what a scratch image costs at 256^3 in host memory.
//
//  image3d_alloc_fill_free:          Image3D(grid) + first write of every voxel + free
//  managed_image3d_alloc_fill_free:  the same with ManagedImage3D from a warm
//                                    ThreadMemoryManager (init(grid, MEM_HOST, 2)
//                                    and one warm-up image)
//
// The first write is part of the cost on purpose: a fresh allocation of this
// size comes from the OS and every page faults in on first touch, while a pool
// buffer is already mapped. Usage: pyca_bench_alloc [repetitions=15].
// Prints one JSON object per line on stdout; no timing is asserted.
#include <Image3D.h>
#include <ManagedImage3D.h>
#include <MemoryManager.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

volatile float gSink = 0.f;  // keeps the writes observable

void touch(PyCA::Image3D& im, float v) {
  float* p = im.get();
  const size_t n = im.nVox();
  std::fill(p, p + n, v);
  gSink = gSink + p[n / 2] + p[n - 1];
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void report(const char* name, const std::vector<double>& t) {
  std::printf("{\"name\": \"%s\", \"size\": \"256^3\", \"median_s\": %.6g, \"min_s\": %.6g, \"reps\": %zu}\n",
              name, median(t), *std::min_element(t.begin(), t.end()), t.size());
  std::fflush(stdout);
}

template <class Body>
std::vector<double> timeReps(int reps, Body body) {
  std::vector<double> t;
  t.reserve(size_t(reps));
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    body(r);
    const auto t1 = Clock::now();
    t.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  if (argc > 1) {
    char* end = nullptr;
    long v = std::strtol(argv[1], &end, 10);
    if (!end || *end != '\0' || v < 1 || v > 100000) {
      std::cerr << "usage: " << argv[0] << " [repetitions >= 1]" << std::endl;
      return 2;
    }
    reps = int(v);
  }

  try {
    const PyCA::GridInfo grid(PyCA::Vec3Di(256, 256, 256));

    const std::vector<double> plain = timeReps(reps, [&](int r) {
      PyCA::Image3D im(grid, PyCA::MEM_HOST);
      touch(im, float(r));
    });
    report("image3d_alloc_fill_free", plain);

    PyCA::ThreadMemoryManager::init(grid, PyCA::MEM_HOST, 2);
    {
      PyCA::ManagedImage3D warm(grid, PyCA::MEM_HOST);
      touch(warm, -1.f);
    }
    const std::vector<double> managed = timeReps(reps, [&](int r) {
      PyCA::ManagedImage3D im(grid, PyCA::MEM_HOST);
      touch(im, float(r));
    });
    report("managed_image3d_alloc_fill_free", managed);
    PyCA::ThreadMemoryManager::destroy();
  } catch (const std::exception& e) {
    std::cerr << "pyca_bench_alloc: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
