"""Writing the results of a registration (the command line's output side).

    summary = write_outputs(outdir, result, fixed, moving, extra=None, mask=None, title=None)

Files written to ``outdir`` (created if needed), every volume with the fixed
image's size, spacing, origin and direction, all or nothing: into a staging
folder first, moved into ``outdir`` when every one was written
(PyCA.Apps.staging), so a failure (a full disk) leaves ``outdir`` as it was:

=================== ==========================================================
``deformed.nii.gz`` the moving image deformed onto the fixed grid (with
                    ``moving_space['image']``, pyca-register's: the original
                    moving file in its own intensities through warp.nii.gz,
                    and ``deformed_preprocessed.nii.gz`` the registration's
                    own, N4-corrected and normalised, deformed image)
``hfield.nii.gz``   the H-field (3-vector NIfTI): for each fixed voxel the
                    voxel coordinates (x, y, z indices) in the moving image
                    *as given to the registration*, i.e. already on the fixed
                    grid (``PyCA.Apps.io.load_pair``); deformed = ApplyH(moving, h)
``hinv.nii.gz``     its inverse, where the method has one (LDDMM, greedy)
``warp.nii.gz``     the whole transform (affine pre-alignment and deformation)
                    as an ITK displacement field in physical LPS mm on the
                    fixed grid, into the ORIGINAL moving file's space
                    (SimpleITK DisplacementFieldTransform, antsApplyTransforms)
``transform.json``  the fixed and original moving grids and the affine: what
                    pyca-apply needs (PyCA.Apps.apply)
``momentum.nii.gz`` LDDMM's initial momentum (result.momentum), LDDMM only
``jacdet.nii.gz``   the Jacobian determinant of h (voxel units: 1 = no change
                    of volume, <= 0 = folded)
``summary.png``     one page: images, differences, the deformation grid, the
                    Jacobian determinant and the energy curve
``summary.json``    the key numbers (``SUMMARY_KEYS`` and ``extra``; where
                    ``hinv.nii.gz`` is written, also ``hinv_jacdet_min`` and
                    ``hinv_folded_voxels``, its det J checked as h's is;
                    ``memory``: the predicted and measured peak memory)
=================== ==========================================================

The mismatch is the mean squared intensity difference with the fixed image
(inside ``mask`` when given), on the full-resolution fixed grid: initial =
moving, final = deformed; ``mismatch_ratio`` = final / initial. It is
measured so whatever the registration's similarity ``metric`` (named in the
summary, ``metric``; the energy curve is that metric's energy).
``ncc_ratio`` is the same ratio after the best global linear intensity map
(PyCA.Apps.metrics.ncc_ratio); ``warnings`` lists what the user should know:
"the mismatch barely fell" when both ratios stay above 0.75
(PyCA.Apps.metrics.mismatch_warnings), empty otherwise.
"""
import math
import numbers
import os

import numpy as np

import PyCA.Core as ca
from PyCA.Common import SaveITKImage, SaveITKField, GetDirection

from .memory import memory_summary
from .figures import fmt, planes, plane_axes, plane_coords, plane_extent, plane_slice
from .transform import displacement_field, grid_record, resample_through, write_transform_files

__all__ = ['write_outputs', 'mismatch', 'jacobian_determinant', 'thread_count', 'jsonable',
           'SUMMARY_KEYS']

SUMMARY_KEYS = ('method', 'initial_mismatch', 'final_mismatch', 'mismatch_ratio', 'jacdet_min',
                'jacdet_max', 'folded_voxels', 'iterations', 'seconds_per_iter', 'total_seconds',
                'device', 'threads', 'grid', 'config')

#: the colour of folded voxels (jacdet <= 0) in summary.png
FOLD_COLOUR = '#00ff00'


# --------------------------------------------------------------------------- helpers

def _host_image(im):
    if im.memType() == ca.MEM_DEVICE:
        tmp = ca.Image3D(im.grid(), ca.MEM_HOST)
        ca.Copy(tmp, im)
        return tmp
    return im


def _host_field(f):
    if f.memType() == ca.MEM_DEVICE:
        tmp = ca.Field3D(f.grid(), ca.MEM_HOST)
        ca.Copy(tmp, f)
        return tmp
    return f


def _arr(im):
    return np.array(_host_image(im).asnp(), dtype=np.float64)


def _on_fixed_grid(obj, fixed, what):
    """A host copy of ``obj`` (Image3D or Field3D) carrying ``fixed``'s grid
    exactly (size must agree)."""
    if tuple(obj.size()) != tuple(fixed.size()):
        raise ValueError("write_outputs: %s has size %s, the fixed image %s"
                         % (what, tuple(obj.size()), tuple(fixed.size())))
    if isinstance(obj, ca.Field3D):
        src = _host_field(obj)
        out = ca.Field3D(fixed.grid(), ca.MEM_HOST)
        for d, s in zip(out.asnp(), src.asnp()):
            d[...] = s
    else:
        src = _host_image(obj)
        out = ca.Image3D(fixed.grid(), ca.MEM_HOST)
        out.asnp()[...] = src.asnp()
    return out


def mismatch(a, b, mask=None):
    """Mean squared difference of two images (arrays or Image3D), inside
    ``mask`` (non-zero) when given.

    Args:
        a (numpy.ndarray or Image3D): first image.
        b (numpy.ndarray or Image3D): second image, same shape.
        mask (numpy.ndarray or Image3D, optional): non-zero = the voxels counted; default None
            (all).

    Returns:
        float: the mean of (a - b)^2 over the counted voxels.
    """
    a = _arr(a) if isinstance(a, ca.Image3D) else np.asarray(a, np.float64)
    b = _arr(b) if isinstance(b, ca.Image3D) else np.asarray(b, np.float64)
    d2 = (a - b) ** 2
    if mask is not None:
        m = (_arr(mask) if isinstance(mask, ca.Image3D) else np.asarray(mask)) != 0
        d2 = d2[m]
    return float(np.mean(d2)) if d2.size else float('nan')


def jacobian_determinant(h):
    """det(dh/dx) of an H-field in voxel units (ca.JacDetHVoxel: 1 for the
    identity on any spacing; ca.JacDetH divides by the voxel volume as the
    legacy): a host Image3D.

    Args:
        h (Field3D): an H-field (voxel coordinates), any memory type.

    Returns:
        Image3D: host memory, on ``h``'s grid.
    """
    hh = _host_field(h)
    j = ca.Image3D(hh.grid(), ca.MEM_HOST)
    ca.JacDetHVoxel(j, hh)
    return j


def thread_count():
    """The number of OpenMP threads PyCA computes with."""
    f = getattr(ca, 'GetNumberOfThreads', None)
    if f is not None:
        try:
            return int(f())
        except Exception:
            pass
    env = os.environ.get('OMP_NUM_THREADS', '').split(',')[0].strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def jsonable(v):
    """A copy of ``v`` that json.dump writes: dicts, lists, numbers (None
    for non-finite ones), strings, None; NumPy values and PyCA vectors
    converted, anything else as its str.

    Args:
        v (object): the value.

    Returns:
        object: the JSON-ready value.
    """
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return jsonable(v.tolist())
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        v = float(v)
        return v if math.isfinite(v) else None
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (ca.Vec3Df, ca.Vec3Di)):
        return [jsonable(x) for x in v]
    return str(v)


# --------------------------------------------------------------------------- the page

def _draw_summary(path, fixed, moving, deformed, h, jac, mask, result, summary, title):
    # a Figure with an Agg canvas: no pyplot, no display, the caller's backend untouched
    from matplotlib.figure import Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import TwoSlopeNorm, ListedColormap

    g = fixed.grid()
    F, M, D = _arr(fixed), _arr(moving), _arr(deformed)
    J = np.array(jac.asnp(), np.float64)
    H = [np.array(c, np.float64) for c in _host_field(h).asnp()]
    Mk = None if mask is None else (_arr(mask) != 0)
    dm, dd = np.abs(F - M), np.abs(F - D)
    lo, hi = np.percentile(np.concatenate([F.ravel(), M.ravel()]), [0.5, 99.5])
    if not hi > lo:
        lo, hi = float(min(F.min(), M.min())), float(max(F.max(), M.max()) + 1e-6)
    dmax = float(np.percentile(dm, 99.5)) or float(dm.max()) or 1.0
    jmin, jmax = float(np.nanmin(J)), float(np.nanmax(J))
    span_lo = min(max(1.0 - jmin, 0.05), 1.0)
    span_hi = max(jmax - 1.0, 0.05)
    jnorm = TwoSlopeNorm(vmin=1.0 - span_lo, vcenter=1.0, vmax=1.0 + span_hi)
    fold_cmap = ListedColormap([FOLD_COLOUR])
    cuts = planes(tuple(g.size()))
    is2d = len(cuts) == 1

    fig = Figure(figsize=(16, 10), dpi=100, layout='constrained')
    FigureCanvasAgg(fig)
    fig.get_layout_engine().set(w_pad=0.02, h_pad=0.02, wspace=0.01, hspace=0.02)
    cb = 0.06  # width ratio of a colour-bar column
    if is2d:
        # row 0: fixed, moving, |f - m|, [bar], numbers; row 1: grid, deformed, |f - d|, [bar], det J, [bar]
        gs = fig.add_gridspec(3, 6, width_ratios=[1, 1, 1, cb, 1, cb], height_ratios=[1, 1, 0.72])
        cells = {'fixed': gs[0, 0], 'moving': gs[0, 1], 'dm': gs[0, 2],
                 'grid': gs[1, 0], 'deformed': gs[1, 1], 'dd': gs[1, 2], 'jac': gs[1, 4]}
        rows = [(cuts[0], cells)]
        cb_cells = {'dd': gs[0:2, 3], 'jac': gs[1, 5]}
        energy_cell, text_cell = gs[2, :], gs[0, 4:]
    else:
        # one row per plane: fixed, moving, deformed, |f - m|, |f - d|, [bar], grid, det J, [bar]
        gs = fig.add_gridspec(4, 9, width_ratios=[1, 1, 1, 1, 1, cb, 1, 1, cb],
                              height_ratios=[1, 1, 1, 0.95])
        cols = {'fixed': 0, 'moving': 1, 'deformed': 2, 'dm': 3, 'dd': 4, 'grid': 6, 'jac': 7}
        rows = [(p, {n: gs[r, c] for n, c in cols.items()}) for r, p in enumerate(cuts)]
        cb_cells = {'dd': gs[1, 5], 'jac': gs[1, 8]}
        energy_cell, text_cell = gs[3, 0:5], gs[3, 5:]

    col_titles = {
        'fixed': 'fixed\n%s' % ('(mask outlined)' if Mk is not None else ''),
        'moving': 'moving\nMSE %s' % fmt(summary['initial_mismatch']),
        'deformed': '%s\nMSE %s' % ('deformed (preprocessed)' if summary['mismatch_images'] != 'as registered'
                                      else 'deformed', fmt(summary['final_mismatch'])),
        'dm': '|fixed - moving|\n(same colour scale)',
        'dd': '|fixed - deformed|\nMSE ratio %s' % fmt(summary['mismatch_ratio']),
        'grid': 'deformation grid\n(lines of h) on deformed',
        'jac': 'det J  [%s, %s]\n%d folded voxel%s' % (fmt(jmin), fmt(jmax), summary['folded_voxels'],
                                                      '' if summary['folded_voxels'] == 1 else 's'),
    }
    maps = {}
    for r, ((pname, axis, k), cells) in enumerate(rows):
        ext = plane_extent(g, axis)
        for name, cell in cells.items():
            ax = fig.add_subplot(cell)
            ax.set_xticks([])
            ax.set_yticks([])
            if name in ('fixed', 'moving', 'deformed', 'grid'):
                src = {'fixed': F, 'moving': M, 'deformed': D, 'grid': D}[name]
                ax.imshow(plane_slice(src, axis, k), cmap='gray', vmin=lo, vmax=hi, origin='lower',
                          extent=ext, interpolation='nearest')
                if name == 'fixed' and Mk is not None and Mk.any() and not Mk.all():
                    xs, ys = plane_coords(g, axis)
                    sl = plane_slice(Mk.astype(float), axis, k)
                    if 0 < sl.sum() < sl.size:
                        ax.contour(xs, ys, sl, levels=[0.5], colors='deepskyblue', linewidths=0.8)
                if name == 'grid':
                    _draw_grid(ax, g, H, axis, k)
            elif name in ('dm', 'dd'):
                src = dm if name == 'dm' else dd
                maps['dd'] = ax.imshow(plane_slice(src, axis, k), cmap='magma', vmin=0.0, vmax=dmax,
                                       origin='lower', extent=ext, interpolation='nearest')
            elif name == 'jac':
                maps['jac'] = ax.imshow(plane_slice(J, axis, k), cmap='RdBu_r', norm=jnorm, origin='lower',
                                        extent=ext, interpolation='nearest')
                fold = plane_slice((J <= 0) | ~np.isfinite(J), axis, k)
                if fold.any():
                    ax.imshow(np.ma.masked_where(~fold, fold.astype(float)), cmap=fold_cmap,
                              origin='lower', extent=ext, interpolation='nearest', vmin=0, vmax=1)
            ax.set_xlim(ext[0], ext[1])
            ax.set_ylim(ext[2], ext[3])
            if r == 0:
                ax.set_title(col_titles[name], fontsize=9)
            if name == 'fixed' and not is2d:
                ax.set_ylabel(pname, fontsize=10)
    for name, label in (('dd', '|difference|'), ('jac', 'det J')):
        cax = fig.add_subplot(cb_cells[name])
        bar = fig.colorbar(maps[name], cax=cax)
        bar.ax.tick_params(labelsize=7)
        bar.set_label(label, fontsize=8)
        if name == 'jac' and summary['folded_voxels']:
            bar.ax.set_title('folds', color='green', fontsize=7)

    _draw_energy(fig.add_subplot(energy_cell), result)
    _draw_text(fig.add_subplot(text_cell), summary, 11 if is2d else 10)

    head = title or ('PyCA %s registration' % str(summary['method']).upper())
    numbers_line = ('mismatch %s -> %s (ratio %s),  min det J %s,  %d folded voxels,  '
                    '%d iterations in %.3g s (%s)'
                    % (fmt(summary['initial_mismatch']), fmt(summary['final_mismatch']),
                       fmt(summary['mismatch_ratio']), fmt(jmin), summary['folded_voxels'],
                       summary['iterations'], summary['total_seconds'] or 0.0, summary['device']))
    sep = ':  ' if len(head) + len(numbers_line) <= 150 else '\n'
    fig.suptitle(head + sep + numbers_line, fontsize=12 if sep != '\n' else 11, fontweight='bold')
    from PyCA.Common.atomic import atomic_save
    atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=100, format='png'), 'write_outputs',
                 itk_errors=False)   # temporary beside it, fsync, os.replace


def _draw_grid(ax, g, H, axis, k):
    """Lines of the H-field in the slice: where an in-plane component of h
    (moving voxel coordinates) is a multiple of the step, i.e. the moving
    image's regular grid as it appears in the deformed image."""
    u, v = plane_axes(axis)
    xs, ys = plane_coords(g, axis)
    n = tuple(g.size())
    step = max(1, int(round(max(n[u], n[v]) / 16.0)))
    for comp, colour in ((u, '#ffcc00'), (v, '#ff8800')):
        c = plane_slice(H[comp], axis, k)
        if not np.isfinite(c).all() or c.max() - c.min() < 1e-6:
            continue
        levels = np.arange(math.ceil(c.min() / step) * step, c.max() + 1e-9, step)
        if levels.size == 0 or levels.size > 200:
            continue
        ax.contour(xs, ys, c, levels=levels, colors=colour, linewidths=0.7)


def energy_metric_label(cfg):
    """The metric an energy plot names: ``auto``'s choice where it made one
    (``AUTO: LNCC``, ``AUTO: ROBUST LNCC``), else the configured metric, upper case.

    Args:
        cfg (dict or None): a result's ``config``.

    Returns:
        str.
    """
    cfg = cfg or {}
    metric = str(cfg.get('metric', 'ssd')).upper()
    used = cfg.get('metric_used')
    if isinstance(used, dict) and used.get('chosen'):
        metric = '%s: %s' % (metric, str(used['chosen']).upper())
    return metric


def _draw_energy(ax, result):
    E = np.asarray(result.energy, np.float64)
    it = np.arange(1, E.size + 1)
    if E.size == 0:
        ax.text(0.5, 0.5, 'no energy recorded', ha='center', va='center', transform=ax.transAxes)
        ax.set_axis_off()
        return
    ax.plot(it, E, color='black', lw=1.6, label='total')
    terms = result.energy_terms or {}
    colours = {'image': 'tab:blue', 'reg': 'tab:red'}
    shown = [E]
    for name, vals in terms.items():
        vals = np.asarray(vals, np.float64)
        if vals.size == E.size and np.any(vals != 0) and not np.allclose(vals, E):
            ax.plot(it, vals, lw=1.0, ls='--', color=colours.get(name), label=name)
            shown.append(vals)
    finite = np.concatenate(shown)
    finite = finite[np.isfinite(finite)]
    if finite.size and finite.min() > 0 and finite.max() / finite.min() > 20:
        ax.set_yscale('log')
    sc = list(result.scale_of_iter or [])
    if len(sc) == E.size and sc:
        starts = [0] + [i for i in range(1, len(sc)) if sc[i] != sc[i - 1]]
        for s in starts:
            if s > 0:
                ax.axvline(s + 0.5, color='gray', ls=':', lw=1.2)
            ax.text(s + 1, 0.98, ' scale %s' % sc[s], transform=ax.get_xaxis_transform(),
                    va='top', ha='left', fontsize=8, color='dimgray')
    ax.set_xlabel('iteration (all scales)', fontsize=9)
    metric = energy_metric_label(result.config)
    ax.set_ylabel('energy (%s)' % metric, fontsize=9)
    ax.set_title('energy (metric %s): %s -> %s' % (metric, fmt(E[0], 4), fmt(E[-1], 4)), fontsize=10)
    ax.set_xlim(0.5, max(E.size, 1) + 0.5)
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.tick_params(labelsize=8)
    ax.legend(fontsize=8, loc='upper right', framealpha=0.8)


def _draw_text(ax, s, fontsize=10):
    ax.set_axis_off()
    gr = s['grid']
    rows = [
        ('method / metric', '%s / %s' % (s['method'], s.get('metric', 'ssd'))),
        ('grid', '%s voxels' % 'x'.join(str(v) for v in gr['size'])),
        ('spacing / origin', '%s / %s' % (' '.join(fmt(v) for v in gr['spacing']),
                                          ' '.join(fmt(v) for v in gr['origin']))),
        ('mismatch (MSE)', '%s -> %s%s' % (fmt(s['initial_mismatch'], 4), fmt(s['final_mismatch'], 4),
                                           ' (in mask)' if s.get('mask_voxels') else '')),
        ('mismatch ratio', fmt(s['mismatch_ratio'], 4)),
        ('det J', 'min %s  max %s' % (fmt(s['jacdet_min'], 4), fmt(s['jacdet_max'], 4))),
        ('folded voxels', '%d (%.3g %%)' % (s['folded_voxels'], s.get('folded_percent', 0.0))),
        ('iterations', '%d,  %.3g s/iter,  %.3g s' % (s['iterations'], s['seconds_per_iter'] or 0,
                                                      s['total_seconds'] or 0)),
        ('device', '%s, %d thread%s' % (s['device'], s['threads'], '' if s['threads'] == 1 else 's')),
    ]
    extra = s.get('_extra') or {}
    for k, v in sorted(extra.items()):  # scalars of ``extra``, then its error-like dicts
        if isinstance(v, (numbers.Real, str)) and not isinstance(v, bool):
            rows.append((str(k)[:24], fmt(v, 4) if isinstance(v, numbers.Real) else v[:40]))
    for k, v in sorted(extra.items()):
        if isinstance(v, dict) and 'error' in str(k).lower():
            items = [(a, b) for a, b in v.items() if isinstance(b, numbers.Real) and not isinstance(b, bool)]
            if items:
                rows.append((str(k)[:24], ', '.join('%s %s' % (a, fmt(b)) for a, b in items[:3])))
    rows = rows[:14]
    w = max(len(k) for k, _ in rows)
    text = '\n'.join('%-*s  %s' % (w, k, v) for k, v in rows)
    text += '\n\ndet J: blue < 1 (shrinks), red > 1 (grows),\n       green <= 0 (folded)'
    ax.text(0.02, 0.98, text, transform=ax.transAxes, fontsize=fontsize, va='top', ha='left',
            family='monospace', linespacing=1.45,
            bbox=dict(boxstyle='round,pad=0.6', facecolor='#f4f4f4', edgecolor='#cccccc'))


# --------------------------------------------------------------------------- entry point

def write_outputs(outdir, result, fixed, moving, extra=None, mask=None, title=None, stage=None,
                  moving_space=None):
    """Writes deformed / hfield / [hinv] / [momentum] / jacdet NIfTI files,
    summary.png and summary.json to ``outdir`` (see the module notes) and
    returns the summary dict. ``fixed`` and ``moving`` are the images given
    to the registration (the moving one on the fixed grid); ``mask`` (0/1 on
    the fixed grid) restricts the mismatch; ``extra`` entries are added to
    the summary; ``title`` heads the page.

    All or nothing (PyCA.Apps.staging): the files are written into a
    staging folder and moved into ``outdir`` only when every one was
    written, so a failure (a full disk: OSError naming the file and the
    cause) leaves ``outdir`` as it was. ``stage``: an OutputStage of the
    caller's (which then also commits it), for runs with more files.
    moving_space: the original moving file's grid and the affine
    pre-alignment, for warp.nii.gz and transform.json (None: the moving
    image as given, no affine; see PyCA.Apps.transform.write_transform_files).

    Args:
        outdir (str or os.PathLike): the output folder (made if missing).
        result (RegistrationResult): the registration to write.
        fixed (Image3D): the fixed image given to the registration.
        moving (Image3D): the moving image given to the registration (on the fixed grid).
        extra (dict, optional): entries added to the summary; default None.
        mask (Image3D, optional): 0/1 on the fixed grid: restricts the mismatch; default None.
        title (str, optional): the heading of summary.png; default None.
        stage (OutputStage, optional): the caller's staging folder (the caller commits it); default
            None = a new one, committed here.
        moving_space (dict, optional): the original moving file's grid and the affine pre-alignment,
            for warp.nii.gz and transform.json, and its ``image`` (the original moving file as a
            SimpleITK image, its own grid and intensities): deformed.nii.gz is then that image
            through warp.nii.gz (what ``pyca-apply`` gives) and the registration's preprocessed
            deformed image is deformed_preprocessed.nii.gz; default None (the moving image as
            given, no affine).

    Returns:
        dict: the summary (also written to summary.json), with the paths under ``files``.

    Raises:
        OSError: a file that cannot be written (nothing is left in ``outdir``).
        ValueError: images or fields not on the fixed grid.
    """
    from .staging import OutputStage
    outdir = os.fspath(outdir)
    own = stage is None
    if own:
        stage = OutputStage(outdir)
    try:
        data = _write_outputs(stage, result, fixed, moving, extra, mask, title, moving_space)
        if own:
            stage.commit()
    except BaseException:
        if own:
            stage.abort()
        raise
    return data


def _write_warped_original(path, original, h, record, fixed, direction):
    """The original moving image (a SimpleITK image on its own grid, its own
    intensities) warped onto the fixed grid through the transform of
    ``record`` (warp.nii.gz's: the affine and h), as ``pyca-apply --interp
    linear`` does, saved to ``path`` as the other volumes are."""
    from .io import from_sitk
    dim = int(record['dimension'])
    comps = displacement_field(h, record['fixed_grid'], record['affine'], dim)
    img = resample_through(original, comps, record['fixed_grid'], dim, 'linear')
    del comps
    SaveITKImage(from_sitk(img, fixed), path, True, direction=direction)


def _jac_stats(J):
    """(min, max, folded voxels) of a Jacobian determinant array: NaN ignored by
    min and max (NaN where every value is NaN), and counted as folded with
    det J <= 0 and infinities."""
    if np.isnan(J).all():
        lo = hi = float('nan')
    else:
        lo, hi = float(np.nanmin(J)), float(np.nanmax(J))
    return lo, hi, int(np.count_nonzero((J <= 0) | ~np.isfinite(J)))


def _write_outputs(stage, result, fixed, moving, extra, mask, title, moving_space=None):
    direction = GetDirection(fixed)
    fixed_h = _on_fixed_grid(fixed, fixed, 'the fixed image')
    moving_h = _on_fixed_grid(moving, fixed, 'the moving image')
    h = _on_fixed_grid(result.h, fixed, 'result.h')
    if result.deformed is not None and tuple(result.deformed.size()) == tuple(fixed.size()):
        deformed = _on_fixed_grid(result.deformed, fixed, 'result.deformed')
    else:  # recompute at full resolution
        deformed = ca.Image3D(fixed.grid(), ca.MEM_HOST)
        ca.ApplyH(deformed, moving_h, h)
    mask_h = None if mask is None else _on_fixed_grid(mask, fixed, 'the mask')

    files = {}

    def out(name):
        files[name.split('.')[0]] = stage.final(name)
        return stage.path(name)

    original = (moving_space or {}).get('image')
    # deformed.nii.gz: the moving image in its own intensities (the original
    # file, through warp.nii.gz, below); the registration's own (preprocessed)
    # deformed image is then deformed_preprocessed.nii.gz
    SaveITKImage(deformed, out('deformed_preprocessed.nii.gz' if original is not None else 'deformed.nii.gz'),
                 True, direction=direction)
    SaveITKField(h, out('hfield.nii.gz'), True, direction=direction)
    hinv_fold = None
    if getattr(result, 'hinv', None) is not None and tuple(result.hinv.size()) == tuple(fixed.size()):
        hinv_h = _on_fixed_grid(result.hinv, fixed, 'result.hinv')
        SaveITKField(hinv_h, out('hinv.nii.gz'), True, direction=direction)
        # the inverse is checked too: greedy's is built by composition and can
        # fold where h compresses strongly (disc against C) while h does not
        hinv_fold = _jac_stats(np.asarray(jacobian_determinant(hinv_h).asnp()))
    record = write_transform_files(out, h, fixed, moving_space, hinv='hinv' in files)
    if original is not None:
        _write_warped_original(out('deformed.nii.gz'), original, h, record, fixed_h, direction)
    if getattr(result, 'momentum', None) is not None:
        SaveITKField(_on_fixed_grid(result.momentum, fixed, 'result.momentum'), out('momentum.nii.gz'),
                     True, direction=direction)
    jac = jacobian_determinant(h)
    SaveITKImage(jac, out('jacdet.nii.gz'), True, direction=direction)

    J = np.asarray(jac.asnp())
    jmin, jmax, folded = _jac_stats(J)
    m0 = mismatch(fixed_h, moving_h, mask_h)
    m1 = mismatch(fixed_h, deformed, mask_h)
    cfg = result.config or {}
    summary = dict(
        method=result.method,
        metric=str(cfg.get('metric', 'ssd')),
        metric_params=({k: v for k, v in cfg['metric_used'].items() if k != 'metric'}
                       if isinstance(cfg.get('metric_used'), dict) else
                       {k: cfg[k] for k in ('lncc_radius', 'mi_bins')
                        if k in cfg and cfg.get('metric') == {'lncc_radius': 'lncc', 'mi_bins': 'mi'}[k]}),
        initial_mismatch=m0,
        final_mismatch=m1,
        mismatch_ratio=(m1 / m0) if m0 > 0 else (0.0 if m1 == 0 else float('inf')),
        jacdet_min=jmin, jacdet_max=jmax,
        folded_voxels=folded,
        folded_percent=100.0 * folded / J.size,
        iterations=int(result.iterations),
        seconds_per_iter=float(result.seconds_per_iter),
        total_seconds=float(result.seconds),
        device=str(result.device),
        threads=thread_count(),
        # predicted peak memory (PyCA.Apps.memory) beside the measured peaks: ru_maxrss of the
        # process so far, and the GPU's where a device run sampled it (else None)
        memory=memory_summary(result),
        grid=grid_record(fixed.grid(), direction=False),
        direction=list(direction) if direction is not None else None,
        hfield_units='voxel indices (x, y, z) of the moving image resampled on the fixed grid',
        config=jsonable(result.config or {}),
        energy_first=float(result.energy[0]) if result.energy else None,
        energy_last=float(result.energy[-1]) if result.energy else None,
        # what the mismatch figures and the picture compare: the images given
        # to the registration (preprocessed by pyca-register: N4, normalised)
        mismatch_images=('as registered (preprocessed; deformed.nii.gz is the original moving '
                         'image through warp.nii.gz)' if original is not None else 'as registered'),
    )
    # a run whose mismatch barely fell says so (PyCA.Apps.metrics.mismatch_warnings): the
    # mismatch ratio after the best global linear intensity map, and the warnings (a list)
    from .metrics import ncc_ratio, mismatch_warnings
    summary['ncc_ratio'] = ncc_ratio(fixed_h, moving_h, deformed)
    summary['warnings'] = mismatch_warnings(summary['mismatch_ratio'], summary['ncc_ratio'])
    if hinv_fold is not None:
        summary['hinv_jacdet_min'], _, summary['hinv_folded_voxels'] = hinv_fold
    if mask_h is not None:
        summary['mask_voxels'] = int(np.count_nonzero(mask_h.asnp()))
    extra = dict(extra or {})
    summary.update(extra)
    summary['_extra'] = extra
    png = out('summary.png')
    files['summary_json'] = stage.final('summary.json')
    files['summary_png'] = files.pop('summary')
    _draw_summary(png, fixed_h, moving_h, deformed, h, jac, mask_h, result, summary, title)
    del summary['_extra']
    summary['files'] = dict(files)
    data = jsonable(summary)
    from PyCA.Common.atomic import atomic_json
    atomic_json(stage.path('summary.json'), data, 'write_outputs', indent=2, allow_nan=False)
    return data
