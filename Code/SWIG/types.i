// types.i -- constants, Vec3D, GridInfo, Mat3D/Aff3D (affine.i), Image3D, Field3D.

// ---- constants and enums ---------------------------------------------------
%ignore DEFAULT_INTERP_METHOD;
%include "pycaConst.h"
%include "mem.h"
%ignore PyCA::isHostAccessible;

// StreamT is an opaque CUDA stream pointer; Python passes None or what
// GetStream returns.
%include "estream.h"

// ---- Vec3D -------------------------------------------------------------------
%ignore PyCA::Vec3D::operator[];
%ignore PyCA::Vec3D::writeASCII;
%ignore PyCA::Vec3D::readASCII;
%ignore PyCA::Vec3D::writeBinary;
%ignore PyCA::Vec3D::readBinary;
%ignore PyCA::Vec3D::operator<;
%ignore PyCA::Vec3D::operator<=;
%ignore PyCA::Vec3D::operator>;
%ignore PyCA::Vec3D::operator>=;
// Arithmetic is provided in Python (below) so that it covers mixed types,
// reflected forms and unary minus uniformly.
%ignore PyCA::Vec3D::operator-() const;
%ignore PyCA::Vec3D::operator+;
%ignore PyCA::Vec3D::operator-;
%ignore PyCA::Vec3D::operator*;
%ignore PyCA::Vec3D::operator/;
%ignore PyCA::Vec3D::operator+=;
%ignore PyCA::Vec3D::operator-=;
%ignore PyCA::Vec3D::operator*=;
%ignore PyCA::Vec3D::operator/=;
%ignore PyCA::operator+;
%ignore PyCA::operator*;
%ignore PyCA::operator<<;
%ignore PyCA::operator>>;
%ignore PyCA::Vec3D::Vec3D(const Vec3D<U>&);

// The legacy wraps the copy constructors: Vec3Df(v), GridInfo(g).
%copyctor PyCA::Vec3D;
%include "pycaKernel.h"
%include "Vec3D.h"

%extend PyCA::Vec3D {
  std::string __str__() const {
    std::ostringstream os;
    os << *$self;
    return os.str();
  }
  PyCA::Vec3D<T> copy() const { return *$self; }
  void clone(const PyCA::Vec3D<T>& o) { *$self = o; }
  %pythoncode %{
    __repr__ = __str__

    def tolist(self):
        return [self.x, self.y, self.z]

    def fromlist(self, l):
        self.x, self.y, self.z = l
        return self

    def __iter__(self):
        return iter((self.x, self.y, self.z))

    def __len__(self):
        return 3

    def __getitem__(self, i):
        return (self.x, self.y, self.z)[i]

    def __setitem__(self, i, v):
        self.set(i, v)
  %}
}
%{
#include <sstream>
%}

%template(Vec3Di) PyCA::Vec3D<int>;
%template(Vec3Df) PyCA::Vec3D<float>;
%template(Vec3Dd) PyCA::Vec3D<double>;
%template(Vec3Du) PyCA::Vec3D<unsigned int>;

// Python arithmetic for Vec3Di and Vec3Df: + - * / with a Vec3D or a number,
// in place, reflected (2 * v) and unary minus. Vec3Di / int stays integer
// (C++ division, truncating towards zero) as in the legacy module.
%pythoncode %{
def _vec_parts(o):
    if isinstance(o, (Vec3Di, Vec3Df, Vec3Dd, Vec3Du)):
        return (o.x, o.y, o.z)
    if isinstance(o, (int, float)) or hasattr(o, '__float__'):
        return (o, o, o)
    return None

def _vec_result_type(a, b):
    if isinstance(a, Vec3Df) or isinstance(b, Vec3Df) or isinstance(b, float) or isinstance(a, float):
        return Vec3Df
    return type(a) if isinstance(a, (Vec3Di, Vec3Df)) else type(b)

def _vec_div(x, y, integral):
    if integral:
        q = abs(int(x)) // abs(int(y))
        return q if (x >= 0) == (y >= 0) else -q
    return x / y

def _vec_binop(a, b, op, name):
    pa, pb = _vec_parts(a), _vec_parts(b)
    if pa is None or pb is None:
        return NotImplemented
    T = _vec_result_type(a, b)
    if name == 'div':
        integral = T is Vec3Di
        r = [_vec_div(x, y, integral) for x, y in zip(pa, pb)]
    else:
        r = [op(x, y) for x, y in zip(pa, pb)]
    if T is Vec3Di:
        r = [int(v) for v in r]
    return T(*r)

def _install_vec_ops(cls):
    import operator as _op
    def make(op, name, reflected=False):
        if reflected:
            return lambda self, o: _vec_binop(o, self, op, name)
        return lambda self, o: _vec_binop(self, o, op, name)
    def make_inplace(op, name):
        def f(self, o):
            r = _vec_binop(self, o, op, name)
            if r is NotImplemented:
                return r
            self.x, self.y, self.z = type(self.x)(r.x), type(self.y)(r.y), type(self.z)(r.z)
            return self
        return f
    for pyname, op, name in (('add', _op.add, 'add'), ('sub', _op.sub, 'sub'),
                             ('mul', _op.mul, 'mul'), ('truediv', None, 'div')):
        setattr(cls, '__%s__' % pyname, make(op, name))
        setattr(cls, '__r%s__' % pyname, make(op, name, True))
        setattr(cls, '__i%s__' % pyname, make_inplace(op, name))
    # the legacy (Python 2) names of / and /=, and of our reflected /
    cls.__div__, cls.__idiv__, cls.__rdiv__ = cls.__truediv__, cls.__itruediv__, cls.__rtruediv__
    cls.__neg__ = lambda self: type(self)(-self.x, -self.y, -self.z)

for _cls in (Vec3Di, Vec3Df):
    _install_vec_ops(_cls)
del _cls
%}

// ---- GridInfo ------------------------------------------------------------------
%ignore PyCA::GridInfo::size() const;
%ignore PyCA::GridInfo::spacing() const;
%ignore PyCA::GridInfo::origin() const;
%ignore PyCA::GridInfo::read;
%ignore PyCA::CheckGridSize;

// Accessors return live references (legacy: grid.spacing().z = 1.0 works);
// unlike the legacy, the returned proxy keeps its owner alive.
%define PYCA_KEEPALIVE(method)
%pythonappend method %{
    val._pyca_owner = self
%}
%enddef
PYCA_KEEPALIVE(PyCA::GridInfo::size)
PYCA_KEEPALIVE(PyCA::GridInfo::spacing)
PYCA_KEEPALIVE(PyCA::GridInfo::origin)

%copyctor PyCA::GridInfo;
%include "GridInfo.h"

%extend PyCA::GridInfo {
  std::string __str__() const { return $self->toString(); }
  PyCA::GridInfo copy() const { return *$self; }
  void clone(const PyCA::GridInfo& o) { *$self = o; }
  %pythoncode %{
    __repr__ = __str__
    __hash__ = None
  %}
}

// ---- Mat3D, Aff3D ---------------------------------------------------------------
%include "affine.i"

// ---- containers -------------------------------------------------------------------
%ignore PyCA::Image3D::Image3D(const GridInfo&, const MemPool<float>&);
%ignore PyCA::Image3D::get();
%ignore PyCA::Image3D::get() const;
%ignore PyCA::Image3D::operator();
%ignore PyCA::Image3D::getMemPool;
%ignore PyCA::Image3D::grid() const;
%ignore PyCA::Image3D::size() const;
%ignore PyCA::Image3D::spacing() const;
%ignore PyCA::Image3D::origin() const;
%ignore PyCA::Field3D::Field3D(const GridInfo&, const MemPool<float>&, const MemPool<float>&, const MemPool<float>&);
// The legacy raw-pointer attributes f.x, f.y, f.z (read only), for the
// raw-array operator forms such as Gradient(g, f.x). Like the legacy
// pointer proxies they do not keep f alive.
%immutable PyCA::Field3D::x;
%immutable PyCA::Field3D::y;
%immutable PyCA::Field3D::z;
%ignore PyCA::Field3D::getX;
%ignore PyCA::Field3D::getY;
%ignore PyCA::Field3D::getZ;
%ignore PyCA::Field3D::getComponent;
%ignore PyCA::Field3D::getMemPoolX;
%ignore PyCA::Field3D::getMemPoolY;
%ignore PyCA::Field3D::getMemPoolZ;
%ignore PyCA::Field3D::getMemPool;
%ignore PyCA::Field3D::grid() const;
%ignore PyCA::Field3D::size() const;
%ignore PyCA::Field3D::spacing() const;
%ignore PyCA::Field3D::origin() const;

PYCA_KEEPALIVE(PyCA::Image3D::grid)
PYCA_KEEPALIVE(PyCA::Image3D::size)
PYCA_KEEPALIVE(PyCA::Image3D::spacing)
PYCA_KEEPALIVE(PyCA::Image3D::origin)
PYCA_KEEPALIVE(PyCA::Field3D::grid)
PYCA_KEEPALIVE(PyCA::Field3D::size)
PYCA_KEEPALIVE(PyCA::Field3D::spacing)
PYCA_KEEPALIVE(PyCA::Field3D::origin)

%{
// NumPy views: the array's base is a capsule holding a reference to the
// buffer, so a view stays valid after its image is deleted or resized (and a
// managed pool stays out of circulation while a view of it lives).
static void pyca_buffer_capsule_free(PyObject* cap) {
  delete static_cast<std::shared_ptr<float>*>(PyCapsule_GetPointer(cap, "PyCA.buffer"));
}

static PyObject* pyca_view(const PyCA::MemPool<float>& pool, const float* data, const PyCA::Vec3Di& s) {
  if (pool.memType() == PyCA::MEM_DEVICE)
    throw PyCA::PyCAException(__FILE__, __LINE__,
        "asnp() needs host memory but the data is in gpu_device_memory; "
        "use toType(MEM_HOST) or PyCA.Common.AsNPCopy()");
  PyCA::GridInfo g(s);
  if (g.nVox() > pool.capacity())
    throw PyCA::PyCAException(__FILE__, __LINE__, "grid too large for current image");
  npy_intp dims[3] = {s.x > 0 ? s.x : 0, s.y > 0 ? s.y : 0, s.z > 0 ? s.z : 0};
  npy_intp strides[3] = {npy_intp(sizeof(float)), npy_intp(sizeof(float)) * s.x,
                         npy_intp(sizeof(float)) * s.x * s.y};
  if (!data) return PyArray_ZEROS(3, dims, NPY_FLOAT32, 1);
  PyObject* arr = PyArray_New(&PyArray_Type, 3, dims, NPY_FLOAT32, strides,
                              const_cast<float*>(data), 0,
                              NPY_ARRAY_WRITEABLE | NPY_ARRAY_F_CONTIGUOUS | NPY_ARRAY_ALIGNED, NULL);
  if (!arr) return NULL;
  PyObject* cap = PyCapsule_New(new std::shared_ptr<float>(pool.sharedPtr()), "PyCA.buffer",
                                pyca_buffer_capsule_free);
  if (!cap || PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(arr), cap) < 0) {
    Py_XDECREF(cap);
    Py_DECREF(arr);
    return NULL;
  }
  return arr;
}
%}

%include "interop_impl.i"

%ignore PyCA::AllocateMemory;
%ignore PyCA::FreeMemory;
%ignore PyCA::CopyMemory;
// None or a non-str is a TypeError, like any wrong argument type (SWIG's
// std::string typemap calls None a ValueError "invalid null reference").
%pythonprepend PyCA::SetCPUDispatch %{
    if len(args) != 1 or not isinstance(args[0], str):
        raise TypeError("SetCPUDispatch(path): path must be a str: 'auto', 'baseline' or 'avx2'")
%}
%include "MemAlloc.h"
%include "Image3D.h"
%include "Field3D.h"


// These build NumPy objects, so they keep the GIL (the module is generated
// with -threads: every other call releases it while C++ runs).
%nothreadallow PyCA::Image3D::asnp;
%nothreadallow PyCA::Field3D::x_asnp;
%nothreadallow PyCA::Field3D::y_asnp;
%nothreadallow PyCA::Field3D::z_asnp;

%newobject PyCA::Image3D::copy;
%newobject PyCA::Field3D::copy;

%extend PyCA::Image3D {
  std::string __str__() const { return $self->toString(); }
  float __call__(size_t i) const { return $self->get(i); }
  float __call__(int x, int y, int z) const { return $self->get(x, y, z); }
  /// A new Image3D (same grid and memory type) holding a copy of the data.
  PyCA::Image3D* copy() const {
    PyCA::Image3D* c = new PyCA::Image3D($self->grid(), $self->memType());
    PyCA::CopyMemory(c->get(), c->memType(), $self->get(), $self->memType(),
                     $self->nVox() * sizeof(float));
    return c;
  }
  /// Zero-copy float32 view, shape (X, Y, Z), Fortran order. Host memory only.
  PyObject* asnp() { return pyca_view($self->getMemPool(), $self->get(), $self->size()); }
  /// Address of the data.
  size_t rawptr() const { return reinterpret_cast<size_t>($self->get()); }
  %pythoncode %{
    __repr__ = __str__

    def tolist(self):
        """Nested [x][y][z] lists of the voxel values (any memory type)."""
        return _host_array(self).tolist()

    def fromlist(self, l):
        """Fills the image from nested [x][y][z] lists, resizing if the size differs."""
        _fill_from_array(self, l)
  %}
}

%extend PyCA::Field3D {
  std::string __str__() const { return $self->toString(); }
  PyCA::Vec3Df __call__(size_t i) const { return $self->get(i); }
  PyCA::Vec3Df __call__(int x, int y, int z) const { return $self->get(x, y, z); }
  PyCA::Field3D* copy() const {
    PyCA::Field3D* c = new PyCA::Field3D($self->grid(), $self->memType());
    for (int d = 0; d < 3; ++d)
      PyCA::CopyMemory(c->getComponent(d), c->memType(), $self->getComponent(d), $self->memType(),
                       $self->nVox() * sizeof(float));
    return c;
  }
  PyObject* x_asnp() { return pyca_view($self->getMemPoolX(), $self->getX(), $self->size()); }
  PyObject* y_asnp() { return pyca_view($self->getMemPoolY(), $self->getY(), $self->size()); }
  PyObject* z_asnp() { return pyca_view($self->getMemPoolZ(), $self->getZ(), $self->size()); }
  size_t rawptr_x() const { return reinterpret_cast<size_t>($self->getX()); }
  size_t rawptr_y() const { return reinterpret_cast<size_t>($self->getY()); }
  size_t rawptr_z() const { return reinterpret_cast<size_t>($self->getZ()); }
  %pythoncode %{
    __repr__ = __str__

    def asnp(self):
        """Tuple of three zero-copy float32 views (x, y, z), each shaped (X, Y, Z)."""
        return (self.x_asnp(), self.y_asnp(), self.z_asnp())

    def tolist(self):
        """Nested [x][y][z][3] lists (any memory type)."""
        return _host_array(self).tolist()

    def fromlist(self, l):
        """Fills the field from nested [x][y][z][3] lists, resizing if the size differs."""
        _fill_from_array(self, l)
  %}
}

%pythoncode %{
def _host_array(obj):
    """A NumPy copy of an Image3D (X, Y, Z) or Field3D (X, Y, Z, 3), from any memory."""
    import numpy as np
    if obj.memType() == MEM_DEVICE:
        tmp = obj.copy()
        tmp.toType(MEM_HOST)
        obj = tmp
    if isinstance(obj, Field3D):
        return np.stack([np.array(v) for v in obj.asnp()], axis=-1)
    return np.array(obj.asnp())

def _fill_from_array(obj, l):
    import numpy as np
    if l is None or isinstance(l, (str, bytes)) or not hasattr(l, '__len__'):
        raise TypeError("fromlist expects nested lists, got %s" % type(l).__name__)
    a = np.asarray(l, dtype=np.float32)
    want = 4 if isinstance(obj, Field3D) else 3
    if a.ndim != want or (want == 4 and a.shape[3] != 3):
        raise ValueError("expected nested lists of shape (X, Y, Z%s), got %s" % (", 3" if want == 4 else "", a.shape))
    size = Vec3Di(*[int(v) for v in a.shape[:3]])
    if tuple(obj.size()) != tuple(a.shape[:3]):
        g = GridInfo(size, obj.spacing().copy(), obj.origin().copy())
        obj.resize(g)
    host = obj if obj.memType() != MEM_DEVICE else None
    if host is None:
        host = obj.copy()
        host.toType(MEM_HOST)
    if want == 4:
        for d, v in enumerate(host.asnp()):
            v[...] = a[..., d]
    else:
        host.asnp()[...] = a
    if host is not obj:
        Copy(obj, host)
%}

// ---- DLPack and __cuda_array_interface__ ---------------------------------------
%include "interop.i"
