// interop_impl.i -- the DLPack ABI and the C++ helpers of interop.i (wrapper code
// only; included by types.i before Image3D/Field3D are wrapped).

%{
#include <cstdint>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>

namespace pyca_dlpack {

// ---- the DLPack ABI -------------------------------------------------------
enum : int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 };
enum : uint8_t { kDLFloat = 2 };
struct DLDevice { int32_t device_type; int32_t device_id; };
struct DLDataType { uint8_t code; uint8_t bits; uint16_t lanes; };
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null means compact row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
struct DLPackVersion { uint32_t major; uint32_t minor; };
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};
constexpr uint64_t kFlagReadOnly = 1ull << 0;
constexpr uint64_t kFlagIsCopied = 1ull << 1;
const char* const kName = "dltensor";
const char* const kUsedName = "used_dltensor";
const char* const kNameV = "dltensor_versioned";
const char* const kUsedNameV = "used_dltensor_versioned";

// ---- export ------------------------------------------------------------------
// What an exported tensor owns: a reference to the buffer, shape and strides.
struct ExportCtx {
  std::shared_ptr<float> owner;
  int64_t shape[4];
  int64_t strides[4];
  DLManagedTensor legacy;
  DLManagedTensorVersioned versioned;
};

// Deleters need no GIL: they only drop a C++ reference.
static void deleteLegacy(DLManagedTensor* t) { delete static_cast<ExportCtx*>(t->manager_ctx); }
static void deleteVersioned(DLManagedTensorVersioned* t) {
  delete static_cast<ExportCtx*>(t->manager_ctx);
}

// A capsule that no consumer renamed still owns its tensor.
static void capsuleDtorLegacy(PyObject* cap) {
  if (!PyCapsule_IsValid(cap, kName)) return;
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, kName));
  if (t && t->deleter) t->deleter(t);
  PyErr_Restore(et, ev, tb);
}
static void capsuleDtorVersioned(PyObject* cap) {
  if (!PyCapsule_IsValid(cap, kNameV)) return;
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  auto* t = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(cap, kNameV));
  if (t && t->deleter) t->deleter(t);
  PyErr_Restore(et, ev, tb);
}

static DLDevice deviceOf(PyCA::MemoryType mt, const void* data) {
  switch (mt) {
    case PyCA::MEM_HOST_PINNED: return DLDevice{kDLCUDAHost, 0};
    case PyCA::MEM_DEVICE: {
      int id = PyCA::GetCUDAPointerDevice(data);
      if (id < 0) id = PyCA::GetCurrentCUDADevice();
      return DLDevice{kDLCUDA, id < 0 ? 0 : id};
    }
    default: return DLDevice{kDLCPU, 0};
  }
}

static PyObject* deviceTuple(PyCA::MemoryType mt, const void* data) {
  DLDevice d = deviceOf(mt, data);
  return Py_BuildValue("(ii)", int(d.device_type), int(d.device_id));
}

// A new capsule for the tensor `data` (shape/strides in elements) in `pool`.
static PyObject* exportTensor(const PyCA::MemPool<float>& pool, const float* data, int ndim,
                              const int64_t* shape, const int64_t* strides, bool versioned,
                              bool copied) {
  auto* ctx = new ExportCtx();
  ctx->owner = pool.sharedPtr();
  for (int i = 0; i < ndim; ++i) {
    ctx->shape[i] = shape[i];
    ctx->strides[i] = strides[i];
  }
  DLTensor& t = versioned ? ctx->versioned.dl_tensor : ctx->legacy.dl_tensor;
  t.data = const_cast<float*>(data);
  t.device = deviceOf(pool.memType(), data);
  t.ndim = ndim;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = ctx->shape;
  t.strides = ctx->strides;
  t.byte_offset = 0;
  PyObject* cap;
  if (versioned) {
    ctx->versioned.version = DLPackVersion{1, 0};
    ctx->versioned.manager_ctx = ctx;
    ctx->versioned.deleter = deleteVersioned;
    ctx->versioned.flags = copied ? kFlagIsCopied : 0;
    cap = PyCapsule_New(&ctx->versioned, kNameV, capsuleDtorVersioned);
  } else {
    ctx->legacy.manager_ctx = ctx;
    ctx->legacy.deleter = deleteLegacy;
    cap = PyCapsule_New(&ctx->legacy, kName, capsuleDtorLegacy);
  }
  if (!cap) delete ctx;
  return cap;
}

static void checkView(const PyCA::MemPool<float>& pool, const PyCA::Vec3Di& s) {
  PyCA::GridInfo g(s);
  if (g.nVox() > pool.capacity())
    throw PyCA::PyCAException(__FILE__, __LINE__, "grid too large for current image");
}

static PyObject* exportVolume(const PyCA::MemPool<float>& pool, const float* data,
                              const PyCA::Vec3Di& s, bool versioned, bool copied) {
  checkView(pool, s);
  int64_t shape[3] = {s.x, s.y, s.z};
  int64_t strides[3] = {1, int64_t(s.x), int64_t(s.x) * s.y};
  return exportTensor(pool, data, 3, shape, strides, versioned, copied);
}

static bool sameOwner(const std::shared_ptr<float>& a, const std::shared_ptr<float>& b) {
  return !a.owner_before(b) && !b.owner_before(a);
}

// The distance (in floats) between consecutive components of f, or false
// when the components are not one buffer at a constant distance.
static bool componentStride(const PyCA::Field3D& f, int64_t* stride) {
  const float *x = f.getX(), *y = f.getY(), *z = f.getZ();
  if (!x || !y || !z) return false;
  bool oneBuffer = f.isContinuous() ||
                   (sameOwner(f.getMemPool(0).sharedPtr(), f.getMemPool(1).sharedPtr()) &&
                    sameOwner(f.getMemPool(0).sharedPtr(), f.getMemPool(2).sharedPtr()));
  if (!oneBuffer || (y - x) != (z - y)) return false;
  *stride = int64_t(y - x);
  return true;
}

// ---- import ------------------------------------------------------------------
// A producer's tensor, checked for wrapping without a copy.
struct Imported {
  DLTensor* t = nullptr;
  void* managed = nullptr;
  bool versioned = false;
  float* data = nullptr;
  int64_t shape[4] = {1, 1, 1, 1};
  int64_t strides[4] = {1, 1, 1, 1};
  int ndim = 0;
  PyCA::MemoryType memType = PyCA::MEM_HOST;
};

static std::string shapeText(const int64_t* v, int n) {
  std::ostringstream os;
  os << "(";
  for (int i = 0; i < n; ++i) os << (i ? ", " : "") << v[i];
  os << (n == 1 ? ",)" : ")");
  return os.str();
}

// "" when the capsule's tensor can be wrapped as kind 0 (an image: (X, Y) or
// (X, Y, Z)) or kind 1 (a field: (3, X, Y) or (3, X, Y, Z)) without a copy,
// else the reason. Does not consume the capsule.
static std::string inspect(PyObject* cap, int kind, Imported* out) {
  Imported im;
  if (PyCapsule_IsValid(cap, kName)) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, kName));
    im.t = &m->dl_tensor;
    im.managed = m;
  } else if (PyCapsule_IsValid(cap, kNameV)) {
    auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(cap, kNameV));
    if (m->version.major != 1) {
      std::ostringstream os;
      os << "unsupported DLPack version " << m->version.major << "." << m->version.minor
         << " (PyCA reads 0.x and 1.x)";
      return os.str();
    }
    if (m->flags & kFlagReadOnly)
      return "the tensor is read-only (PyCA images are writable)";
    im.t = &m->dl_tensor;
    im.managed = m;
    im.versioned = true;
  } else {
    return "not an unconsumed DLPack capsule ('dltensor' or 'dltensor_versioned')";
  }
  PyErr_Clear();
  const DLTensor& t = *im.t;
  if (t.dtype.code != kDLFloat || t.dtype.bits != 32 || t.dtype.lanes != 1) {
    std::ostringstream os;
    os << "the tensor is not float32 (DLPack dtype code " << int(t.dtype.code) << ", "
       << int(t.dtype.bits) << " bits, " << t.dtype.lanes << " lanes)";
    return os.str();
  }
  switch (t.device.device_type) {
    case kDLCPU: im.memType = PyCA::MEM_HOST; break;
    case kDLCUDAHost: im.memType = PyCA::CudaCompiled() ? PyCA::MEM_HOST_PINNED : PyCA::MEM_HOST; break;
    case kDLCUDA: {
      int cur = PyCA::GetCurrentCUDADevice();
      if (cur < 0) return "the tensor is in CUDA device memory but no CUDA device is usable here";
      if (t.device.device_id != cur) {
        std::ostringstream os;
        os << "the tensor is on CUDA device " << t.device.device_id
           << " but the current device is " << cur << " (SetCUDADevice)";
        return os.str();
      }
      im.memType = PyCA::MEM_DEVICE;
      break;
    }
    default: {
      std::ostringstream os;
      os << "DLPack device type " << t.device.device_type
         << " is not supported (CPU 1, CUDA 2, CUDA host 3)";
      return os.str();
    }
  }
  int lead = kind == 1 ? 1 : 0;
  if (t.ndim < 2 + lead || t.ndim > 3 + lead || !t.shape) {
    std::ostringstream os;
    os << "expected a " << (kind == 1 ? "(3, X, Y) or (3, X, Y, Z)" : "2-D (X, Y) or 3-D (X, Y, Z)")
       << " tensor, got " << t.ndim << " dimensions";
    return os.str();
  }
  im.ndim = t.ndim;
  int64_t count = 1;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 0 || t.shape[i] > 0x7fffffff) return "invalid shape " + shapeText(t.shape, t.ndim);
    im.shape[i] = t.shape[i];
    count *= t.shape[i];
  }
  if (kind == 1 && t.shape[0] != 3)
    return "expected 3 components along the first axis, got shape " + shapeText(t.shape, t.ndim);
  if (t.strides) {
    for (int i = 0; i < t.ndim; ++i) im.strides[i] = t.strides[i];
  } else {  // compact row-major
    int64_t s = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      im.strides[i] = s;
      s *= t.shape[i];
    }
  }
  if (t.byte_offset % sizeof(float) != 0) return "the tensor's byte offset is not a multiple of 4";
  im.data = count > 0 ? reinterpret_cast<float*>(static_cast<char*>(t.data) + t.byte_offset) : nullptr;
  if (count > 0 && !t.data) return "the tensor has no data";
  // x fastest: strides (1, X, X*Y) over the spatial axes (any stride along an axis of extent 1).
  int64_t X = im.shape[lead], Y = im.shape[lead + 1], Z = (t.ndim == 3 + lead) ? im.shape[lead + 2] : 1;
  int64_t sx = im.strides[lead], sy = im.strides[lead + 1], sz = (t.ndim == 3 + lead) ? im.strides[lead + 2] : 0;
  bool ok = (X <= 1 || sx == 1) && (Y <= 1 || sy == X) && (Z <= 1 || sz == X * Y);
  if (!ok && count > 0)
    return "the layout is not x-fastest (shape " + shapeText(im.shape, t.ndim) + ", strides " +
           shapeText(im.strides, t.ndim) +
           " in elements); PyCA needs element strides (1, X, X*Y) over (X, Y, Z), as asnp() "
           "gives: e.g. a NumPy array in Fortran order, or a torch tensor t.permute(2, 1, 0) "
           "of a contiguous (Z, Y, X) tensor";
  if (out) *out = im;
  return std::string();
}

// Renames the capsule (the consumer now owns the tensor) and returns the
// owner of its buffer: the producer's deleter runs when it is released.
static std::shared_ptr<float> consume(PyObject* cap, const Imported& im) {
  if (PyCapsule_SetName(cap, im.versioned ? kUsedNameV : kUsedName) != 0) {
    PyErr_Clear();
    throw PyCA::PyCAException(__FILE__, __LINE__, "could not take ownership of the DLPack capsule");
  }
  void* managed = im.managed;
  bool versioned = im.versioned;
  auto release = [managed, versioned](float*) {
    if (versioned) {
      auto* m = static_cast<DLManagedTensorVersioned*>(managed);
      if (m->deleter) m->deleter(m);
    } else {
      auto* m = static_cast<DLManagedTensor*>(managed);
      if (m->deleter) m->deleter(m);
    }
  };
  // On failure (bad_alloc) the shared_ptr constructor runs release itself.
  return std::shared_ptr<float>(im.data, release);
}

static PyCA::GridInfo importGrid(const Imported& im, int lead) {
  int z = (im.ndim == 3 + lead) ? int(im.shape[lead + 2]) : 1;
  return PyCA::GridInfo(PyCA::Vec3Di(int(im.shape[lead]), int(im.shape[lead + 1]), z));
}

}  // namespace pyca_dlpack
%}
