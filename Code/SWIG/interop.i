// interop.i -- DLPack and __cuda_array_interface__ for Image3D and Field3D.
//
// Layout (the same as asnp()): an Image3D is a float32 tensor of shape
// (X, Y, Z) with element strides (1, X, X*Y), x fastest; a field component
// is the same; a whole Field3D is (3, X, Y, Z) with strides
// (c, 1, X, X*Y) -- only when its three components lie in one buffer at a
// constant distance c (fields imported with Field3D.FromDLPack from one
// tensor); plain fields allocate their components separately, so export
// them per component (f.x_dlpack(), f.y_dlpack(), f.z_dlpack()).
//
// Ownership: an exported tensor holds a reference to the buffer (the
// DLManagedTensor's deleter drops it), like asnp()'s base, so it stays
// valid after `del im`. An imported tensor is owned by the MemPool of the
// new image: its producer's deleter runs when the last PyCA object (or view)
// using the buffer is gone.
//
// The DLPack ABI (dlpack.h, versions 0.x and 1.x) is declared below: no
// DLPack header or library is needed.

%ignore PyCA::GetCurrentCUDADevice;
%ignore PyCA::GetCUDAPointerDevice;

// The C++ helpers (namespace pyca_dlpack) are in interop_impl.i, included by
// types.i before the containers so that the %extend bodies below see them.

// Capsule handling keeps the GIL.
%nothreadallow _DLPackShareProblem;
%nothreadallow _ImageFromDLPackCapsule;
%nothreadallow _FieldFromDLPackCapsule;
%nothreadallow _FieldFromImages;
%nothreadallow PyCA::Image3D::_dlpack_capsule;
%nothreadallow PyCA::Image3D::_dlpack_device;
%nothreadallow PyCA::Field3D::_dlpack_capsule;
%nothreadallow PyCA::Field3D::_dlpack_component_capsule;
%nothreadallow PyCA::Field3D::_dlpack_device;
%newobject _ImageFromDLPackCapsule;
%newobject _FieldFromDLPackCapsule;
%newobject _FieldFromImages;

%inline %{
/// "" if the DLPack capsule can be wrapped without a copy as an image
/// (kind 0) or a field (kind 1), else why not. Does not consume it.
std::string _DLPackShareProblem(PyObject* capsule, int kind) {
  return pyca_dlpack::inspect(capsule, kind, nullptr);
}

/// A new Image3D on the capsule's memory (consumes the capsule).
PyCA::Image3D* _ImageFromDLPackCapsule(PyObject* capsule) {
  pyca_dlpack::Imported im;
  std::string why = pyca_dlpack::inspect(capsule, 0, &im);
  if (!why.empty()) throw PyCA::PyCAValueException(__FILE__, __LINE__, why.c_str());
  PyCA::GridInfo g = pyca_dlpack::importGrid(im, 0);
  std::shared_ptr<float> owner = pyca_dlpack::consume(capsule, im);
  if (g.nVox() == 0) return new PyCA::Image3D(g, PyCA::MemPool<float>(im.memType));
  return new PyCA::Image3D(g, PyCA::MemPool<float>(owner, g.nVox(), im.memType));
}

/// A new Field3D on the memory of a (3, X, Y[, Z]) tensor (consumes the capsule).
PyCA::Field3D* _FieldFromDLPackCapsule(PyObject* capsule) {
  pyca_dlpack::Imported im;
  std::string why = pyca_dlpack::inspect(capsule, 1, &im);
  if (!why.empty()) throw PyCA::PyCAValueException(__FILE__, __LINE__, why.c_str());
  PyCA::GridInfo g = pyca_dlpack::importGrid(im, 1);
  std::shared_ptr<float> owner = pyca_dlpack::consume(capsule, im);
  if (g.nVox() == 0) {
    PyCA::MemPool<float> e(im.memType);
    return new PyCA::Field3D(g, e, e, e);
  }
  PyCA::MemPool<float> px(std::shared_ptr<float>(owner, im.data), g.nVox(), im.memType);
  PyCA::MemPool<float> py(std::shared_ptr<float>(owner, im.data + im.strides[0]), g.nVox(), im.memType);
  PyCA::MemPool<float> pz(std::shared_ptr<float>(owner, im.data + 2 * im.strides[0]), g.nVox(), im.memType);
  return new PyCA::Field3D(g, px, py, pz);
}

/// A new Field3D whose components share the buffers of three images.
PyCA::Field3D* _FieldFromImages(PyCA::Image3D& x, PyCA::Image3D& y, PyCA::Image3D& z) {
  if (x.size() != y.size() || x.size() != z.size())
    throw PyCA::PyCAValueException(__FILE__, __LINE__, "the three components have different sizes");
  if (x.memType() != y.memType() || x.memType() != z.memType())
    throw PyCA::PyCAValueException(__FILE__, __LINE__, "the three components are in different memory types");
  PyCA::GridInfo g(x.size());
  return new PyCA::Field3D(g, x.getMemPool(), y.getMemPool(), z.getMemPool());
}
%}

%extend PyCA::Image3D {
  /// The DLPack capsule of the (X, Y, Z) tensor (see interop.i).
  PyObject* _dlpack_capsule(bool versioned, bool copied = false) {
    return pyca_dlpack::exportVolume($self->getMemPool(), $self->get(), $self->size(), versioned, copied);
  }
  PyObject* _dlpack_device() { return pyca_dlpack::deviceTuple($self->memType(), $self->get()); }
  %pythoncode %{
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export: a float32 tensor of shape (X, Y, Z) with element
        strides (1, X, X*Y) (x fastest, like asnp()), sharing the image's
        memory (copy=True exports a copy). The tensor keeps the buffer alive.
        Host memory is device (kDLCPU, 0), pinned (kDLCUDAHost, 0), device
        memory (kDLCUDA, id)."""
        return _dlpack_export(self, lambda o, v, c: o._dlpack_capsule(v, c),
                              stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        """(device_type, device_id) of the DLPack protocol."""
        return self._dlpack_device()

    @property
    def __cuda_array_interface__(self):
        """CUDA Array Interface (version 3) of device images; AttributeError otherwise."""
        return _cuda_array_interface(self, self.rawptr(), tuple(self.size()))

    @staticmethod
    def FromDLPack(obj, copy=None):
        """A new Image3D on the memory of a DLPack producer (a NumPy array,
        a torch tensor, ... or a DLPack capsule) of float32 (X, Y) or
        (X, Y, Z) data with x fastest (element strides (1, X, X*Y), e.g. a
        Fortran-ordered NumPy array). The image keeps the producer's memory
        alive; writes are visible both ways. Grid spacing 1, origin 0.

        copy=None (default): share when the layout allows, else copy (host
        data only: any dtype and layout NumPy can read); copy=False: share
        or raise BufferError; copy=True: always copy."""
        return _image_from_dlpack(obj, copy)
  %}
}

%extend PyCA::Field3D {
  /// The DLPack capsule of the (3, X, Y, Z) tensor, when the components lie
  /// in one buffer at a constant distance; raises otherwise.
  PyObject* _dlpack_capsule(bool versioned, bool copied = false) {
    int64_t c = 0;
    if (!pyca_dlpack::componentStride(*$self, &c))
      throw PyCA::PyCAValueException(__FILE__, __LINE__,
          "the components of this Field3D are separate buffers, so the field is not one "
          "DLPack tensor; export the components: f.x_dlpack(), f.y_dlpack(), f.z_dlpack()");
    pyca_dlpack::checkView($self->getMemPool(0), $self->size());
    const PyCA::Vec3Di& s = $self->size();
    int64_t shape[4] = {3, s.x, s.y, s.z};
    int64_t strides[4] = {c, 1, int64_t(s.x), int64_t(s.x) * s.y};
    return pyca_dlpack::exportTensor($self->getMemPool(0), $self->getX(), 4, shape, strides, versioned, copied);
  }
  /// The DLPack capsule of component d (0, 1, 2): (X, Y, Z), x fastest.
  PyObject* _dlpack_component_capsule(int d, bool versioned, bool copied = false) {
    if (d < 0 || d > 2) throw std::out_of_range("component index must be 0, 1 or 2");
    return pyca_dlpack::exportVolume($self->getMemPool(d), $self->getComponent(d), $self->size(), versioned, copied);
  }
  PyObject* _dlpack_device() { return pyca_dlpack::deviceTuple($self->memType(), $self->getX()); }
  /// Whether the field is one (3, X, Y, Z) DLPack tensor (see __dlpack__).
  bool _dlpack_whole() const {
    int64_t c = 0;
    return pyca_dlpack::componentStride(*$self, &c);
  }
  %pythoncode %{
    def x_dlpack(self):
        """Component x as a DLPack / CUDA-array-interface exporter (X, Y, Z), x fastest."""
        return FieldComponent(self, 0)

    def y_dlpack(self):
        """Component y as a DLPack / CUDA-array-interface exporter."""
        return FieldComponent(self, 1)

    def z_dlpack(self):
        """Component z as a DLPack / CUDA-array-interface exporter."""
        return FieldComponent(self, 2)

    def dlpack(self):
        """The three component exporters (x, y, z), like asnp()'s three views."""
        return (FieldComponent(self, 0), FieldComponent(self, 1), FieldComponent(self, 2))

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export of the whole field as (3, X, Y, Z) with element
        strides (c, 1, X, X*Y). Only for fields whose components lie in one
        buffer at a constant distance c (fields made by Field3D.FromDLPack
        from one tensor); plain fields raise BufferError: export their
        components with x_dlpack(), y_dlpack(), z_dlpack()."""
        if copy is True or not self._dlpack_whole():
            raise BufferError("the components of this Field3D are separate buffers (a copy "
                              "would be too), so the field is not one DLPack tensor; export "
                              "the components: f.x_dlpack(), f.y_dlpack(), f.z_dlpack()")
        return _dlpack_export(self, lambda o, v, c: o._dlpack_capsule(v, c),
                              stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        return self._dlpack_device()

    @staticmethod
    def FromDLPack(obj, copy=None):
        """A new Field3D on the memory of DLPack producers: one float32
        tensor of shape (3, X, Y[, Z]) (component axis first, each component
        x fastest) or a sequence of three (X, Y[, Z]) producers (x, y, z).
        The field keeps the producers alive. copy as in Image3D.FromDLPack
        (a copy has three separate component buffers)."""
        return _field_from_dlpack(obj, copy)
  %}
}

%pythoncode %{
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST = 1, 2, 3


class FieldComponent(object):
    """One component of a Field3D as a DLPack producer (``__dlpack__``,
    ``__dlpack_device__``) and, for device fields, a CUDA Array Interface
    (``__cuda_array_interface__``): shape (X, Y, Z), element strides
    (1, X, X*Y). Holds a reference to the field; exported tensors hold the
    component's buffer."""
    __slots__ = ('field', 'index')

    def __init__(self, field, index):
        if not isinstance(field, Field3D):
            raise TypeError("FieldComponent needs a Field3D, got %s" % type(field).__name__)
        if not hasattr(index, '__index__') or isinstance(index, bool):
            raise TypeError("component index must be an integer, got %s" % type(index).__name__)
        index = int(index.__index__())
        if index not in (0, 1, 2):
            raise IndexError("component index must be 0, 1 or 2")
        self.field = field
        self.index = index

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        d = self.index
        return _dlpack_export(self.field, lambda o, v, c: o._dlpack_component_capsule(d, v, c),
                              stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        return self.field._dlpack_device()

    @property
    def __cuda_array_interface__(self):
        f = self.field
        return _cuda_array_interface(f, (f.rawptr_x(), f.rawptr_y(), f.rawptr_z())[self.index],
                                     tuple(f.size()))

    def __repr__(self):
        return "FieldComponent(%s of %s)" % ("xyz"[self.index], self.field)


def _dlpack_export(obj, make_capsule, stream, max_version, dl_device, copy):
    """The capsule make_capsule(src, versioned, copied) of obj (an Image3D or
    Field3D), or of a copy of it when copy is True."""
    copy = _check_copy_arg(copy)
    dev = obj._dlpack_device()
    if dl_device is not None and tuple(int(v) for v in dl_device) != tuple(dev):
        raise BufferError("cannot export to DLPack device %s: the data is on %s (use toType or "
                          "Copy first)" % (tuple(dl_device), tuple(dev)))
    if dev[0] == _DL_CUDA:
        # PyCA runs its kernels on the legacy default stream: finish them
        # before a consumer on any stream reads (stream -1: the consumer
        # synchronises itself).
        if stream != -1:
            CheckCUDAError("__dlpack__", 0, "DLPack export")
    elif stream is not None:
        raise BufferError("stream must be None for host data, got %r" % (stream,))
    versioned = max_version is not None and int(max_version[0]) >= 1
    if copy is True:
        return make_capsule(obj.copy(), versioned, True)
    return make_capsule(obj, versioned, False)


def _cuda_array_interface(owner, ptr, shape):
    if owner.memType() != MEM_DEVICE:
        raise AttributeError("__cuda_array_interface__ exists only for device data (this is %s)"
                             % MemTypeName(owner.memType()))
    x, y = shape[0], shape[1]
    return {'shape': tuple(int(s) for s in shape), 'typestr': '<f4', 'descr': [('', '<f4')],
            'data': (int(ptr), False), 'strides': (4, 4 * x, 4 * x * y), 'version': 3,
            # PyCA's kernels run on the legacy default stream (CUDA_ARRAY_INTERFACE: 1).
            'stream': 1}


class _CapsuleProducer(object):
    """Presents a DLPack capsule to numpy.from_dlpack."""

    def __init__(self, capsule, device):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, *args, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


def _capsule_from(obj):
    """(capsule, device) of a DLPack producer or capsule."""
    if type(obj).__name__ == 'PyCapsule':
        return obj, None
    if not hasattr(obj, '__dlpack__'):
        raise TypeError("expected a DLPack producer (an object with __dlpack__, e.g. a NumPy "
                        "array or a torch tensor) or a DLPack capsule, got %s" % type(obj).__name__)
    dev = tuple(obj.__dlpack_device__()) if hasattr(obj, '__dlpack_device__') else (_DL_CPU, 0)
    stream = 1 if dev[0] == _DL_CUDA else None
    try:
        cap = obj.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:
        cap = obj.__dlpack__(stream=stream) if stream is not None else obj.__dlpack__()
    return cap, dev


def _host_copy_from(cap, dev, kind):
    import numpy as np
    if dev is not None and dev[0] == _DL_CUDA:
        raise BufferError("cannot copy this CUDA tensor: %s" % _DLPackShareProblem(cap, kind))
    try:
        a = np.from_dlpack(_CapsuleProducer(cap, dev if dev is not None else (_DL_CPU, 0)))
    except (TypeError, ValueError, BufferError, RuntimeError) as e:
        raise BufferError("cannot read the DLPack tensor with NumPy: %s" % e) from None
    return np.asarray(a, dtype=np.float32)


def _check_copy_arg(copy):
    """copy as None, True or False; TypeError for anything else."""
    if copy is None or copy is True or copy is False:
        return copy
    if type(copy).__name__ == 'bool_':  # numpy.bool_
        return bool(copy)
    raise TypeError("copy must be None, True or False, got %r" % (copy,))


def _shape_problem(why):
    return why.startswith(("expected", "not an unconsumed", "invalid shape"))


def _image_from_dlpack(obj, copy=None):
    copy = _check_copy_arg(copy)
    if isinstance(obj, Field3D):
        raise TypeError("a Field3D is not an image: use Field3D.FromDLPack, or a component "
                        "(f.x_dlpack())")
    cap, dev = _capsule_from(obj)
    why = _DLPackShareProblem(cap, 0)
    if not why:
        im = _ImageFromDLPackCapsule(cap)
        return im.copy() if copy is True else im
    if _shape_problem(why):
        raise ValueError(why)
    if copy is False:
        raise BufferError("cannot wrap the tensor without a copy: " + why)
    a = _host_copy_from(cap, dev, 0)
    if a.ndim not in (2, 3):
        raise ValueError("expected a 2-D (X, Y) or 3-D (X, Y, Z) tensor, got shape %s" % (a.shape,))
    a = a.reshape(a.shape + (1,) * (3 - a.ndim))
    im = Image3D(GridInfo(Vec3Di(*[int(s) for s in a.shape])), MEM_HOST)
    if a.size:
        im.asnp()[...] = a
    return im


def _field_from_dlpack(obj, copy=None):
    copy = _check_copy_arg(copy)
    if isinstance(obj, Field3D) and not obj._dlpack_whole():
        obj = obj.dlpack()  # separate component buffers: share each of them
    if isinstance(obj, (list, tuple)):
        if len(obj) != 3:
            raise ValueError("expected three component producers (x, y, z), got %d" % len(obj))
        comps = [_image_from_dlpack(o, copy) for o in obj]
        return _FieldFromImages(*comps)
    cap, dev = _capsule_from(obj)
    why = _DLPackShareProblem(cap, 1)
    if not why:
        f = _FieldFromDLPackCapsule(cap)
        return f.copy() if copy is True else f
    if _shape_problem(why):
        raise ValueError(why)
    if copy is False:
        raise BufferError("cannot wrap the tensor without a copy: " + why)
    a = _host_copy_from(cap, dev, 1)
    if a.ndim not in (3, 4) or a.shape[0] != 3:
        raise ValueError("expected a (3, X, Y) or (3, X, Y, Z) tensor, got shape %s" % (a.shape,))
    a = a.reshape(a.shape + (1,) * (4 - a.ndim))
    f = Field3D(GridInfo(Vec3Di(*[int(s) for s in a.shape[1:]])), MEM_HOST)
    if a[0].size:
        for d, v in enumerate(f.asnp()):
            v[...] = a[d]
    return f
%}
