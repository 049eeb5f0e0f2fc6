"""The GPU bundle's scripts (./run gpu-bundle, Testing/gpu_bundle*.sh,
Benchmarks/gpu_session.sh) where no bundle is built: the test list names
existing files, the session fails clearly without a bundle and writes only
its summary, env.sh puts the bundle and a cuFFT folder on the library path.
The bundle itself is proven by ./run gpu-bundle-check (CI: .ci/run)."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import source_dir

ROOT = source_dir()
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _gpu_test_files():
    text = open(os.path.join(ROOT, "Testing", "gpu_bundle_tests.sh")).read()
    m = re.search(r"GPU_TEST_FILES=\((.*?)\)", text, re.S)
    assert m, "GPU_TEST_FILES=(...) not found in Testing/gpu_bundle_tests.sh"
    return m.group(1).split()


def test_gpu_test_list_names_existing_files():
    files = _gpu_test_files()
    assert "test_gpu_parity.py" in files and "test_gpu_deform_parity.py" in files
    missing = [f for f in files if not os.path.isfile(os.path.join(ROOT, "Testing", "Python", f))]
    assert missing == []
    assert len(set(files)) == len(files)


def test_session_without_bundle_fails_clearly(tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out), PYCA_GPU_BUNDLE=str(tmp_path / "absent"))
    r = subprocess.run(["bash", os.path.join(ROOT, "Benchmarks", "gpu_session.sh")], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "no PyCA GPU bundle" in r.stdout and ".gpu-bundle" in r.stdout
    assert sorted(os.listdir(out)) == ["summary.txt"]


def test_env_sh_paths(tmp_path):
    bundle = tmp_path / "bundle"
    (bundle / "lib").mkdir(parents=True)
    (bundle / "python").mkdir()
    shutil.copy(os.path.join(ROOT, "Testing", "gpu_bundle_env.sh"), bundle / "env.sh")
    # a user site-packages holding a (fake) cuFFT wheel
    user = tmp_path / "userbase"
    site = subprocess.run([sys.executable, "-c", "import site; print(site.getusersitepackages())"],
                          env=dict(os.environ, PYTHONUSERBASE=str(user)), capture_output=True,
                          text=True, check=True).stdout.strip()
    libdir = os.path.join(site, "nvidia", "cu13", "lib")
    os.makedirs(libdir)
    open(os.path.join(libdir, "libcufft.so.12"), "w").close()
    env = dict(os.environ, PYTHONUSERBASE=str(user), PY=sys.executable, LD_LIBRARY_PATH="/pre/lib",
               PYTHONPATH="/pre/py")
    r = subprocess.run(["bash", "-c", '. "$1/env.sh" && echo "$LD_LIBRARY_PATH" && echo "$PYTHONPATH" '
                        '&& echo "$PYCA_GPU_BUNDLE_DIR"', "x", str(bundle)],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    ld, py, bdir = r.stdout.splitlines()
    parts = ld.split(":")
    assert parts[0] == str(bundle / "lib")
    assert parts[-1] == "/pre/lib"
    assert len(parts) == 3 and any(f.startswith("libcufft.so.1") for f in os.listdir(parts[1]))
    assert py.split(":") == [str(bundle / "python"), "/pre/py"]
    assert bdir == str(bundle)


def test_bundle_folder_is_ignored():
    if shutil.which("git") is None or not os.path.isdir(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout")
    r = subprocess.run(["git", "check-ignore", "-q", ".gpu-bundle/MANIFEST.txt"], cwd=ROOT)
    assert r.returncode == 0
