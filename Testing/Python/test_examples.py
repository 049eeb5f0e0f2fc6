"""Examples/*.py: each runs as a script (small arguments) and prints its
key result line. The memory-manager tutorial has its own tests
(test_tutorial.py)."""
import importlib.util
import os
import re
import subprocess
import sys

import pytest

from conftest import has_gpu, source_dir


def example(name):
    p = os.path.join(source_dir(), "Examples", name)
    if not os.path.isfile(p):
        pytest.fail("Examples/%s is missing" % name)
    return p


def run(name, *args, cwd=None, timeout=300):
    env = dict(os.environ, PYTHONUNBUFFERED="1", MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, example(name)] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    assert r.returncode == 0, "exit %d\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
        r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    return r.stdout


def decreased(out):
    """(first, last) of the 'energy decreased: a -> b' line, checked a > b."""
    m = re.search(r"^energy decreased: ([-\d.eE+]+) -> ([-\d.eE+]+)$", out, re.M)
    assert m, out
    first, last = float(m.group(1)), float(m.group(2))
    assert last < first, out
    return first, last


# ---------------------------------------------------------------- registration loop by hand

def test_greedy_registration():
    out = run("greedy_registration.py", "--size", 48, "--iters", 15, "--scales", "2,1")
    first, last = decreased(out)
    assert last < 0.1 * first, out
    levels = re.findall(r"^scale (\d) \(factor (\d+), (\d+)x(\d+)x1\) iter +(\d+) +energy ([\d.]+)$",
                        out, re.M)
    assert [(l[0], l[1], l[2]) for l in levels] == [("0", "2", "24")] * 2 + [("1", "1", "48")] * 2, out
    for k in (0, 2):    # the energy falls within each scale
        assert float(levels[k + 1][5]) < float(levels[k][5]), out
    m = re.search(r"min Jacobian determinant ([-\d.]+)", out)
    assert m and float(m.group(1)) > 0, out


def test_greedy_registration_png(tmp_path):
    out = run("greedy_registration.py", "--size", 32, "--iters", 5, "--scales", "1",
              "--out", tmp_path / "o")
    decreased(out)
    png = tmp_path / "o" / "greedy_registration.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(not has_gpu, reason="needs a CUDA device")
def test_greedy_registration_gpu():
    out = run("greedy_registration.py", "--size", 48, "--iters", 15, "--gpu")
    assert "device memory" in out or "gpu" in out.lower(), out
    decreased(out)


@pytest.mark.skipif(has_gpu, reason="a CUDA device is present")
def test_greedy_registration_gpu_refused_without_device():
    env = dict(os.environ, MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, example("greedy_registration.py"), "--gpu"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 1 and "no CUDA device" in r.stdout, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr


# ---------------------------------------------------------------- PyCA.Apps examples

def test_elastic_registration():
    out = run("elastic_registration.py", "--size", 48, "--iters", 15)
    decreased(out)
    runs = re.findall(r"^elastic, scales (\[[\d, ]+\]): (\d+) iterations", out, re.M)
    assert [s for s, _ in runs] == ["[1]", "[4, 2, 1]"], out
    m = re.search(r"min Jacobian determinant ([-\d.]+)", out)
    assert m and float(m.group(1)) > 0, out


def test_lddmm_shooting(tmp_path):
    out = run("lddmm_shooting.py", "--size", 48, "--iters", 10, "--out", tmp_path)
    decreased(out)
    m = re.search(r"min Jacobian determinant ([-\d.]+)", out)
    assert m and float(m.group(1)) > 0, out           # a diffeomorphism
    m = re.search(r"mismatch Sum2\(fixed - image\): ([\d.]+) before, ([\d.]+) after", out)
    assert m and float(m.group(2)) < 0.5 * float(m.group(1)), out
    assert (tmp_path / "lddmm_shooting.png").is_file()


@pytest.mark.skipif(not has_gpu, reason="needs a CUDA device")
def test_lddmm_shooting_gpu():
    out = run("lddmm_shooting.py", "--size", 48, "--iters", 10, "--gpu")
    assert "LDDMM on gpu" in out, out
    decreased(out)


def test_tv_denoising():
    out = run("tv_denoising.py", "--size", 64, "--iters", 60)
    noisy = float(re.search(r"noisy image: PSNR ([\d.]+) dB", out).group(1))
    gains = re.findall(r"^PSNR increased: ([\d.]+) -> ([\d.]+) dB \((\w+)\)$", out, re.M)
    assert sorted(g[2] for g in gains) == ["primal_dual", "rof"], out
    for before, after, _ in gains:
        assert float(before) == pytest.approx(noisy, abs=0.01)
        assert float(after) > float(before) + 3.0, out    # a clear gain, not noise


# ---------------------------------------------------------------- interop

def test_numpy_interop():
    out = run("numpy_interop.py")
    assert out.rstrip().endswith("numpy interop: all checks passed"), out
    assert "asnp view: (6, 5, 4) float32 Fortran order" in out


def test_torch_zero_copy():
    out = run("torch_zero_copy.py")
    if importlib.util.find_spec("torch") is None:
        assert "PyTorch is not installed" in out, out
    else:
        assert out.rstrip().endswith("torch zero-copy: all checks passed"), out
        assert "strides (1, 32, 768)" in out, out


@pytest.mark.skipif(not has_gpu, reason="needs a CUDA device")
def test_torch_zero_copy_gpu():
    out = run("torch_zero_copy.py", "--gpu")
    assert "all checks passed" in out or "exiting" in out, out


def test_examples_readme_lists_every_example():
    d = os.path.join(source_dir(), "Examples")
    with open(os.path.join(d, "README.md")) as f:
        text = f.read()
    for name in sorted(os.listdir(d)):
        if name.endswith(".py"):
            assert "(%s)" % name in text, "Examples/README.md does not list %s" % name
