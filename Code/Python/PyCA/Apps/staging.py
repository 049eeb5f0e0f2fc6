"""All-or-nothing output folders: a run's files are written into a hidden
staging folder inside the output folder and moved into place only when all
of them were written::

    with OutputStage(outdir) as stage:
        SaveITKImage(im, stage.path('deformed.nii.gz'))
        ...
        stage.final('deformed.nii.gz')   # where it will be: outdir/deformed.nii.gz
    # committed here; an exception instead removes the staging folder

Every save into the stage is itself verified (PyCA.Common.PyCAIO: a short
write raises OSError naming the file and the cause), so on a full disk the
run stops at the first file that does not fit, the staging folder is
removed, and the output folder holds exactly what it held before (an
earlier run's outputs included). On success each file is renamed into place
(same file system: each rename is atomic and needs no space), the folder is
synced, and the staging folder removed: the output folder never holds a
partial file of this run. The staging folder is
``outdir/.pyca-staging-<host>-<pid>-*``; one left by a killed or failed
run is removed by the next stage made in that folder on the same host,
which first takes over the files it is told to ``adopt`` (a resumed atlas
run: the per-iteration atlases of the iterations it does not redo).

With several MPI ranks writing into one output folder, rank 0 makes the
stage and broadcasts its path (``OutputStage(outdir, path=...)`` on the
others); rank 0 commits after a barrier.
"""
import errno
import os
import shutil
import socket
import tempfile

__all__ = ['OutputStage']

_PREFIX = '.pyca-staging-'


def _fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_DIRECTORY', 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _tag():
    host = ''.join(c if c.isalnum() else '_' for c in socket.gethostname())[:40] or 'host'
    return '%s%s-%d-' % (_PREFIX, host, os.getpid())


_ACTIVE = set()   # the stages this process has open


def _dead_stages(outdir):
    """Staging folders in outdir left by runs of this host that are over (a
    killed process, or a failed run of this one). Those of other hosts (a
    shared disk) are never touched."""
    try:
        names = sorted(os.listdir(outdir))
    except OSError:
        return []
    mine = _tag()[:-len('%d-' % os.getpid())]     # prefix + host + '-'
    out = []
    for n in names:
        if not n.startswith(mine):
            continue
        p = os.path.join(outdir, n)
        try:
            pid = int(n[len(mine):].split('-')[0])
        except ValueError:
            continue
        if pid == os.getpid():
            if p not in _ACTIVE:
                out.append(p)
            continue
        try:
            os.kill(pid, 0)
            continue                     # alive: another run's stage
        except ProcessLookupError:
            out.append(p)
        except OSError:
            continue
    return out


class OutputStage(object):
    """A staging folder for the outputs of one run in ``outdir`` (module
    notes). ``path(name)`` is where to write ``name`` (sub-folders allowed,
    made as needed), ``final(name)`` where it ends up; ``commit()`` moves
    everything into place, ``abort()`` removes it all. As a context manager
    it commits on success and aborts on an exception. ``owner=False`` (the
    other MPI ranks): ``path`` names the stage rank 0 made, and neither
    commit nor abort touches it.

    Args:
        outdir (str or os.PathLike): the output folder (made if missing); the stage is a hidden
            sub-folder of it.
        path (str, optional): an existing stage to use (the other MPI ranks: rank 0's
            ``stage.dir``); default None makes a new one.
        owner (bool): whether this object commits/aborts the stage; default True (False on the other
            MPI ranks).
        adopt (iterable of str): names of files to move from the stages of runs that are over (a
            resumed atlas's per-iteration atlases) into the new stage; default ().
    """

    def __init__(self, outdir, path=None, owner=True, adopt=()):
        self.outdir = os.fspath(outdir)
        self.owner = owner
        self.done = False
        if path is None:
            os.makedirs(self.outdir, exist_ok=True)
            self.dir = tempfile.mkdtemp(prefix=_tag(), dir=self.outdir)
            _ACTIVE.add(self.dir)
            # the stages of runs that are over: the files named in ``adopt``
            # (a resumed atlas: the per-iteration atlases it will not redo)
            # move into this one, the rest goes
            for old in _dead_stages(self.outdir):
                for name in adopt:
                    src = os.path.join(old, name)
                    if os.path.isfile(src) and not os.path.exists(os.path.join(self.dir, name)):
                        os.replace(src, self.path(name))
                shutil.rmtree(old, ignore_errors=True)
        else:
            self.dir = os.fspath(path)

    def path(self, name):
        """Where to write ``name`` in the stage (its sub-folders are made as needed).

        Args:
            name (str): the output's path relative to ``outdir``.

        Returns:
            str: the path in the stage.
        """
        p = os.path.join(self.dir, name)
        d = os.path.dirname(p)
        if d != self.dir:
            os.makedirs(d, exist_ok=True)
        return p

    def final(self, name):
        """Where ``name`` ends up after :meth:`commit`.

        Args:
            name (str): the output's path relative to ``outdir``.

        Returns:
            str: ``os.path.join(outdir, name)``.
        """
        return os.path.join(self.outdir, name)

    def files(self):
        """The staged files, relative to the stage (sub-folders first-level order)."""
        out = []
        for root, _dirs, names in os.walk(self.dir):
            for n in names:
                out.append(os.path.relpath(os.path.join(root, n), self.dir))
        return sorted(out)

    def commit(self):
        """Moves every staged file over its final name, then removes the stage.

        Raises:
            OSError: an unfinished (``.tmp-``) file in the stage, or a final path whose folder is a
                file (ENOTDIR) or that is a folder (IsADirectoryError).
        """
        if self.done or not self.owner:
            return
        stray = [n for n in self.files() if '.tmp-' in os.path.basename(n)]
        if stray:  # a save that did not finish: never move a part into place
            raise OSError(errno.EIO, "output folder '%s': unfinished files in the stage (%s)"
                          % (self.outdir, ', '.join(stray[:3])))
        folders = set()
        for rel in self.files():
            dst = self.final(rel)
            d = os.path.dirname(dst)
            if d not in folders:
                if os.path.exists(d) and not os.path.isdir(d):
                    raise OSError(errno.ENOTDIR, "cannot move outputs into '%s': not a folder" % d)
                os.makedirs(d, exist_ok=True)
                folders.add(d)
            if os.path.isdir(dst):
                raise IsADirectoryError(errno.EISDIR, "cannot replace the folder '%s' by an output file" % dst)
            os.replace(os.path.join(self.dir, rel), dst)
        for d in folders:
            _fsync_dir(d)
        shutil.rmtree(self.dir, ignore_errors=True)
        _ACTIVE.discard(self.dir)
        self.done = True

    def abort(self):
        """Removes the stage and all in it."""
        if self.owner and not self.done:
            shutil.rmtree(self.dir, ignore_errors=True)
        _ACTIVE.discard(self.dir)
        self.done = True

    def release(self):
        """Leaves the stage on disk for a later run to adopt from (see
        ``adopt``) or remove: a resumable run that failed."""
        _ACTIVE.discard(self.dir)
        self.done = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.commit()
        else:
            self.abort()
        return False
