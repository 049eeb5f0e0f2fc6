"""The atlas builder's checkpoints (PyCA.Apps.atlas: ``checkpoint_every``,
``resume``).

Layout: ``out/checkpoint/iter_K/`` holds the atlas after K iterations
(``atlas.nii.gz``, written by rank 0) and every subject's warm start
(``subject_NNNNN_state.nii.gz``: greedy h_i, LDDMM m_i; float32 NIfTI, so a
reload is bitwise), each written by the rank that registers the subject;
``out/checkpoint/state.json`` (iteration, method, config, subjects,
energies, ...) names the folder and is the commit point: it is replaced
(atomically) only after every file of the folder was written and
verified, and older ``iter_*`` folders are removed after it. A resume reads
state.json and the folder it names, and refuses a checkpoint of another
method, number of subjects or registration parameters.
"""
import glob
import json
import os
import shutil

import PyCA.Core as ca
from PyCA.Common.atomic import atomic_json

from ._common import ConfigError
from .outputs import jsonable

__all__ = ['checkpoint_dir', 'state_name', 'committed_folder', 'write_checkpoint', 'read_checkpoint',
           'load_checkpoint', 'copy_to', 'on_host', 'write_json', 'CHECKED_KEYS']

#: the parameters a resumed run must share with the checkpoint's run
CHECKED_KEYS = ('register', 'warm_iters', 'jacobian_weighted', 'center', 'atlas_cg_iters')


def copy_to(obj, mType):
    """A copy of an Image3D or Field3D in ``mType`` memory (always a new object).

    Args:
        obj (Image3D or Field3D): what to copy.
        mType (MemoryType): the memory type of the copy.

    Returns:
        Image3D or Field3D: the copy, on ``obj``'s grid.
    """
    out = (ca.Image3D if isinstance(obj, ca.Image3D) else ca.Field3D)(obj.grid(), mType)
    ca.Copy(out, obj)
    return out


def on_host(obj):
    """``obj`` itself when it is in host memory (plain or pinned), else a host copy.

    Args:
        obj (Image3D or Field3D): the object.

    Returns:
        Image3D or Field3D: ``obj`` or its MEM_HOST copy.
    """
    if obj.memType() == ca.MEM_DEVICE:
        return copy_to(obj, ca.MEM_HOST)
    return obj


def write_json(path, data):
    """Writes ``data`` (made JSON-ready by outputs.jsonable) to ``path``
    atomically (PyCA.Common.atomic.atomic_json: fsync + os.replace), indented,
    without NaN.

    Args:
        path (str): the file.
        data (dict): what to write.
    """
    atomic_json(path, jsonable(data), 'build_atlas', indent=2, allow_nan=False)


def checkpoint_dir(out):
    """The checkpoint folder of an output folder.

    Args:
        out (str or os.PathLike): the atlas's output folder.

    Returns:
        str: ``out/checkpoint``.
    """
    return os.path.join(os.fspath(out), 'checkpoint')


def state_name(idx):
    """The file name of subject ``idx``'s warm start in a checkpoint folder.

    Args:
        idx (int): the subject's index.

    Returns:
        str: ``subject_NNNNN_state.nii.gz``.
    """
    return 'subject_%05d_state.nii.gz' % idx


def committed_folder(base):
    """The checkpoint folder state.json names (None: no valid state.json).

    Args:
        base (str): the checkpoint folder (:func:`checkpoint_dir`).

    Returns:
        str or None: the name of the committed ``iter_*`` folder.
    """
    try:
        with open(os.path.join(base, 'state.json')) as f:
            return json.load(f).get('folder')
    except (OSError, ValueError, AttributeError):
        return None


def write_checkpoint(ctx, out, k_done, atlas, state, method, cfg, n, energy, extra, direction=None):
    """Writes the checkpoint after ``k_done`` atlas iterations (module notes);
    collective: every rank calls it.

    Args:
        ctx (PyCA.Parallel.RankContext): the ranks.
        out (str): the atlas's output folder.
        k_done (int): the atlas iterations done.
        atlas (Image3D): the atlas after them (written by rank 0).
        state (dict of int to Field3D): this rank's subjects' warm starts.
        method (str): the atlas method's name.
        cfg (dict): the atlas's configuration (recorded, and checked by a resume).
        n (int): the number of subjects.
        energy (list of float): the energy per iteration so far.
        extra (dict): more entries of state.json (the other per-iteration numbers).
        direction (optional): the direction cosines of the files (PyCA.Common.SetDirection).

    Raises:
        OSError: a file could not be written; the previous checkpoint stays committed.
    """
    from PyCA.Common import SaveITKImage, SaveITKField
    base = checkpoint_dir(out)
    d = os.path.join(base, 'iter_%04d' % k_done)
    if ctx.rank == 0:
        os.makedirs(d, exist_ok=True)
    ctx.barrier()
    os.makedirs(d, exist_ok=True)
    # Each save is verified before it is renamed into place (a short write
    # raises OSError), so state.json below -- the commit point -- names only
    # files that are complete. A failed checkpoint removes its own folder and
    # leaves the previous one, and the state.json naming it, as they were.
    try:
        for idx, f in state.items():
            SaveITKField(on_host(f), os.path.join(d, state_name(idx)), True, direction=direction)
        if ctx.rank == 0:
            SaveITKImage(on_host(atlas), os.path.join(d, 'atlas.nii.gz'), True, direction=direction)
    except BaseException:
        if ctx.size == 1 and os.path.basename(d) != committed_folder(base):
            shutil.rmtree(d, ignore_errors=True)
        raise
    ctx.barrier()                        # every rank's files are in place
    if ctx.rank == 0:
        js = dict(iteration=k_done, method=method, n_subjects=n, ranks=ctx.size, folder=os.path.basename(d),
                  energies=list(energy), config=jsonable(cfg), **extra)
        write_json(os.path.join(base, 'state.json'), js)
        for old in glob.glob(os.path.join(base, 'iter_*')):
            if os.path.abspath(old) != os.path.abspath(d):
                shutil.rmtree(old, ignore_errors=True)
    ctx.barrier()


def read_checkpoint(out, method, n, cfg):
    """The committed checkpoint's state.json, checked against this run.

    Args:
        out (str): the atlas's output folder.
        method (str): this run's atlas method.
        n (int): this run's number of subjects.
        cfg (dict): this run's configuration (:data:`CHECKED_KEYS` must match).

    Returns:
        dict or None: state.json's entries plus ``_dir`` (the committed
        folder's path); None when there is no checkpoint.

    Raises:
        ConfigError: the checkpoint is of another method, number of subjects or parameters.
    """
    p = os.path.join(checkpoint_dir(out), 'state.json')
    if not os.path.isfile(p):
        return None
    with open(p) as f:
        js = json.load(f)
    if js.get('method') != method or int(js.get('n_subjects', -1)) != n:
        raise ConfigError("the checkpoint in %s is of a %s atlas of %s subjects, not %s of %d"
                          % (checkpoint_dir(out), js.get('method'), js.get('n_subjects'), method, n))
    old = dict(js.get('config') or {})
    new = jsonable(cfg)
    for k in CHECKED_KEYS:
        if old.get(k) != new.get(k):
            raise ConfigError("the checkpoint in %s was made with %s=%r, this run has %r: "
                              "resume with the same parameters" % (checkpoint_dir(out), k, old.get(k), new.get(k)))
    js['_dir'] = os.path.join(checkpoint_dir(out), js['folder'])
    return js


def load_checkpoint(js, atlas, subjects, grid, mType):
    """Reads a checkpoint's atlas and warm starts.

    Args:
        js (dict): what :func:`read_checkpoint` returned.
        atlas (Image3D): set to the checkpoint's atlas.
        subjects (list of int): the subjects whose warm starts to read (this rank's).
        grid (GridInfo): the atlas grid (given to the fields read).
        mType (MemoryType): the memory type of the fields.

    Returns:
        dict of int to Field3D: each subject's warm start.
    """
    from PyCA.Common import LoadITKImage, LoadITKField
    ca.Copy(atlas, LoadITKImage(os.path.join(js['_dir'], 'atlas.nii.gz')))
    state = {}
    for i in subjects:
        f = LoadITKField(os.path.join(js['_dir'], state_name(i)))
        state[i] = copy_to(f, mType)
        state[i].setGrid(grid)
    return state
