"""Plotting of images, deformation grids, Jacobians and energies (legacy
PyCADisplay).

Conventions: a 2-D slice is drawn like ``plt.imshow(arr)`` of the slice
array, i.e. the first remaining axis runs down the rows (x for dim 'z')
and the second along the columns (``t=True`` transposes); grid and quiver
plots use the same axes, so they overlay ``DispImage``. Image3D/Field3D
data in any memory type is copied to the host; NumPy arrays (indexed
[x, y(, z)]) are accepted wherever an image is. V-fields are in physical
units (divided by the spacing to get voxels), H-fields in voxels.

pyplot state: every drawing function leaves the figure and axes it drew
into current (``plt.gcf()``, ``plt.gca()``) and, when it drew an image
(``DispImage``, ``JacDetPlot``, ``SaveThreePaneArr``) or arrows
(``Quiver``), that artist as the current image (``plt.gci()``), as the
legacy's ``plt.imshow``/``plt.quiver`` calls did; so the legacy pattern
``plt.subplot(...); DispImage(im, newFig=False); plt.colorbar();
plt.title(...)`` works. By default nothing is drawn beyond what the legacy
drew (no colorbar unless ``colorbar=True``). A standalone matplotlib Figure
passed through ``ax=`` is not adopted by pyplot.
"""
import math
import numbers
import os
import sys

import matplotlib

if ('matplotlib.pyplot' not in sys.modules and not os.environ.get('MPLBACKEND')
        and sys.platform.startswith('linux')
        and not (os.environ.get('DISPLAY') or os.environ.get('WAYLAND_DISPLAY'))):
    # No display: use Agg unless a backend was chosen (rcParams, matplotlibrc).
    try:
        _chosen = matplotlib.rcParams._get_backend_or_none()
    except AttributeError:  # older matplotlib
        _chosen = None
    if _chosen is None:
        matplotlib.use('Agg')

import matplotlib._pylab_helpers  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import colors as _mcolors  # noqa: E402

import PyCA.Core as core  # noqa: E402
from PyCA.Common.PyCACommon import (AsNPCopy, ComposeDef, ExtractSliceArr, IsField3D,  # noqa: E402
                                    IsImage3D)
from PyCA.Common._helpers import axis_index, check_scratch, frame_name  # noqa: E402

__all__ = ['DispImage', 'GridPlot', 'Quiver', 'JacDetPlot', 'JacDetCMap', 'EnergyPlot',
           'SaveSlice', 'SaveThreePaneArr', 'DefSeriesIter', 'ExtractSliceFunc', 'GenDefFrames',
           'SampleCMap']


# ---------------------------------------------------------------------------
# helpers

def _image_array(im):
    """A float array indexed [x, y(, z)] of an Image3D or NumPy array."""
    if IsImage3D(im):
        return AsNPCopy(im)
    if IsField3D(im):
        raise TypeError("expected an image (Image3D or NumPy array), got a Field3D")
    try:
        a = np.asarray(im, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("expected an Image3D or a NumPy array, got %s" % type(im).__name__) from None
    if a.ndim not in (2, 3):
        raise ValueError("expected a 2-D or 3-D image, got shape %s" % (a.shape,))
    return a


def _image_slice(im, sliceIdx, dim, t=False):
    a = _image_array(im)
    if a.ndim == 3 and a.shape[axis_index(dim)] == 1:
        # as the legacy: slice only along an axis of size above 1, so a 2-D
        # image (X, Y, 1) ignores sliceIdx
        s = np.take(a, 0, axis=axis_index(dim))
    else:
        s = a if a.ndim == 2 else ExtractSliceArr(a, sliceIdx, dim)
    s = np.asarray(s, dtype=np.float64)
    return s.T if t else s


def _axes(newFig, ax):
    if ax is not None:
        return ax.figure, ax
    if newFig:
        fig = plt.figure()
        return fig, fig.add_subplot(111)
    return plt.gcf(), plt.gca()


def _pyplot_figure(fig):
    """True when fig is one of pyplot's open figures (not a standalone
    Figure, which pyplot must not adopt)."""
    manager = getattr(fig.canvas, 'manager', None)
    if manager is None or not plt.fignum_exists(manager.num):
        return False
    return any(m.canvas.figure is fig for m in
               matplotlib._pylab_helpers.Gcf.get_all_fig_managers())


def _make_current(fig, ax, mappable=None):
    """Leaves pyplot's state as the legacy's plt.* drawing calls did: ax is
    the current axes of fig, fig the current figure (when pyplot manages it)
    and mappable (an image or collection drawn into ax) the current image,
    so plt.gci(), plt.colorbar(), plt.title() and plt.clim() act on what
    was just drawn."""
    root = fig.get_figure(root=True) if hasattr(fig, 'get_figure') else fig
    if _pyplot_figure(root):
        plt.sca(ax)
    else:
        fig.sca(ax)
    if mappable is not None:
        ax._sci(mappable)  # what pyplot.sci does (pyplot.sci needs gca() to be ax)


def _atomic_mpl(fname, save, who, add_ext=True):
    """Runs save(tmp, format) (a matplotlib savefig / imsave) into a temporary
    file beside fname and moves it over fname (PyCA.Common.atomic.atomic_save:
    fsync, os.replace), so a killed process never leaves a half-written
    picture. The format is fname's extension, else rcParams['savefig.format']
    (which savefig, with add_ext, appends to the name, as matplotlib does)."""
    from PyCA.Common.atomic import atomic_save
    fname = os.fspath(fname)
    ext = os.path.splitext(fname)[1]
    fmt = ext[1:].lower() if ext else matplotlib.rcParams['savefig.format']
    if not ext and add_ext:
        fname = fname.rstrip('.') + '.' + fmt
    atomic_save(fname, lambda tmp: save(tmp, fmt), who, itk_errors=False)
    return fname


def _finish(fig, ax, title, fname):
    if title is not None:
        ax.set_title(title)
    if fname is not None:
        _atomic_mpl(fname, lambda tmp, fmt: fig.savefig(tmp, format=fmt), 'savefig')
    return fig, ax


def _range(rng):
    if rng is None:
        return None, None
    r = [float(v) for v in rng]
    if len(r) != 2:
        raise ValueError("rng must be (min, max), got %r" % (rng,))
    return r[0], r[1]


def _field_voxel_slices(vf, sliceIdx, dim, isVF, t):
    """(P, Q, P0, Q0) for a slice of a field: the deformed row and column
    coordinates (voxels) of every voxel of the slice and the identity."""
    if not IsField3D(vf):
        raise TypeError("expected a Field3D, got %s" % type(vf).__name__)
    d = axis_index(dim)
    a = AsNPCopy(vf)  # (X, Y, Z, 3) float64
    sp = np.array(list(vf.spacing()), dtype=np.float64)
    ident = np.stack(np.meshgrid(*[np.arange(n, dtype=np.float64) for n in a.shape[:3]],
                                 indexing='ij'), axis=-1)
    h = ident + a / sp if isVF else a
    hs = ExtractSliceArr(h, sliceIdx, d)
    ids = ExtractSliceArr(ident, sliceIdx, d)
    pa, pb = [k for k in range(3) if k != d]
    P, Q, P0, Q0 = hs[..., pa], hs[..., pb], ids[..., pa], ids[..., pb]
    if t:
        P, Q, P0, Q0 = Q.T, P.T, Q0.T, P0.T
    return P, Q, P0, Q0


def _image_axes(ax, shape, limits):
    """Same orientation as imshow: rows down, equal aspect. Over an image the
    image's limits are kept (``limits``: the axes limits before drawing),
    else the slice's extent."""
    ax.set_aspect('equal')
    if limits is not None:
        ax.set_xlim(limits[0])
        ax.set_ylim(limits[1])
    else:
        ax.set_xlim(-0.5, shape[1] - 0.5)
        ax.set_ylim(shape[0] - 0.5, -0.5)


def _limits(ax):
    return (ax.get_xlim(), ax.get_ylim()) if ax.images else None


def _check_every(every):
    if not isinstance(every, numbers.Integral) or every < 1:
        raise ValueError("every must be an integer >= 1, got %r" % (every,))
    return int(every)


# ---------------------------------------------------------------------------
# images

def DispImage(im, title=None, sliceIdx=None, dim='z', cmap='gray', newFig=True, rng=None,
              t=False, log=False, ax=None, colorbar=False, fname=None):
    """Shows a slice of an image (Image3D in any memory, or a 2-D/3-D NumPy
    array; default: the middle slice along ``dim``). ``rng`` = (min, max)
    of the grey scale, ``t`` transposes, ``log`` uses a logarithmic colour
    scale (non-positive voxels are left blank). Draws into a new figure
    (``newFig``), the current axes, or ``ax``; saves to ``fname`` if given.
    The image is left as pyplot's current image (``plt.colorbar()`` works
    next); ``colorbar=True`` adds one itself. Returns (fig, ax).

    Args:
        im (Image3D or numpy.ndarray): the image: an Image3D in any memory type, or a 2-D/3-D array
            indexed [x, y(, z)].
        title (str, optional): the axes title; default None (none).
        sliceIdx (int, optional): the slice index along ``dim``; default None = the middle slice.
        dim (str or int): the axis the slice is taken across: 'x', 'y', 'z' (or 0, 1, 2); default
            'z'.
        cmap (str or matplotlib Colormap): the colour map; default 'gray'.
        newFig (bool): draw into a new figure (True, default) or the current axes (False).
        rng (tuple of 2 floats, optional): the (min, max) of the grey scale; default None = the
            data's range.
        t (bool): transpose the slice (swap rows and columns); default False.
        log (bool): logarithmic colour scale (non-positive voxels blank); default False.
        ax (matplotlib Axes, optional): draw into these axes (overrides ``newFig``); default None.
        colorbar (bool): add a colorbar; default False (the drawn image is left current, so
            ``plt.colorbar()`` works next).
        fname (str, optional): also save the figure to this file (written atomically); default None.

    Returns:
        tuple: (matplotlib Figure, matplotlib Axes).

    Example:
        ``fig, ax = DispImage(im, title='fixed', dim='z')``
    """
    s = _image_slice(im, sliceIdx, dim, t)
    vmin, vmax = _range(rng)
    fig, ax = _axes(newFig, ax)
    if log:
        pos = s[s > 0]
        if pos.size == 0:
            raise ValueError("log scale needs positive voxels")
        norm = _mcolors.LogNorm(vmin if vmin is not None else float(pos.min()),
                                vmax if vmax is not None else float(pos.max()))
        img = ax.imshow(np.ma.masked_less_equal(s, 0), cmap=cmap, norm=norm,
                        interpolation='nearest')
    else:
        img = ax.imshow(s, cmap=cmap, vmin=vmin, vmax=vmax, interpolation='nearest')
    ax.set_axis_off()
    _make_current(fig, ax, img)
    if colorbar:
        fig.colorbar(img, ax=ax)
    return _finish(fig, ax, title, fname)


def SaveSlice(fname, im, sliceIdx=None, dim='z', cmap='gray', rng=None, t=False):
    """Writes a slice of an image as a PNG of one pixel per voxel (rows: the
    first remaining axis; ``rng`` as in DispImage, default the slice's
    range). Returns the 2-D array written.

    Args:
        fname (str): the PNG file to write.
        im (Image3D or numpy.ndarray): the image: an Image3D in any memory type, or a 2-D/3-D array
            indexed [x, y(, z)].
        sliceIdx (int, optional): the slice index along ``dim``; default None = the middle slice.
        dim (str or int): the axis the slice is taken across: 'x', 'y', 'z' (or 0, 1, 2); default
            'z'.
        cmap (str or matplotlib Colormap): the colour map; default 'gray'.
        rng (tuple of 2 floats, optional): the (min, max) of the grey scale; default None = the
            data's range.
        t (bool): transpose the slice (swap rows and columns); default False.

    Returns:
        numpy.ndarray: the 2-D array written.
    """
    s = _image_slice(im, sliceIdx, dim, t)
    vmin, vmax = _range(rng)
    if s.size == 0:
        raise ValueError("SaveSlice: the slice has no voxels")
    _atomic_mpl(fname, lambda tmp, fmt: plt.imsave(tmp, s, cmap=cmap, vmin=vmin, vmax=vmax, format=fmt),
                'SaveSlice', add_ext=False)
    return s


def SaveThreePaneArr(npimg, outname, cmap='gray', rng=None, sliceIdx=None, title=None):
    """Saves the three orthogonal slices of a 3-D image (NumPy array
    [x, y, z] or Image3D) through ``sliceIdx`` = (i, j, k) (default: the
    centre) side by side: x = i (y, z), y = j (x, z), z = k (x, y), with one
    grey scale (``rng``, default the volume's range). Returns (fig, axes).

    Args:
        npimg (numpy.ndarray or Image3D): the 3-D image, indexed [x, y, z].
        outname (str): the image file to write (PNG).
        cmap (str or matplotlib Colormap): the colour map; default 'gray'.
        rng (tuple of 2 floats, optional): the (min, max) of the grey scale; default None = the
            data's range.
        sliceIdx (3 ints, optional): the slice indices (i, j, k) along x, y and z; default None =
            the centre.
        title (str, optional): the axes title; default None (none).

    Returns:
        tuple: (matplotlib Figure, array of 3 Axes).
    """
    a = _image_array(npimg)
    if a.ndim != 3:
        raise ValueError("SaveThreePaneArr needs a 3-D image, got shape %s" % (a.shape,))
    idx = [None, None, None] if sliceIdx is None else list(sliceIdx)
    if len(idx) != 3:
        raise ValueError("sliceIdx must be (i, j, k), got %r" % (sliceIdx,))
    vmin, vmax = _range(rng)
    if vmin is None:
        vmin, vmax = float(np.nanmin(a)), float(np.nanmax(a))
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.6))
    for d, ax in enumerate(axes):
        s = ExtractSliceArr(a, idx[d], d)
        img = ax.imshow(s, cmap=cmap, vmin=vmin, vmax=vmax, interpolation='nearest')
        ax.set_title("%s = %d" % ("xyz"[d], a.shape[d] // 2 if idx[d] is None else idx[d]))
        ax.set_axis_off()
        _make_current(fig, ax, img)
    if title is not None:
        fig.suptitle(title)
    _atomic_mpl(outname, lambda tmp, fmt: fig.savefig(tmp, format=fmt), 'SaveThreePaneArr')
    return fig, axes


# ---------------------------------------------------------------------------
# deformations

def GridPlot(vf, sliceIdx=None, dim='z', every=1, isVF=True, color='g', plotBase=True,
             colorbase='#A0A0FF', newFig=False, ax=None, t=False, title=None, fname=None):
    """Draws the deformed grid of a field slice: the lines through every
    ``every``-th voxel, mapped by the deformation (an H-field with
    ``isVF=False``, else the V-field x + v / spacing), over the undeformed
    grid in ``colorbase`` (``plotBase``). Axes as DispImage (rows down), so
    it overlays an image. Returns (fig, ax).

    Args:
        vf (Field3D): the deformation: a V-field (displacement, physical units) or an H-field
            (``isVF=False``), any memory type.
        sliceIdx (int, optional): the slice index along ``dim``; default None = the middle slice.
        dim (str or int): the axis the slice is taken across: 'x', 'y', 'z' (or 0, 1, 2); default
            'z'.
        every (int): draw every ``every``-th voxel's line/arrow; default 1.
        isVF (bool): ``vf`` is a V-field (True, default; mapped as x + v / spacing) or an H-field
            (False).
        color (str or colour): the colour of the deformed grid; default 'g'.
        plotBase (bool): draw the undeformed grid underneath; default True.
        colorbase (str or colour): the undeformed grid's colour; default '#A0A0FF'.
        newFig (bool): draw into a new figure (True) or the current axes (False, default).
        ax (matplotlib Axes, optional): draw into these axes (overrides ``newFig``); default None.
        t (bool): transpose the slice (swap rows and columns); default False.
        title (str, optional): the axes title; default None (none).
        fname (str, optional): also save the figure to this file (written atomically); default None.

    Returns:
        tuple: (matplotlib Figure, matplotlib Axes).
    """
    every = _check_every(every)
    P, Q, P0, Q0 = _field_voxel_slices(vf, sliceIdx, dim, isVF, t)
    fig, ax = _axes(newFig, ax)
    lim = _limits(ax)
    for (p, q, c, lw) in (((P0, Q0, colorbase, 0.6) if plotBase else (None, None, None, None)),
                          (P, Q, color, 1.0)):
        if p is None:
            continue
        for i in range(0, p.shape[0], every):
            ax.plot(q[i, :], p[i, :], color=c, linewidth=lw)
        for j in range(0, p.shape[1], every):
            ax.plot(q[:, j], p[:, j], color=c, linewidth=lw)
    _image_axes(ax, P.shape, lim)
    _make_current(fig, ax)
    return _finish(fig, ax, title, fname)


def Quiver(vf, sliceIdx=None, dim='z', every=1, isVF=True, color='k', scale=1.0, newFig=False,
           ax=None, t=False, title=None, fname=None):
    """Arrows of the in-plane displacement (voxels; times ``scale``) at every
    ``every``-th voxel of a field slice (a V-field, or an H-field with
    ``isVF=False``). Axes as DispImage. Returns (fig, ax).

    Args:
        vf (Field3D): the deformation: a V-field (displacement, physical units) or an H-field
            (``isVF=False``), any memory type.
        sliceIdx (int, optional): the slice index along ``dim``; default None = the middle slice.
        dim (str or int): the axis the slice is taken across: 'x', 'y', 'z' (or 0, 1, 2); default
            'z'.
        every (int): draw every ``every``-th voxel's line/arrow; default 1.
        isVF (bool): ``vf`` is a V-field (True, default; mapped as x + v / spacing) or an H-field
            (False).
        color (str or colour): the colour of the arrows; default 'k'.
        scale (float): arrow length factor (arrows in voxels times ``scale``); default 1.0.
        newFig (bool): draw into a new figure (True) or the current axes (False, default).
        ax (matplotlib Axes, optional): draw into these axes (overrides ``newFig``); default None.
        t (bool): transpose the slice (swap rows and columns); default False.
        title (str, optional): the axes title; default None (none).
        fname (str, optional): also save the figure to this file (written atomically); default None.

    Returns:
        tuple: (matplotlib Figure, matplotlib Axes).
    """
    every = _check_every(every)
    scale = float(scale)
    if not scale > 0:
        raise ValueError("scale must be > 0, got %r" % scale)
    P, Q, P0, Q0 = _field_voxel_slices(vf, sliceIdx, dim, isVF, t)
    sl = (slice(None, None, every), slice(None, None, every))
    fig, ax = _axes(newFig, ax)
    lim = _limits(ax)
    q = ax.quiver(Q0[sl], P0[sl], (Q - Q0)[sl], (P - P0)[sl], color=color, angles='xy',
                  scale_units='xy', scale=1.0 / scale)
    _image_axes(ax, P.shape, lim)
    _make_current(fig, ax, q)  # as plt.quiver
    return _finish(fig, ax, title, fname)


def JacDetCMap(jd_max=10.0, cmap='PRGn', nonpos_clr=(1.0, 0.0, 0.0, 1.0)):
    """The colour map and norm of Jacobian determinant plots: a logarithmic
    scale from 1 / jd_max to jd_max centred on 1 (the map's middle colour),
    values beyond it drawn in the end colours, and non-positive (folding)
    or NaN values -- masked values -- in ``nonpos_clr``. Returns (cmap, norm).

    Args:
        jd_max (float): the end of the log scale: 1 / jd_max .. jd_max; default 10.
        cmap (str or Colormap): the diverging map whose middle colour is 1; default 'PRGn'.
        nonpos_clr (RGBA tuple): the colour of non-positive (folding) or NaN values; default red (1,
            0, 0, 1).

    Returns:
        tuple: (matplotlib Colormap, matplotlib Normalize).
    """
    jd_max = float(jd_max)
    if not jd_max > 1.0 or not math.isfinite(jd_max):
        raise ValueError("jd_max must be a finite number > 1, got %r" % jd_max)
    base = matplotlib.colormaps[cmap] if isinstance(cmap, str) else cmap
    cm = base.with_extremes(bad=nonpos_clr, under=base(0.0), over=base(1.0))
    return cm, _mcolors.LogNorm(1.0 / jd_max, jd_max)


def _host_hfield(vf, isVF):
    """A host H-field copy of vf."""
    h = core.Field3D(vf.grid(), core.MEM_HOST)
    core.Copy(h, vf)
    if isVF:
        core.VtoH_I(h)
    return h


def JacDetPlot(vf, title='Jac. Det.', jd_max=10.0, cmap='PRGn', nonpos_clr=(1.0, 0.0, 0.0, 1.0),
               sliceIdx=None, dim='z', isVF=True, newFig=False, ax=None, colorbar=False, t=False,
               fname=None):
    """Shows a slice of the Jacobian determinant of a deformation (``JacDetH``
    of the H-field, or of x + v / spacing for a V-field) on the log colour
    scale of JacDetCMap; non-positive values (folds) in ``nonpos_clr``.
    As the legacy, no colorbar by default (``plt.colorbar()`` next adds one
    for the image, which is left current); ``colorbar=True`` adds one.
    Returns (fig, ax).

    Args:
        vf (Field3D): the deformation: a V-field (displacement, physical units) or an H-field
            (``isVF=False``), any memory type.
        title (str, optional): the axes title; default None (none).
        jd_max (float): the end of the log scale: 1 / jd_max .. jd_max; default 10.
        cmap (str or Colormap): the diverging map whose middle colour is 1; default 'PRGn'.
        nonpos_clr (RGBA tuple): the colour of non-positive (folding) or NaN values; default red (1,
            0, 0, 1).
        sliceIdx (int, optional): the slice index along ``dim``; default None = the middle slice.
        dim (str or int): the axis the slice is taken across: 'x', 'y', 'z' (or 0, 1, 2); default
            'z'.
        isVF (bool): ``vf`` is a V-field (True, default; mapped as x + v / spacing) or an H-field
            (False).
        newFig (bool): draw into a new figure (True) or the current axes (False, default).
        ax (matplotlib Axes, optional): draw into these axes (overrides ``newFig``); default None.
        colorbar (bool): add a colorbar; default False (the drawn image is left current, so
            ``plt.colorbar()`` works next).
        t (bool): transpose the slice (swap rows and columns); default False.
        fname (str, optional): also save the figure to this file (written atomically); default None.

    Returns:
        tuple: (matplotlib Figure, matplotlib Axes).
    """
    if not IsField3D(vf):
        raise TypeError("JacDetPlot expects a Field3D, got %s" % type(vf).__name__)
    h = _host_hfield(vf, isVF)
    jd = core.Image3D(h.grid(), core.MEM_HOST)
    core.JacDetH(jd, h)
    s = _image_slice(jd, sliceIdx, dim, t)
    cm, norm = JacDetCMap(jd_max, cmap, nonpos_clr)
    fig, ax = _axes(newFig, ax)
    img = ax.imshow(np.ma.masked_where(~(s > 0), s), cmap=cm, norm=norm, interpolation='nearest')
    ax.set_axis_off()
    _make_current(fig, ax, img)
    if colorbar:
        fig.colorbar(img, ax=ax, extend='both')
    return _finish(fig, ax, title, fname)


def DefSeriesIter(V, inverse=False, asVField=False, scratch=None):
    """Iterates over the deformations of the flow of velocity fields V:
    yields (k, h_k) for k = 0 (identity) .. N, h_k = ComposeDef(V, k / N,
    inverse=inverse, asVField=asVField), computed incrementally (one
    composition per step). Each h_k is a new Field3D.

    Args:
        V (list of Field3D): the N velocity fields (V-fields, physical units), one per time step.
        inverse (bool): the inverse deformations; default False.
        asVField (bool): yield V-fields (h - x, physical units) instead of H-fields; default False.
        scratch (Field3D, optional): scratch field on V's grid; default None (allocated).

    Yields:
        tuple: (k, Field3D h_k).
    """
    V = list(V)
    if not V:
        raise ValueError("DefSeriesIter needs at least one velocity field")
    h = ComposeDef(V, 0.0)
    g, m = h.grid(), h.memType()
    s = check_scratch(scratch, g, m, "scratch")

    def out(f):
        c = f.copy()
        if asVField:
            core.HtoV_I(c)
        return c

    yield 0, out(h)
    for k, v in enumerate(V):
        if inverse:
            core.ComposeHVInv(s, h, v)
        else:
            core.ComposeVH(s, v, h)
        h, s = s, h
        yield k + 1, out(h)


def ExtractSliceFunc(sliceIdx=None, dim='z'):
    """A function obj -> 2-D NumPy slice (``sliceIdx`` along ``dim``, default
    the middle) for Image3D (A, B), Field3D (A, B, 3) and NumPy arrays.

    Args:
        sliceIdx (int, optional): the slice index along ``dim``; default None = the middle slice.
        dim (str or int): the axis the slice is taken across: 'x', 'y', 'z' (or 0, 1, 2); default
            'z'.

    Returns:
        callable: obj -> 2-D numpy.ndarray.
    """
    d = axis_index(dim)

    def extract(obj):
        if IsImage3D(obj) or IsField3D(obj):
            return np.asarray(ExtractSliceArr(AsNPCopy(obj), sliceIdx, d))
        return np.asarray(ExtractSliceArr(np.asarray(obj), sliceIdx, d))
    return extract


def GenDefFrames(I0, V, outPattern=None, sliceIdx=None, dim='z', cmap='gray', rng=None,
                 gridEvery=0, t=False):
    """The frames of an image deformed along the flow of V: frame k is the
    slice of I0 o h_k^-1 (``ApplyH`` with the inverse map of
    DefSeriesIter), k = 0 .. N. With ``outPattern`` ('f%03d.png',
    'f{:03d}.png' or a name to number) each frame is also written as a PNG
    figure, with the deformed grid (every ``gridEvery`` voxels) drawn over
    it when gridEvery > 0. ``rng``: the grey scale, default I0's range.
    Returns the list of 2-D frames.

    Args:
        I0 (Image3D): the image deformed along the flow.
        V (list of Field3D): the N velocity fields (V-fields, physical units), one per time step.
        outPattern (str, optional): frame file names: 'f%03d.png', 'f{:03d}.png' or a name to
            number; default None (no files).
        sliceIdx (int, optional): the slice index along ``dim``; default None = the middle slice.
        dim (str or int): the axis the slice is taken across: 'x', 'y', 'z' (or 0, 1, 2); default
            'z'.
        cmap (str or matplotlib Colormap): the colour map; default 'gray'.
        rng (tuple of 2 floats, optional): the (min, max) of the grey scale; default None = the
            data's range.
        gridEvery (int): draw the deformed grid every ``gridEvery`` voxels over the frames (0: no
            grid); default 0.
        t (bool): transpose the slice (swap rows and columns); default False.

    Returns:
        list of numpy.ndarray: the 2-D frames.
    """
    if not IsImage3D(I0):
        raise TypeError("GenDefFrames expects an Image3D, got %s" % type(I0).__name__)
    V = list(V)
    for v in V:
        if not IsField3D(v) or v.grid() != I0.grid() or v.memType() != I0.memType():
            raise ValueError("the velocity fields must be Field3Ds on I0's grid and memory type")
    if rng is None:
        a = AsNPCopy(I0)
        rng = (float(np.nanmin(a)), float(np.nanmax(a))) if a.size else None
    extract = ExtractSliceFunc(sliceIdx, dim)
    Ik = core.Image3D(I0.grid(), I0.memType())
    frames = []
    fwd = DefSeriesIter(V, inverse=False) if gridEvery else None
    for k, ginv in DefSeriesIter(V, inverse=True):
        core.ApplyH(Ik, I0, ginv)
        fr = extract(Ik)
        fr = fr.T if t else fr
        frames.append(fr)
        h = next(fwd)[1] if fwd is not None else None
        if outPattern is not None:
            fig, ax = DispImage(fr, cmap=cmap, rng=rng, newFig=True, title="t = %d/%d" % (k, len(V)))
            if h is not None:
                GridPlot(h, sliceIdx, dim, every=int(gridEvery), isVF=False, plotBase=False,
                         ax=ax, t=t)
            _atomic_mpl(frame_name(os.fspath(outPattern), k),
                        lambda tmp, fmt: fig.savefig(tmp, format=fmt), 'GenDefFrames')
            plt.close(fig)
    return frames


def SampleCMap(cmap, n):
    """n colours (an (n, 4) RGBA float array) sampled evenly from a colour
    map (name or Colormap), from its first to its last colour.

    Args:
        cmap (str or matplotlib Colormap): the colour map.
        n (int): the number of colours.

    Returns:
        numpy.ndarray: (n, 4) RGBA floats.
    """
    if not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError("n must be an integer >= 1, got %r" % (n,))
    cm = matplotlib.colormaps[cmap] if isinstance(cmap, str) else cmap
    return np.asarray(cm(np.linspace(0.0, 1.0, int(n))))


def EnergyPlot(energy, trim=0.05, legend=None, title='Energy', newFig=True, ax=None,
               xlabel='iteration', fname=None, colors=None):
    """Plots energy curves: ``energy`` is one series of numbers or a list of
    series (e.g. [total, image term, regulariser], each a list per
    iteration). The y range leaves out the first ``trim`` fraction of the
    iterations (the initial drop) so that convergence is visible; the whole
    curves are drawn. ``legend``: one label per series. Returns (fig, ax).

    Args:
        energy (list of float or list of lists of float): one series per curve, one value per
            iteration.
        trim (float): fraction of the first iterations left out of the y range; default 0.05.
        legend (list of str, optional): one label per series; default None (no legend).
        title (str, optional): the axes title; default None (none).
        newFig (bool): draw into a new figure (True, default) or the current axes (False).
        ax (matplotlib Axes, optional): draw into these axes (overrides ``newFig``); default None.
        xlabel (str): the x axis label; default 'iteration'.
        fname (str, optional): also save the figure to this file (written atomically); default None.
        colors (list of colours, optional): one colour per series; default None (matplotlib's
            cycle).

    Returns:
        tuple: (matplotlib Figure, matplotlib Axes).
    """
    trim = float(trim)
    if not 0.0 <= trim < 1.0:
        raise ValueError("trim must be in [0, 1), got %r" % trim)
    if np.ndim(energy) == 1 and len(energy) and np.isscalar(energy[0]):
        series = [np.asarray(energy, dtype=np.float64)]
    else:
        try:
            series = [np.asarray(s, dtype=np.float64).ravel() for s in energy]
        except (TypeError, ValueError):
            raise TypeError("energy must be a series of numbers or a list of series") from None
    if not series or any(s.size == 0 for s in series):
        raise ValueError("EnergyPlot needs non-empty series")
    if legend is not None and len(legend) != len(series):
        raise ValueError("legend needs %d labels, got %d" % (len(series), len(legend)))
    cols = SampleCMap('tab10', 10) if colors is None else colors
    fig, ax = _axes(newFig, ax)
    kept = []
    for i, s in enumerate(series):
        ax.plot(np.arange(s.size), s, color=cols[i % len(cols)],
                label=None if legend is None else legend[i])
        kept.append(s[int(math.ceil(trim * s.size)):] if s.size > 1 else s)
    kept = np.concatenate(kept)
    kept = kept[np.isfinite(kept)]
    if kept.size:
        lo, hi = float(kept.min()), float(kept.max())
        pad = 0.05 * (hi - lo) if hi > lo else (abs(hi) * 0.05 or 1.0)
        ax.set_ylim(lo - pad, hi + pad)
    ax.set_xlabel(xlabel)
    if legend is not None:
        ax.legend()
    _make_current(fig, ax)
    return _finish(fig, ax, title, fname)
