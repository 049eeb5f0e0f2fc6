// A downstream program written against the legacy headers: bare header names
// (every public folder on the include path), MemoryManager.h alone for the
// managed types, legacy enums and constants as plain integers. Exit code 0 on
// success, 1 when a check fails, 2 on an unexpected exception.
#include <MemoryManager.h>  // ManagedImage3D, ManagedField3D, ThreadMemoryManager

#include <Aff3D.h>
#include <CudaUtils.h>
#include <FOpers.h>
#include <HFOpers.h>
#include <IFOpers.h>
#include <Field3D.h>
#include <IOpers.h>
#include <Image3D.h>
#include <Mat3D.h>
#include <MemOpers.h>
#include <PyCAException.h>
#include <Reduction.h>
#include <VFOpers.h>
#include <Vec2D.h>
#include <interp.h>
#include <conditionMacro.h>
#include <estream.h>
#include <mem.h>
#include <pycaConst.h>
#include <pycaUtils.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

using namespace PyCA;

namespace {
int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::cerr << "pyca_legacy_consumer: FAILED: " << what << std::endl;
    ++failures;
  }
}

bool near(double a, double b, double tol = 1e-5) { return std::fabs(a - b) <= tol * (1.0 + std::fabs(b)); }
}  // namespace

int main() {
  try {
    // pycaConst.h / mem.h: legacy integer values, enums built from ints
    check(EXEC_CPU == 0 && EXEC_GPU == 1 && EXEC_GPU_PARAM == 2, "EXEC_* values");
    const MemoryType host = MemoryType(1);
    check(host == MEM_HOST, "MemoryType(1) is MEM_HOST");
    const BackgroundStrategy bg = BackgroundStrategy(4);
    check(bg == BACKGROUND_STRATEGY_CLAMP, "BackgroundStrategy(4) is CLAMP");
    const int interp = INTERP_LINEAR, bc = BC_CLAMP;
    check(interp == 1 && bc == 2 && DIFF_CENTRAL == 2 && DIM_Z == 2, "enum values");
    const bool accum = ACCUM_TRUE, slice = SLICE_FALSE;
    check(accum && !slice, "ACCUM_TRUE / SLICE_FALSE as bool");
    check(std::string(MemTypeStr(host)) == "host memory", "MemTypeStr");

    // pycaUtils.h
    const uint nBlocks = uint(iDivUp(1000, CTA_SIZE));
    check(nBlocks == 4 && isPow2(CTA_SIZE), "iDivUp / isPow2");

    // CudaUtils.h: the -DCUDA_ENABLED the package config added matches the library
#ifdef CUDA_ENABLED
    const bool cudaDefined = true;
#else
    const bool cudaDefined = false;
#endif
    check(cudaDefined == CudaCompiled(), "CUDA_ENABLED definition matches the library");
    const unsigned int nDev = GetNumberOfCUDADevices();
    check(CudaCompiled() || nDev == 0, "no CUDA devices in a CPU-only build");

    const GridInfo grid(Vec3Di(13, 11, 7), Vec3Df(1.5f, 2.f, 0.5f));
    const size_t n = grid.nVox();
    StreamT st = NULL;

    // MemoryManager.h alone declares the managed types
    ThreadMemoryManager::init(grid, host, 2);
    {
      ManagedImage3D a(grid, host);
      ManagedImage3D b(grid, MEM_HOST);
      ManagedField3D f(grid, MEM_HOST);

      // MemOpers.h: raw arrays, legacy EXEC_CPU template argument
      MemOpers<EXEC_CPU, float>::SetLinear(a.get(), n, st);
      Opers::MulC_I<EXEC_CPU>(a.get(), 0.5f, n);  // a[i] = i / 2
      check(a.get(10) == 5.f && a.get(n - 1) == float(n - 1) / 2, "MemOpers SetLinear, MulC_I");

      // IOpers.h / Reduction.h: MaxMin into a Vec2Df (x = max, y = min)
      Opers::SetMem(b, 2.f, st);
      Opers::Sub_I(a, b, st);  // a[i] = i/2 - 2
      Vec2Df mm;
      Opers::MaxMin(mm, a);
      check(mm.x == float(n - 1) / 2 - 2 && mm.y == -2.f, "MaxMin(Vec2Df&, image)");
      Vec2Df upd(1e6f, 0.f);
      Opers::MaxMin(upd, a, true, st, false);
      check(upd.x == 1e6f && upd.y == -2.f, "MaxMin with update");
      const double sum = Opers::Sum(a);
      check(near(sum, double(n) * (n - 1) / 4 - 2.0 * n), "Sum");

      // FOpers.h: fields
      Opers::SetMem(f, Vec3Df(1.f, -3.f, 2.f), st);
      Opers::MulC_I(f, 2.f, st);
      Vec2Df fr;
      Opers::MaxMin(fr, f);
      check(fr.x == 4.f && fr.y == -6.f, "MaxMin(Vec2Df&, field)");
    }
    check(ThreadMemoryManager::instance().poolsInUse() == 0, "pools returned");
    ThreadMemoryManager::destroy();

    // Image3D.h / Field3D.h: unmanaged containers
    Image3D im(grid, MEM_HOST);
    Field3D fld(grid, MEM_HOST);
    Opers::SetMem(fld, Vec3Df(7.f, 8.f, 9.f));
    Opers::Copy(im, fld, int(DIM_Y));
    check(im.grid() == grid && fld.grid() == grid, "container grids");
    check(im.get(0) == 8.f && im.get(n - 1) == 8.f, "Copy(image, field, DIM_Y)");

    // Mat3D.h / Aff3D.h: the inverse of an affine transform
    Mat3Df m;
    m.set(0, 1, 0.5f);
    m(2, 2) = 2.f;
    check(near(m.det(), 2.0), "Mat3D det");
    const Aff3Df aff(m, Vec3Df(1.f, -2.f, 3.f));
    Aff3Df inv = aff;
    check(inv.invert(), "Aff3Df invert");
    const Vec3Df p(4.f, 5.f, 6.f);
    Vec3Df q;
    aff.transformVector(p, q);
    inv.transformVector(q);
    check(near(q.x, p.x) && near(q.y, p.y) && near(q.z, p.z), "inverse(aff(p)) == p");
    Mat3Df singular(1, 2, 3, 2, 4, 6, 0, 0, 1);
    check(!singular.invert(), "singular Mat3D refuses to invert");
    typedef Aff3Df::MatrixType MatrixType;
    check((MatrixType() == Mat3Df()), "Aff3D typedefs");

    // IFOpers.h / HFOpers.h / VFOpers.h / interp.h: deformations and differences
    {
      const GridInfo dg(Vec3Di(13, 11, 7), Vec3Df(1.5f, 2.f, 0.5f));
      const size_t nd = dg.nVox();
      Image3D src(dg, MEM_HOST), out(dg, MEM_HOST);
      Field3D h(dg, MEM_HOST), v(dg, MEM_HOST), g(dg, MEM_HOST), grad(dg, MEM_HOST);
      MemOpers<EXEC_CPU, float>::SetLinear(src.get(), nd);  // src(x, y, z) = x + 13 (y + 11 z)
      Opers::SetToIdentity(h);
      Opers::ApplyH(out, src, h, BackgroundStrategy(4), InterpT(1));
      check(out.get(17) == 17.f, "ApplyH with the identity");
      Opers::ComposeTranslation(out, src, Vec3Df(1.f, 0.f, 0.f));
      check(out.get(0) == 1.f && out.get(12) == 12.f, "ComposeTranslation by one voxel (clamped)");
      const float mid = triLerp<BACKGROUND_STRATEGY_CLAMP>(src.get(), 0.5f, 0.f, 0.f, 13, 11, 7);
      check(std::fabs(mid - 0.5f) < 1e-6f, "interp.h triLerp");
      Opers::SetMem(v, Vec3Df(0.75f, -0.5f, 0.25f));
      Opers::VtoH(g, v);
      Opers::HtoV(h, g);
      check(std::fabs(h.get(100).x - 0.75f) < 1e-5f && std::fabs(h.get(100).z - 0.25f) < 1e-5f, "HtoV(VtoH(v)) == v");
      Opers::Gradient(grad, src, DiffT(2), BoundaryCondT(2));
      check(std::fabs(grad.get(5, 5, 3).x - 1.f / 1.5f) < 1e-4f, "Gradient of a ramp");
      Opers::SetToIdentity(h);
      Opers::JacDetH(out, h);  // legacy units: 1 / (1.5 * 2 * 0.5)
      check(std::fabs(out.get(100) - 1.f / 1.5f) < 1e-6f, "JacDetH of the identity is 1 / voxelVol");
      Opers::Splat(out, h, src);
      check(out.get(33) == 33.f, "Splat through the identity");
      Opers::SetToZero(v);
      Opers::ComposeHV(g, h, v);
      check(g.get(7).y == h.get(7).y, "ComposeHV with a zero velocity");
    }

    // conditionMacro.h / PyCAException.h: legacy message format
    try {
      PRECONDITION(false, "legacy check");
      check(false, "PRECONDITION throws");
    } catch (const PyCAException& e) {
      const std::string w = e.what();
      check(w.rfind("PyCAException : From ", 0) == 0 && w.find(": legacy check") != std::string::npos,
            "PyCAException what()");
    }
    try {
      Image3D other(GridInfo(Vec3Di(2, 2, 2)), MEM_HOST);
      Opers::Add_I(im, other);
      check(false, "grid mismatch throws");
    } catch (const PyCAException& e) {
      check(std::string(e.what()).find("Input grids are not equal") != std::string::npos,
            "grid mismatch message");
    }
  } catch (const std::exception& e) {
    std::cerr << "pyca_legacy_consumer: exception: " << e.what() << std::endl;
    return 2;
  }
  if (failures) return 1;
  std::cout << "pyca_legacy_consumer: OK" << std::endl;
  return 0;
}
