"""The small pieces of the summary pictures (``summary.png`` of
PyCA.Apps.outputs, ``atlas_summary.png`` of PyCA.Apps.atlas) and of the
command lines' number lines: which planes are shown, a plane of a volume
oriented for ``imshow(origin='lower')``, its physical extent and
coordinates, and numbers written short (:func:`fmt`).

Volumes are NumPy arrays indexed (x, y, z); grids are GridInfo-like (size,
spacing, origin); ``axis`` is the axis cut (2: axial, 1: coronal, 0: sagittal).
"""
import math
import numbers

import numpy as np

__all__ = ['planes', 'plane_slice', 'plane_axes', 'plane_extent', 'plane_coords', 'fmt']


def planes(size):
    """The slices shown: z (axial), y (coronal), x (sagittal) through the
    middle; 2-D (size z == 1): the one z plane.

    Args:
        size (tuple of 3 int): the grid's size.

    Returns:
        list of tuple: (name, axis, index) of each slice.
    """
    sx, sy, sz = size
    if sz == 1:
        return [('2-D', 2, 0)]
    return [('axial z=%d' % (sz // 2), 2, sz // 2), ('coronal y=%d' % (sy // 2), 1, sy // 2),
            ('sagittal x=%d' % (sx // 2), 0, sx // 2)]


def plane_slice(a, axis, k):
    """The plane of an (x, y, z) array, oriented for imshow(origin='lower'):
    rows = the vertical axis (y for axial, z otherwise).

    Args:
        a (numpy.ndarray): the (x, y, z) array.
        axis (int): the axis cut.
        k (int): the index of the plane along ``axis``.

    Returns:
        numpy.ndarray: the plane (rows, columns).
    """
    s = np.take(a, k, axis=axis)
    return s.T  # axial (x, y) -> rows y; coronal (x, z) -> rows z; sagittal (y, z) -> rows z


def plane_axes(axis):
    """The (horizontal, vertical) world axes of the plane that cuts ``axis``.

    Args:
        axis (int): the axis cut.

    Returns:
        tuple of 2 int: the axes shown.
    """
    return {2: (0, 1), 1: (0, 2), 0: (1, 2)}[axis]


def plane_extent(grid, axis):
    """imshow's extent (left, right, bottom, top; physical units, voxel
    edges) of the plane of ``grid`` that cuts ``axis``.

    Args:
        grid (GridInfo): the grid.
        axis (int): the axis cut.

    Returns:
        list of 4 float: the extent.
    """
    u, v = plane_axes(axis)
    sp, org, n = tuple(grid.spacing()), tuple(grid.origin()), tuple(grid.size())
    return [org[u] - sp[u] / 2, org[u] + (n[u] - 0.5) * sp[u],
            org[v] - sp[v] / 2, org[v] + (n[v] - 0.5) * sp[v]]


def plane_coords(grid, axis):
    """The physical coordinates of the voxel centres along the two axes of
    the plane that cuts ``axis``.

    Args:
        grid (GridInfo): the grid.
        axis (int): the axis cut.

    Returns:
        tuple of 2 numpy.ndarray: horizontal and vertical coordinates.
    """
    u, v = plane_axes(axis)
    sp, org, n = tuple(grid.spacing()), tuple(grid.origin()), tuple(grid.size())
    return org[u] + sp[u] * np.arange(n[u]), org[v] + sp[v] * np.arange(n[v])


def fmt(v, nd=3):
    """A number written short: ``nd`` significant digits, whole numbers as
    they are, 'n/a' for None and non-finite values.

    Args:
        v (number or None): the value.
        nd (int): significant digits; default 3.

    Returns:
        str: the text.
    """
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return 'n/a'
    if isinstance(v, numbers.Integral):
        return str(v)
    return '%.*g' % (nd, v)
