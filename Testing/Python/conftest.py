"""Shared helpers for the PyCA Python tests.

ctest runs every test_*.py with PYTHONPATH=<build>/python, PYCA_GOLDEN_DIR
(the legacy golden outputs; may be missing), PYCA_SOURCE_DIR and
PYCA_BUILD_DIR. NumPy is the independent reference throughout.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import PyCA.Core as ca

#: True when a CUDA device can be used (CUDA build and a GPU present).
has_gpu = ca.GetNumberOfCUDADevices() > 0

#: Skip marker for tests that need a GPU.
gpu_only = pytest.mark.skipif(not has_gpu, reason="needs a CUDA device (GetNumberOfCUDADevices() == 0)")

#: Memory types that can be allocated in this build/machine.
usable_mem_types = [ca.MEM_HOST] + ([ca.MEM_HOST_PINNED, ca.MEM_DEVICE] if has_gpu else [])


def cuda_compiled():
    f = getattr(ca, "CudaCompiled", None)
    return bool(f()) if f is not None else has_gpu


def source_dir():
    """The repository root (PYCA_SOURCE_DIR, else derived from this file)."""
    d = os.environ.get("PYCA_SOURCE_DIR")
    if d and os.path.isdir(d):
        return d
    return os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def golden_dir_path():
    """The golden data folder or None."""
    cands = [os.environ.get("PYCA_GOLDEN_DIR"),
             os.path.join(source_dir(), "..", "shared", "golden"),
             os.path.join(source_dir(), "shared", "golden")]
    for d in cands:
        if d and os.path.isfile(os.path.join(d, "manifest.json")):
            return os.path.abspath(d)
    return None


@pytest.fixture(scope="session")
def golden_dir():
    d = golden_dir_path()
    if d is None:
        pytest.skip("golden data not available (PYCA_GOLDEN_DIR unset or missing)")
    return d


@pytest.fixture(autouse=True)
def _no_thread_manager():
    """Every test starts and ends without a thread memory manager."""
    if ca.ThreadMemoryManager.isInitialized():
        ca.ThreadMemoryManager.destroy()
    yield
    if ca.ThreadMemoryManager.isInitialized():
        ca.ThreadMemoryManager.destroy()


def run_python(code, *args, timeout=300, cwd=None):
    """Runs ``code`` in a fresh interpreter with the same environment;
    returns the CompletedProcess (text mode)."""
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return subprocess.run([sys.executable, "-c", code] + list(args), capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=cwd)


def run_module(module, args, timeout=300):
    """``python -m module args`` in a subprocess (matplotlib's Agg backend, one
    OpenMP thread); returns the CompletedProcess (text output captured)."""
    env = dict(os.environ, MPLBACKEND='Agg', OMP_NUM_THREADS='1')
    return subprocess.run([sys.executable, '-m', module] + list(args), capture_output=True, text=True,
                          env=env, timeout=timeout)


def grid(sx, sy, sz, sp=(1.0, 1.0, 1.0), org=(0.0, 0.0, 0.0)):
    return ca.GridInfo(ca.Vec3Di(sx, sy, sz), ca.Vec3Df(*sp), ca.Vec3Df(*org))


def image_from(arr, g=None, mem=ca.MEM_HOST):
    """An Image3D with the contents of a 3-D array (indexed [x, y, z])."""
    arr = np.asarray(arr, dtype=np.float32)
    if g is None:
        g = grid(*arr.shape)
    im = ca.Image3D(g, ca.MEM_HOST)
    im.asnp()[...] = arr
    im.toType(mem)
    return im


def field_from(arrs, g=None, mem=ca.MEM_HOST):
    """A Field3D from three 3-D arrays (x, y, z components)."""
    arrs = [np.asarray(a, dtype=np.float32) for a in arrs]
    if g is None:
        g = grid(*arrs[0].shape)
    f = ca.Field3D(g, ca.MEM_HOST)
    for v, a in zip(f.asnp(), arrs):
        v[...] = a
    f.toType(mem)
    return f


def to_np(obj):
    """A host NumPy copy: (X, Y, Z) for images, a list of three for fields."""
    if isinstance(obj, ca.Field3D):
        if obj.memType() == ca.MEM_DEVICE:
            tmp = ca.Field3D(obj.grid(), ca.MEM_HOST)
            ca.Copy(tmp, obj)
            obj = tmp
        return [np.array(v) for v in obj.asnp()]
    if obj.memType() == ca.MEM_DEVICE:
        tmp = ca.Image3D(obj.grid(), ca.MEM_HOST)
        ca.Copy(tmp, obj)
        obj = tmp
    return np.array(obj.asnp())
