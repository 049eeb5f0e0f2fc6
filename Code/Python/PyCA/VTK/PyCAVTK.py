"""vtkImageData wrappers of NumPy arrays and Image3D/Field3D (legacy PyCAVTK).

Axis order: VTK stores point data x fastest, like PyCA, so voxel
(i, j, k) = arr[i, j, k] = im(x=i, y=j, z=k) is VTK point (i, j, k):
dimensions (X, Y, Z), spacing (sx, sy, sz), origin (ox, oy, oz) in that
order. (The legacy swapped the x and y metadata.)

Zero copy: a Fortran-ordered float32 array (``asnp()`` views are) is shared
with VTK; the vtkImageData keeps the array -- and through it the PyCA
buffer -- alive. Other layouts and dtypes need ``AutoCopy=True`` (a copy in
the right layout), else ValueError.
"""
from typing import Any, Optional, Sequence, Union

import numpy as np

import PyCA.Core as core

__all__ = ['WrapNPAsVTKImageData', 'WrapPyCAAsVTKImageData']

_SHAREABLE = (np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32,
              np.uint32, np.int64, np.uint64)


def _vtk():
    try:
        from vtkmodules.vtkCommonDataModel import vtkImageData
        from vtkmodules.util import numpy_support
    except ImportError as e:
        raise ImportError("PyCA.VTK needs VTK's Python package (%s): pip install vtk" % e) from e
    return vtkImageData, numpy_support


def _triple(v, name, default):
    if v is None:
        return default
    try:
        t = tuple(float(x) for x in v)
    except TypeError:
        raise TypeError("%s must be 3 numbers, got %r" % (name, v)) from None
    if len(t) != 3:
        raise ValueError("%s must be 3 numbers, got %r" % (name, v))
    return t


def WrapNPAsVTKImageData(nparr: np.ndarray, spacing: Optional[Sequence[float]] = None,
                         origin: Optional[Sequence[float]] = None, AutoCopy: bool = False,
                         name: str = 'scalars') -> Any:
    """A vtkImageData of a 2-D (X, Y), 3-D (X, Y, Z) array, or an
    (X, Y, Z, C) array of C-component points (C-component data is always
    copied: VTK interleaves components). Dimensions (X, Y, Z), ``spacing``
    and ``origin`` in x, y, z order (default 1 and 0). The array is shared
    without a copy when it is Fortran-ordered (x fastest) with a VTK numeric
    dtype; otherwise AutoCopy=True makes a copy and AutoCopy=False raises
    ValueError.

    Args:
        nparr (numpy.ndarray): a real numeric array of shape (X, Y), (X, Y, Z) or (X, Y, Z, C),
            indexed x first.
        spacing (3 numbers, optional): voxel spacing in x, y, z order (physical units, e.g. mm);
            default None = (1, 1, 1).
        origin (3 numbers, optional): position of voxel (0, 0, 0) in x, y, z order; default None =
            (0, 0, 0).
        AutoCopy (bool): copy the array when it cannot be shared (not Fortran-contiguous or a dtype
            VTK lacks); default False raises instead.
        name (str): name of the point-data array; default 'scalars'.

    Returns:
        vtk.vtkImageData: sharing the array's memory unless copied.

    Raises:
        ValueError: a shape or dtype VTK cannot hold, bad ``spacing``/``origin`` values, or an array
            that cannot be shared while ``AutoCopy=False``.
        TypeError: ``spacing``/``origin`` are not 3 numbers.
        ImportError: VTK is not installed (``pip install vtk``).
    """
    vtkImageData, ns = _vtk()
    a = np.asarray(nparr)
    if a.ndim == 2:
        a = a[:, :, np.newaxis]
    if a.ndim not in (3, 4):
        raise ValueError("expected a 2-D, 3-D or (X, Y, Z, C) array, got shape %s" % (a.shape,))
    if a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
        raise ValueError("VTK needs a real numeric array, got dtype %s" % a.dtype)
    ncomp = a.shape[3] if a.ndim == 4 else 1
    if a.ndim == 4:
        if not AutoCopy:
            raise ValueError("a multi-component (X, Y, Z, C) array is copied into VTK's "
                             "interleaved layout: pass AutoCopy=True")
        flat = np.ascontiguousarray(a.transpose(2, 1, 0, 3).reshape(-1, ncomp))
    else:
        shareable = a.flags.f_contiguous and a.dtype.type in _SHAREABLE and a.dtype.isnative
        if not shareable:
            if not AutoCopy:
                raise ValueError("the array cannot be shared with VTK without a copy (it needs "
                                 "Fortran order, x fastest, and a native numeric dtype; got "
                                 "dtype %s, strides %s): pass AutoCopy=True or np.asfortranarray"
                                 % (a.dtype, a.strides))
            a = np.asfortranarray(a, dtype=a.dtype.newbyteorder('=') if a.dtype.type in _SHAREABLE
                                  else np.float64)
        flat = a.reshape(-1, order='F')
    varr = ns.numpy_to_vtk(flat, deep=False)
    # numpy_to_vtk keeps `flat` on the VTK array; keep the original too (its
    # base holds the PyCA buffer for asnp() views).
    varr._pyca_keepalive = (flat, a)
    varr.SetName(name)
    img = vtkImageData()
    img.SetDimensions(*[int(s) for s in a.shape[:3]])
    img.SetSpacing(*_triple(spacing, "spacing", (1.0, 1.0, 1.0)))
    img.SetOrigin(*_triple(origin, "origin", (0.0, 0.0, 0.0)))
    img.GetPointData().SetScalars(varr)
    img._pyca_keepalive = varr
    return img


def WrapPyCAAsVTKImageData(im: Union[core.Image3D, core.Field3D], AutoCopy: bool = False) -> Any:
    """A vtkImageData of an Image3D (or Field3D) with its grid's size,
    spacing and origin (x, y, z order). A host or pinned Image3D is shared
    without a copy (the VTK data keeps the buffer alive; writes show both
    ways). Device data, and fields (3-component vectors, interleaved by
    VTK), need AutoCopy=True (a host copy), else ValueError.

    Args:
        im (Image3D or Field3D): the data to wrap.
        AutoCopy (bool): copy into VTK-owned memory; needed for device data and for fields; default
            False (share host/pinned images without a copy).

    Returns:
        vtk.vtkImageData: with the grid's dimensions, spacing and origin.

    Raises:
        TypeError: ``im`` is not an Image3D or Field3D.
        ValueError: device data or a Field3D with ``AutoCopy=False``.
        ImportError: VTK is not installed (``pip install vtk``).
    """
    if not isinstance(im, (core.Image3D, core.Field3D)):
        raise TypeError("expected an Image3D or Field3D, got %s" % type(im).__name__)
    sp, org = tuple(im.spacing()), tuple(im.origin())
    if im.memType() == core.MEM_DEVICE and not AutoCopy:
        raise ValueError("device data cannot be shared with VTK: pass AutoCopy=True (host copy) "
                         "or move it with toType(MEM_HOST)")
    if isinstance(im, core.Field3D):
        if not AutoCopy:
            raise ValueError("a Field3D is copied into VTK's interleaved vectors: pass AutoCopy=True")
        a = core._host_array(im)  # (X, Y, Z, 3)
        img = WrapNPAsVTKImageData(a, sp, org, AutoCopy=True, name='vectors')
        pd = img.GetPointData()
        pd.SetVectors(pd.GetScalars())
        return img
    if im.memType() == core.MEM_DEVICE:
        a = core._host_array(im)
        return WrapNPAsVTKImageData(np.asfortranarray(a), sp, org, AutoCopy=True)
    return WrapNPAsVTKImageData(im.asnp(), sp, org, AutoCopy=AutoCopy)
