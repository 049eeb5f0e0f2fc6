"""The user's memory-manager tutorial (shared/seeds/memory-manager-tutorial.txt),
both as the example script Examples/memory_manager_tutorial.py and verbatim
from the tutorial text."""
import ast
import os
import re
import subprocess
import sys

import pytest

from conftest import has_gpu, run_python, source_dir

SEED_NAME = "memory-manager-tutorial.txt"
EXPECTED_POOL_LINES = ["Maximum temporary Pools 4", "Maximum temporary Pools 10"]


def pool_lines(stderr):
    return [l.strip() for l in stderr.splitlines() if l.startswith("Maximum temporary Pools")]


def seed_path():
    cands = [os.path.join(source_dir(), "..", "shared", "seeds", SEED_NAME),
             os.path.join(source_dir(), "shared", "seeds", SEED_NAME),
             os.path.join("/work/shared/seeds", SEED_NAME)]
    for c in cands:
        if os.path.isfile(c):
            return os.path.abspath(c)
    return None


# ---------------------------------------------------------------------------
# (1) the example script

def example_path():
    return os.path.join(source_dir(), "Examples", "memory_manager_tutorial.py")


def run_example(mem):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, example_path(), mem], capture_output=True, text=True,
                          timeout=300, env=env)


def check_example_output(r):
    assert r.returncode == 0, r.stderr
    out = r.stdout
    i10 = out.find("Total number of mem pools: 10")
    i4 = out.find("Total number of mem pools: 4")
    assert i10 >= 0 and i4 > i10, out
    assert "Grid too large" in out  # the caught, printed RuntimeError
    assert "Traceback" not in r.stderr
    assert pool_lines(r.stderr) == EXPECTED_POOL_LINES, r.stderr


def test_example_script_host():
    if not os.path.isfile(example_path()):
        pytest.skip("Examples/memory_manager_tutorial.py not written yet")
    check_example_output(run_example("MEM_HOST"))


@pytest.mark.skipif(not has_gpu, reason="needs a CUDA device")
def test_example_script_device():
    if not os.path.isfile(example_path()):
        pytest.skip("Examples/memory_manager_tutorial.py not written yet")
    check_example_output(run_example("MEM_DEVICE"))


# ---------------------------------------------------------------------------
# (2) the tutorial's code lines, verbatim

def tutorial_code_lines(path):
    """The lines of the tutorial that are Python statements (after turning
    the Python 2 ``print 'x', y`` into ``print('x', y)``), in order."""
    lines = []
    with open(path) as fh:
        for raw in fh:
            line = raw.rstrip("\n")
            line = re.sub(r"^(\s*)print\s+(?!\()(.*)$", r"\1print(\2)", line)
            try:
                tree = ast.parse(line)
            except SyntaxError:
                continue
            if tree.body:
                lines.append(line)
    return lines


def build_script(lines, mem, n_expected_throws=1):
    out = []
    n_throw = 0
    for line in lines:
        if mem != "MEM_DEVICE":
            line = line.replace("MEM_DEVICE", mem)
        if "#Will throw an Exception" in line:
            n_throw += 1
            out += ["try:",
                    "    " + line,
                    "except RuntimeError as _exc:",
                    "    assert 'Grid too large' in str(_exc), str(_exc)",
                    "    print('EXPECTED RuntimeError:', str(_exc).splitlines()[-1])",
                    "else:",
                    "    raise SystemExit('the marked line did not raise')"]
        else:
            out.append(line)
    assert n_throw == n_expected_throws
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def code_lines():
    p = seed_path()
    if p is None:
        pytest.skip("tutorial text %s not found" % SEED_NAME)
    lines = tutorial_code_lines(p)
    return lines


def test_extraction(code_lines):
    assert code_lines[0] == "import PyCA.Core as ca"
    assert code_lines[-1].startswith("ca.ThreadMemoryManager.destroy()")
    assert sum("print(" in l for l in code_lines) == 2
    assert len(code_lines) == 30


def run_tutorial(code_lines, mem):
    r = run_python(build_script(code_lines, mem))
    assert r.returncode == 0, "stdout:\n%s\nstderr:\n%s" % (r.stdout, r.stderr)
    counts = re.findall(r"Total number of mem pools: (\d+)", r.stdout)
    assert counts == ["10", "4"], r.stdout
    assert "EXPECTED RuntimeError:" in r.stdout
    m = re.search(r"EXPECTED RuntimeError: (.*)", r.stdout)
    assert m.group(1).startswith("PyCAException : From ") and m.group(1).endswith(": Grid too large")
    assert "Traceback" not in r.stderr
    assert pool_lines(r.stderr) == EXPECTED_POOL_LINES, r.stderr
    return r


def test_tutorial_verbatim_host(code_lines):
    run_tutorial(code_lines, "MEM_HOST")


@pytest.mark.skipif(not has_gpu, reason="needs a CUDA device")
def test_tutorial_verbatim_device(code_lines):
    run_tutorial(code_lines, "MEM_DEVICE")


def test_tutorial_exception_text(code_lines):
    """The full message matches the tutorial's (up to the file path and line)."""
    code = build_script(code_lines[:code_lines.index(
        next(l for l in code_lines if "#Will throw" in l))], "MEM_HOST", 0)
    code += ("try:\n    ca.ManagedImage3D(grid4, mType)\nexcept RuntimeError as e:\n"
             "    import sys; sys.stdout.write(str(e))\n")
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    msg = r.stdout.split("Total number of mem pools: 10\n", 1)[1]
    assert re.fullmatch(r"PyCA::ManagedImage3D::ManagedImage3D\(PyCA::GridInfo const &,"
                        r"PyCA::MemoryType\):\nPyCAException : From \S+MemoryManager\.cxx:\d+ : "
                        r"Grid too large", msg), msg
