"""Synthetic test data (legacy PyCATestData).

The ``Draw*`` generators return float32 NumPy arrays of shape ``sz``,
indexed ``arr[x, y]`` (or ``arr[x, y, z]``) like ``Image3D.asnp()``; pass
them to ``ImFromNPArr``. Each pattern is defined in the (x, y) plane; a
3-element ``sz`` repeats it along z (``DrawCircle`` with a 3-D centre draws
a ball). Coordinates are voxel indices; the default centre is the middle of
the grid, ((X - 1) / 2, (Y - 1) / 2).

The random generators return PyCA objects. Their ``seed`` argument (an int
or a ``numpy.random.Generator``) makes them reproducible; with the default
``seed=None`` they draw from NumPy's global random state, as the legacy did
(so ``np.random.seed`` applies).
"""
from __future__ import annotations

import math
import numbers
from typing import Optional, Sequence

import numpy as np

import PyCA.Core as core

from ._arrays import CopyDataFromNPArr, ImFromNPArr, as_vec3f
from ._helpers import normal_noise, random_source

__all__ = ['DrawCircle', 'DrawEllipse', 'DrawRect', 'DrawRectFromCenter', 'DrawSin', 'DrawLine',
           'DrawChecker', 'DrawSlantyDiamonds', 'DrawDiamonds', 'DrawSlantStripes',
           'DrawWavyStripes', 'DrawWavySinStripes', 'DrawSinSlantStripes',
           'RandImage', 'RandUnifImage', 'RandField', 'WavyDef']


def _size(sz):
    """(X, Y, Z or None) of a 2- or 3-element size (tuple, list, Vec3Di)."""
    try:
        s = [v for v in sz]
    except TypeError:
        raise TypeError("sz must be a sequence of 2 or 3 sizes, got %r" % (sz,)) from None
    if len(s) not in (2, 3):
        raise ValueError("sz must have 2 or 3 entries, got %r" % (sz,))
    out = []
    for v in s:
        if not isinstance(v, numbers.Integral) or isinstance(v, bool):
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            else:
                raise TypeError("sizes must be integers, got %r" % (v,))
        if v < 0:
            raise ValueError("sizes must be >= 0, got %r" % (sz,))
        out.append(int(v))
    return out


def _plane(sz):
    """x, y coordinate arrays of the (X, Y) plane (float64, indexing 'ij')."""
    s = _size(sz)
    x, y = np.meshgrid(np.arange(s[0], dtype=np.float64), np.arange(s[1], dtype=np.float64),
                       indexing='ij')
    return s, x, y


def _finish(s, plane):
    """The float32 array of shape s: the (X, Y) pattern, repeated along z."""
    plane = np.asarray(plane, dtype=np.float32)
    if len(s) == 3:
        return np.repeat(plane[:, :, np.newaxis], s[2], axis=2)
    return plane


def _center(s, center, n=2):
    if center is None:
        return [(v - 1) / 2.0 for v in s[:n]]
    c = [float(v) for v in center]
    if len(c) < 2:
        raise ValueError("center needs at least 2 coordinates, got %r" % (center,))
    return c


def _positive(name, v):
    v = float(v)
    if not v > 0 or not math.isfinite(v):
        raise ValueError("%s must be a finite number > 0, got %r" % (name, v))
    return v


def DrawCircle(sz: Sequence[int], center: Optional[Sequence[float]] = None,
               rad: Optional[float] = None, val: float = 1.0) -> np.ndarray:
    """``val`` inside the disk ``|p - center| <= rad``, 0 outside. Default centre:
    the middle; default radius: a quarter of the smaller in-plane size. With
    a 3-D ``sz`` and a 3-D ``center`` it is a ball.

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        center (2 or 3 numbers, optional): centre (x, y) or (x, y, z) in voxel indices; default None
            = the middle of the grid.
        rad (float, optional): radius in voxels; default None = a quarter of the smaller in-plane
            size.
        val (float): value inside the shape; default 1.0.

    Returns:
        numpy.ndarray: float32 array of shape ``sz``, indexed ``[x, y(, z)]``.

    Raises:
        TypeError: ``sz`` is not a sequence of integers.
        ValueError: ``sz`` does not have 2 or 3 non-negative entries.

    Example:
        ``im = ImFromNPArr(DrawCircle((64, 64), rad=10))``
    """
    s = _size(sz)
    c = _center(s, center, 3 if (center is not None and len(center) == 3) else 2)
    rad = min(s[0], s[1]) / 4.0 if rad is None else float(rad)
    if rad < 0:
        raise ValueError("rad must be >= 0, got %r" % rad)
    if len(c) == 3:
        if len(s) != 3:
            raise ValueError("a 3-D center needs a 3-D size")
        x, y, z = np.meshgrid(*[np.arange(n, dtype=np.float64) for n in s], indexing='ij')
        r2 = (x - c[0]) ** 2 + (y - c[1]) ** 2 + (z - c[2]) ** 2
        return np.where(r2 <= rad * rad, val, 0.0).astype(np.float32)
    s, x, y = _plane(s)
    return _finish(s, np.where((x - c[0]) ** 2 + (y - c[1]) ** 2 <= rad * rad, val, 0.0))


def DrawEllipse(sz: Sequence[int], center: Sequence[float], radx: float, rady: float,
                val: float = 1.0) -> np.ndarray:
    """``val`` inside the ellipse ((x - cx) / radx)^2 + ((y - cy) / rady)^2 <= 1.

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        center (2 numbers): centre (x, y) in voxel indices.
        radx (float): semi-axis along x, in voxels.
        rady (float): semi-axis along y, in voxels.
        val (float): value inside the shape; default 1.0.

    Returns:
        numpy.ndarray: float32 array of shape ``sz``, indexed ``[x, y(, z)]``.

    Raises:
        TypeError: ``sz`` is not a sequence of integers.
        ValueError: ``sz`` does not have 2 or 3 non-negative entries.
    """
    s, x, y = _plane(sz)
    c = _center(s, center)
    radx, rady = _positive("radx", radx), _positive("rady", rady)
    return _finish(s, np.where(((x - c[0]) / radx) ** 2 + ((y - c[1]) / rady) ** 2 <= 1.0, val, 0.0))


def DrawRect(sz: Sequence[int], llc: Sequence[float], urc: Sequence[float],
             val: float = 1.0) -> np.ndarray:
    """``val`` on the rectangle between the corners llc = (x0, y0) and
    urc = (x1, y1), both inclusive: x0 <= x <= x1, y0 <= y <= y1.

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        llc (2 numbers): lower-left corner (x0, y0), voxel indices, inclusive.
        urc (2 numbers): upper-right corner (x1, y1), voxel indices, inclusive.
        val (float): value inside the shape; default 1.0.

    Returns:
        numpy.ndarray: float32 array of shape ``sz``, indexed ``[x, y(, z)]``.

    Raises:
        TypeError: ``sz`` is not a sequence of integers.
        ValueError: ``sz`` does not have 2 or 3 non-negative entries.
    """
    s, x, y = _plane(sz)
    (x0, y0), (x1, y1) = [float(v) for v in llc[:2]], [float(v) for v in urc[:2]]
    return _finish(s, np.where((x >= x0) & (x <= x1) & (y >= y0) & (y <= y1), val, 0.0))


def DrawRectFromCenter(sz: Sequence[int], center: Sequence[float], width: float, height: float,
                       val: float = 1.0) -> np.ndarray:
    """``val`` on the rectangle ``|x - cx| <= width / 2``, ``|y - cy| <= height / 2``.

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        center (2 numbers): centre (x, y) in voxel indices.
        width (float): width along x, in voxels.
        height (float): height along y, in voxels.
        val (float): value inside the shape; default 1.0.

    Returns:
        numpy.ndarray: float32 array of shape ``sz``, indexed ``[x, y(, z)]``.

    Raises:
        TypeError: ``sz`` is not a sequence of integers.
        ValueError: ``sz`` does not have 2 or 3 non-negative entries.
    """
    s, x, y = _plane(sz)
    c = _center(s, center)
    w, h = float(width), float(height)
    if w < 0 or h < 0:
        raise ValueError("width and height must be >= 0")
    return _finish(s, np.where((np.abs(x - c[0]) <= w / 2.0) & (np.abs(y - c[1]) <= h / 2.0), val, 0.0))


def DrawSin(sz: Sequence[int], nPeriods: float = 4, dim: int = 0, amp: float = 1.0,
            phase: float = 0.0) -> np.ndarray:
    """amp * sin(2 pi nPeriods p / n + phase), p the coordinate along axis
    ``dim`` (0: x, 1: y) of extent n: nPeriods whole periods across the grid.

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        nPeriods (float): number of periods across the grid; default 4.
        dim (int): axis of the wave: 0 (x) or 1 (y); default 0.
        amp (float): amplitude; default 1.0.
        phase (float): phase in radians; default 0.0.

    Returns:
        numpy.ndarray: float32 array of shape ``sz``, indexed ``[x, y(, z)]``.

    Raises:
        TypeError: ``sz`` is not a sequence of integers.
        ValueError: ``sz`` does not have 2 or 3 non-negative entries.
    """
    s, x, y = _plane(sz)
    d = {0: 0, 1: 1, 'x': 0, 'y': 1}.get(dim)
    if d is None:
        raise ValueError("dim must be 0/'x' or 1/'y', got %r" % (dim,))
    p, n = (x, s[0]) if d == 0 else (y, s[1])
    return _finish(s, amp * np.sin(2.0 * np.pi * float(nPeriods) * p / max(n, 1) + phase))


def DrawLine(sz: Sequence[int], p0: Sequence[float], p1: Sequence[float], width: float = 1.0,
             val: float = 1.0) -> np.ndarray:
    """``val`` within distance width / 2 of the segment p0 - p1 (in-plane
    points (x, y)); a point segment draws a disk.

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        p0 (2 numbers): first end point (x, y), voxel indices.
        p1 (2 numbers): second end point (x, y), voxel indices.
        width (float): line width in voxels; default 1.0.
        val (float): value inside the shape; default 1.0.

    Returns:
        numpy.ndarray: float32 array of shape ``sz``, indexed ``[x, y(, z)]``.

    Raises:
        TypeError: ``sz`` is not a sequence of integers.
        ValueError: ``sz`` does not have 2 or 3 non-negative entries.
    """
    s, x, y = _plane(sz)
    a = np.array([float(v) for v in p0[:2]])
    b = np.array([float(v) for v in p1[:2]])
    width = float(width)
    if width < 0:
        raise ValueError("width must be >= 0")
    d = b - a
    L2 = float(d @ d)
    if L2 == 0.0:
        t = np.zeros_like(x)
    else:
        t = np.clip(((x - a[0]) * d[0] + (y - a[1]) * d[1]) / L2, 0.0, 1.0)
    dist2 = (x - (a[0] + t * d[0])) ** 2 + (y - (a[1] + t * d[1])) ** 2
    return _finish(s, np.where(dist2 <= (width / 2.0) ** 2, val, 0.0))


def DrawChecker(sz: Sequence[int], squareSize: int = 8, val: float = 1.0) -> np.ndarray:
    """A checkerboard of squareSize x squareSize voxel squares: ``val`` where
    floor(x / s) + floor(y / s) is odd, 0 elsewhere (voxel (0, 0) is 0).

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        squareSize (int): side of the squares in voxels; default 8.
        val (float): value inside the shape; default 1.0.

    Returns:
        numpy.ndarray: float32 array of shape ``sz``, indexed ``[x, y(, z)]``.

    Raises:
        TypeError: ``sz`` is not a sequence of integers.
        ValueError: ``sz`` does not have 2 or 3 non-negative entries.
    """
    s, x, y = _plane(sz)
    q = _positive("squareSize", squareSize)
    return _finish(s, np.where((np.floor(x / q) + np.floor(y / q)) % 2 == 1, val, 0.0))


def _rotated(x, y, angle_deg):
    a = math.radians(float(angle_deg))
    return x * math.cos(a) + y * math.sin(a), -x * math.sin(a) + y * math.cos(a)


def DrawDiamonds(sz: Sequence[int], period: float = 16, val: float = 1.0) -> np.ndarray:
    """A checkerboard rotated by 45 degrees (diamonds of diagonal ``period``
    voxels): ``val`` where floor((x + y) / period) + floor((x - y) / period) is odd.

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        period (float): period of the pattern in voxels; default 16.
        val (float): value inside the shape; default 1.0.

    Returns:
        numpy.ndarray: float32 array of shape ``sz``, indexed ``[x, y(, z)]``.

    Raises:
        TypeError: ``sz`` is not a sequence of integers.
        ValueError: ``sz`` does not have 2 or 3 non-negative entries.
    """
    s, x, y = _plane(sz)
    p = _positive("period", period)
    return _finish(s, np.where((np.floor((x + y) / p) + np.floor((x - y) / p)) % 2 == 1, val, 0.0))


def DrawSlantyDiamonds(sz: Sequence[int], period: float = 16, angle: float = 30.0,
                       val: float = 1.0) -> np.ndarray:
    """A checkerboard of squares of side period / 2 rotated by ``angle``
    degrees: ``val`` where floor(u / (period/2)) + floor(v / (period/2)) is odd,
    (u, v) = (x, y) rotated by -angle.

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        period (float): period of the pattern in voxels; default 16.
        angle (float): rotation in degrees, counter-clockwise from the x axis.
        val (float): value inside the shape; default 1.0.

    Returns:
        numpy.ndarray: float32 array of shape ``sz``, indexed ``[x, y(, z)]``.

    Raises:
        TypeError: ``sz`` is not a sequence of integers.
        ValueError: ``sz`` does not have 2 or 3 non-negative entries.
    """
    s, x, y = _plane(sz)
    h = _positive("period", period) / 2.0
    u, v = _rotated(x, y, angle)
    return _finish(s, np.where((np.floor(u / h) + np.floor(v / h)) % 2 == 1, val, 0.0))


def DrawSlantStripes(sz: Sequence[int], period: float = 16, angle: float = 45.0,
                     val: float = 1.0) -> np.ndarray:
    """Binary stripes of ``period`` voxels (half on, half off) across the
    direction (cos angle, sin angle): ``val`` where floor(2 u / period) is
    odd, u = x cos(angle) + y sin(angle).

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        period (float): period of the pattern in voxels; default 16.
        angle (float): rotation in degrees, counter-clockwise from the x axis.
        val (float): value inside the shape; default 1.0.

    Returns:
        numpy.ndarray: float32 array of shape ``sz``, indexed ``[x, y(, z)]``.

    Raises:
        TypeError: ``sz`` is not a sequence of integers.
        ValueError: ``sz`` does not have 2 or 3 non-negative entries.
    """
    s, x, y = _plane(sz)
    p = _positive("period", period)
    u, _ = _rotated(x, y, angle)
    return _finish(s, np.where(np.floor(2.0 * u / p) % 2 == 1, val, 0.0))


def _wavy_u(s, x, y, waveAmp, wavePeriod):
    wp = float(wavePeriod) if wavePeriod is not None else max(s[1], 1) / 2.0
    _positive("wavePeriod", wp)
    return x + float(waveAmp) * np.sin(2.0 * np.pi * y / wp)


def DrawWavyStripes(sz: Sequence[int], period: float = 16, waveAmp: float = 4.0,
                    wavePeriod: Optional[float] = None, val: float = 1.0) -> np.ndarray:
    """Binary stripes along y whose x position waves:
    ``val`` where floor(2 u / period) is odd, u = x + waveAmp sin(2 pi y / wavePeriod)
    (default wavePeriod: Y / 2).

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        period (float): period of the pattern in voxels; default 16.
        waveAmp (float): amplitude of the waving, in voxels; default 4.0.
        wavePeriod (float, optional): period of the waving along y, in voxels; default None = Y / 2.
        val (float): value inside the shape; default 1.0.

    Returns:
        numpy.ndarray: float32 array of shape ``sz``, indexed ``[x, y(, z)]``.

    Raises:
        TypeError: ``sz`` is not a sequence of integers.
        ValueError: ``sz`` does not have 2 or 3 non-negative entries.
    """
    s, x, y = _plane(sz)
    p = _positive("period", period)
    u = _wavy_u(s, x, y, waveAmp, wavePeriod)
    return _finish(s, np.where(np.floor(2.0 * u / p) % 2 == 1, val, 0.0))


def DrawWavySinStripes(sz: Sequence[int], period: float = 16, waveAmp: float = 4.0,
                       wavePeriod: Optional[float] = None, amp: float = 1.0) -> np.ndarray:
    """The smooth version of DrawWavyStripes: amp (1 + sin(2 pi u / period)) / 2.

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        period (float): period of the pattern in voxels; default 16.
        waveAmp (float): amplitude of the waving, in voxels; default 4.0.
        wavePeriod (float, optional): period of the waving along y, in voxels; default None = Y / 2.
        amp (float): amplitude; default 1.0.

    Returns:
        numpy.ndarray: float32 array of shape ``sz``, indexed ``[x, y(, z)]``.

    Raises:
        TypeError: ``sz`` is not a sequence of integers.
        ValueError: ``sz`` does not have 2 or 3 non-negative entries.
    """
    s, x, y = _plane(sz)
    p = _positive("period", period)
    u = _wavy_u(s, x, y, waveAmp, wavePeriod)
    return _finish(s, amp * 0.5 * (1.0 + np.sin(2.0 * np.pi * u / p)))


def DrawSinSlantStripes(sz: Sequence[int], period: float = 16, angle: float = 45.0,
                        amp: float = 1.0) -> np.ndarray:
    """The smooth version of DrawSlantStripes: amp (1 + sin(2 pi u / period)) / 2,
    u = x cos(angle) + y sin(angle).

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        period (float): period of the pattern in voxels; default 16.
        angle (float): rotation in degrees, counter-clockwise from the x axis.
        amp (float): amplitude; default 1.0.

    Returns:
        numpy.ndarray: float32 array of shape ``sz``, indexed ``[x, y(, z)]``.

    Raises:
        TypeError: ``sz`` is not a sequence of integers.
        ValueError: ``sz`` does not have 2 or 3 non-negative entries.
    """
    s, x, y = _plane(sz)
    p = _positive("period", period)
    u, _ = _rotated(x, y, angle)
    return _finish(s, amp * 0.5 * (1.0 + np.sin(2.0 * np.pi * u / p)))


# ---------------------------------------------------------------------------
# random images and fields

def _shape3(sz):
    s = _size(sz)
    return tuple(s) if len(s) == 3 else (s[0], s[1], 1)


def _smooth(a, gSig):
    gSig = float(gSig)
    if gSig < 0 or not math.isfinite(gSig):
        raise ValueError("gSig must be a finite number >= 0, got %r" % gSig)
    if gSig == 0:
        return a
    try:
        from scipy import ndimage
    except ImportError:
        raise ImportError("smoothing (gSig > 0) needs scipy: pip install scipy") from None
    sig = [gSig if n > 1 else 0.0 for n in a.shape]
    return ndimage.gaussian_filter(a, sig)


def _noise(shape, nSig, gSig, NonNeg, rng):
    nSig = float(nSig)
    if nSig < 0 or not math.isfinite(nSig):
        raise ValueError("nSig must be a finite number >= 0, got %r" % nSig)
    a = _smooth(normal_noise(rng, nSig, shape), gSig)
    return np.abs(a) if NonNeg else a


def RandImage(sz, nSig=1.0, gSig=0.0, NonNeg=False, mType=core.MEM_HOST, sp=None, orig=None,
              seed=None):
    """An Image3D of Gaussian noise (standard deviation nSig), smoothed with a
    Gaussian of gSig voxels (scipy.ndimage.gaussian_filter, reflecting borders) when gSig > 0, and made
    non-negative (absolute value) when NonNeg.

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        nSig (float): standard deviation of the noise; default 1.0.
        gSig (float): standard deviation of the Gaussian smoothing in voxels; default 0.0 (no
            smoothing).
        NonNeg (bool): take the absolute value (non-negative noise); default False.
        mType (MemoryType): memory type of the result; default MEM_HOST.
        sp (3 numbers, optional): grid spacing (physical units per voxel); default None = (1, 1, 1).
        orig (3 numbers, optional): grid origin; default None = (0, 0, 0).
        seed (int or numpy.random.Generator, optional): random source; default None = NumPy's global
            random state.

    Returns:
        Image3D: on a grid of size ``sz`` (Z = 1 for a 2-D size).
    """
    a = _noise(_shape3(sz), nSig, gSig, NonNeg, random_source(seed))
    return ImFromNPArr(a, mType, sp, orig)


def RandUnifImage(sz, lbound=0.0, ubound=1.0, mType=core.MEM_HOST, sp=None, orig=None, seed=None):
    """An Image3D of noise uniform in [lbound, ubound).

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        lbound (float): lower bound (inclusive); default 0.0.
        ubound (float): upper bound (exclusive); default 1.0.
        mType (MemoryType): memory type of the result; default MEM_HOST.
        sp (3 numbers, optional): grid spacing (physical units per voxel); default None = (1, 1, 1).
        orig (3 numbers, optional): grid origin; default None = (0, 0, 0).
        seed (int or numpy.random.Generator, optional): random source; default None = NumPy's global
            random state.

    Returns:
        Image3D: on a grid of size ``sz`` (Z = 1 for a 2-D size).
    """
    lbound, ubound = float(lbound), float(ubound)
    if not lbound <= ubound:
        raise ValueError("lbound must be <= ubound, got %r, %r" % (lbound, ubound))
    rng = random_source(seed)
    shape = _shape3(sz)
    a = np.random.uniform(lbound, ubound, shape) if rng is np.random else rng.uniform(lbound, ubound, shape)
    return ImFromNPArr(a, mType, sp, orig)


def RandField(sz, nSig=1.0, gSig=0.0, NonNeg=False, mType=core.MEM_HOST, sp=None, orig=None,
              seed=None):
    """A Field3D of independent Gaussian noise per component and voxel (3-D
    noise for a 3-D size; the legacy repeated 2-D noise along z), smoothed
    and made non-negative as in RandImage. On a 2-D grid (Z = 1) the z
    component is 0 (an in-plane field).

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        nSig (float): standard deviation of the noise; default 1.0.
        gSig (float): standard deviation of the Gaussian smoothing in voxels; default 0.0 (no
            smoothing).
        NonNeg (bool): take the absolute value (non-negative noise); default False.
        mType (MemoryType): memory type of the result; default MEM_HOST.
        sp (3 numbers, optional): grid spacing (physical units per voxel); default None = (1, 1, 1).
        orig (3 numbers, optional): grid origin; default None = (0, 0, 0).
        seed (int or numpy.random.Generator, optional): random source; default None = NumPy's global
            random state.

    Returns:
        Field3D: on a grid of size ``sz``.
    """
    shape = _shape3(sz)
    rng = random_source(seed)
    comps = [_noise(shape, nSig, gSig, NonNeg, rng) for _ in range(2)]
    comps.append(_noise(shape, nSig, gSig, NonNeg, rng) if shape[2] > 1 else np.zeros(shape))
    g = core.GridInfo(core.Vec3Di(*shape), as_vec3f(sp, (1.0, 1.0, 1.0)), as_vec3f(orig, (0.0, 0.0, 0.0)))
    f = core.Field3D(g, mType)
    CopyDataFromNPArr(f, np.stack(comps, axis=-1))
    return f


def WavyDef(sz, nWaves=4, waveAmp=10.0, waveDim=0, mType=core.MEM_HOST, deformation=True,
            sp=None, orig=None):
    """A sinusoidal deformation: the displacement along axis ``waveDim``
    (0, 1, 2) is waveAmp * sin(2 pi nWaves q / n), q the coordinate along
    the wave axis (y for waveDim 0, x otherwise) of extent n; the other
    components are 0. waveAmp is in physical units (a V-field). Returns the
    H-field x + v / spacing (``VtoH_I``) when ``deformation``, else the V-field.

    Args:
        sz (2 or 3 ints): the array shape (X, Y) or (X, Y, Z), in voxels; a list, tuple or Vec3Di.
        nWaves (float): number of waves across the grid; default 4.
        waveAmp (float): displacement amplitude in physical units (the V-field's); default 10.0.
        waveDim (int or str): the displaced component: 0/'x', 1/'y' or 2/'z'; default 0.
        mType (MemoryType): memory type of the result; default MEM_HOST.
        deformation (bool): return the H-field x + v / spacing (True, default) or the V-field v
            (False).
        sp (3 numbers, optional): grid spacing (physical units per voxel); default None = (1, 1, 1).
        orig (3 numbers, optional): grid origin; default None = (0, 0, 0).

    Returns:
        Field3D: the H-field (or V-field) on a grid of size ``sz``.

    Raises:
        ValueError: ``waveDim`` is not one of 0, 1, 2, 'x', 'y', 'z'.
    """
    shape = _shape3(sz)
    d = {0: 0, 1: 1, 2: 2, 'x': 0, 'y': 1, 'z': 2}.get(waveDim)
    if d is None:
        raise ValueError("waveDim must be 0, 1 or 2, got %r" % (waveDim,))
    wave_axis = 1 if d == 0 else 0
    n = shape[wave_axis]
    q = np.arange(n, dtype=np.float64)
    prof = float(waveAmp) * np.sin(2.0 * np.pi * float(nWaves) * q / max(n, 1))
    comps = [np.zeros(shape) for _ in range(3)]
    comps[d] = np.broadcast_to(prof.reshape([-1 if i == wave_axis else 1 for i in range(3)]), shape)
    g = core.GridInfo(core.Vec3Di(*shape), as_vec3f(sp, (1.0, 1.0, 1.0)), as_vec3f(orig, (0.0, 0.0, 0.0)))
    f = core.Field3D(g, mType)
    CopyDataFromNPArr(f, np.stack(comps, axis=-1))
    if deformation:
        core.VtoH_I(f)
    return f
