"""`pip install .` on every machine kind: the USE_CUDA choice (AUTO / ON / OFF)
of the top-level CMakeLists.txt, the build information it records, and the
wheel's install rules (Documentation/UserGuide.md, "Install").

The CMake cases configure the real project (library only: WRAP_PYTHON,
BUILD_TESTING and the benchmarks off, a few seconds each) into a temporary
folder. The "no cuFFT" machine is made with a fresh virtual environment
without NVIDIA's wheel as the Python CMake asks for site-packages (the
toolkit here has no cuFFT; where it has, those cases skip). The reference
is the behaviour the install section documents, not a previous run.
"""
import os
import re
import shutil
import subprocess
import sys
import venv

import pytest

import PyCA.Core as ca
from conftest import source_dir

CMAKE = shutil.which("cmake")
pytestmark = pytest.mark.skipif(CMAKE is None, reason="needs cmake")


def _nvcc():
    for d in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/local/cuda/bin"]:
        p = os.path.join(d, "nvcc")
        if os.access(p, os.X_OK):
            return p
    return None


def _path_without_nvcc():
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not os.access(os.path.join(d, "nvcc"), os.X_OK)]
    return os.pathsep.join(keep)


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """A Python whose site-packages have no nvidia-cufft wheel."""
    d = tmp_path_factory.mktemp("barevenv")
    venv.EnvBuilder(with_pip=False).create(str(d))
    py = d / "bin" / "python"
    assert py.exists()
    return str(py)


def configure(build, *defines, env=None, python=None):
    """Configures the library only; returns (exit status, output, cache text)."""
    rc, out, text = configure_raw(build, *defines, env=env, python=python)
    if rc != 0 and "FFTW 3 (single precision" in out:
        pytest.skip("FFTW is not installed (libfftw3-dev): nothing to configure")
    return rc, out, text


def configure_raw(build, *defines, env=None, python=None):
    cmd = [CMAKE, "-S", source_dir(), "-B", str(build), "-DWRAP_PYTHON=OFF", "-DBUILD_TESTING=OFF",
           "-DPYCA_BUILD_BENCHMARKS=OFF", "-DUSE_ITK=OFF"]
    if python:
        cmd.append("-DPython3_EXECUTABLE=" + python)
    cmd += list(defines)
    e = dict(os.environ)
    # LD_PRELOAD: the sanitizer suite preloads ASan/UBSan into the Python it
    # tests; CMake's compiler checks (nvcc's among them) must not inherit it.
    for k in ("CUDACXX", "CMAKE_ARGS", "LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS"):
        e.pop(k, None)
    e.update(env or {})
    r = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=600)
    out = r.stdout + r.stderr
    cache = os.path.join(str(build), "CMakeCache.txt")
    text = open(cache).read() if os.path.exists(cache) else ""
    return r.returncode, out, text


def summary(out):
    m = re.search(r"back ends:\s*(.*)", out)
    assert m, out[-3000:]
    return m.group(1).strip()


def test_off_is_cpu_only_without_warning(tmp_path):
    rc, out, cache = configure(tmp_path / "b", "-DUSE_CUDA=OFF")
    assert rc == 0, out[-3000:]
    assert summary(out) == "CPU (OpenMP) only: CUDA OFF (USE_CUDA=OFF)"
    assert "CMake Warning at" not in out
    assert re.search(r"^USE_CUDA:\w+=OFF$", cache, re.M)


def test_invalid_value_is_an_error(tmp_path):
    rc, out, _ = configure(tmp_path / "b", "-DUSE_CUDA=maybe")
    assert rc != 0
    assert "USE_CUDA must be AUTO, ON or OFF (got 'maybe')" in out


def test_auto_without_nvcc_is_cpu_only(tmp_path):
    """The CPU-only machine: no nvcc on PATH, USE_CUDA left at its default."""
    rc, out, cache = configure(tmp_path / "b", env={"PATH": _path_without_nvcc()})
    if "CUDA" in summary(out) and "+ CUDA" in summary(out):
        pytest.skip("CMake finds nvcc outside PATH here")
    assert rc == 0, out[-3000:]
    assert summary(out) == "CPU (OpenMP) only: CUDA OFF (USE_CUDA=AUTO: no CUDA compiler found)"
    assert "CMake Warning at" not in out
    assert re.search(r"^USE_CUDA:STRING=AUTO$", cache, re.M)


def test_explicit_on_without_nvcc_is_an_error(tmp_path):
    rc, out, _ = configure(tmp_path / "b", "-DUSE_CUDA=ON", env={"PATH": _path_without_nvcc()})
    if rc == 0:
        pytest.skip("CMake finds nvcc outside PATH here")
    assert "USE_CUDA=ON but no CUDA compiler was found" in out


@pytest.mark.skipif(_nvcc() is None, reason="needs nvcc (the nvcc-without-cuFFT machine)")
def test_auto_with_nvcc_without_cufft_falls_back_with_a_warning(tmp_path, bare_python):
    rc, out, cache = configure(tmp_path / "b", python=bare_python)
    if "+ CUDA" in summary(out):
        pytest.skip("the CUDA toolkit here has cuFFT")
    assert rc == 0, out[-3000:]
    s = summary(out)
    assert re.fullmatch(r"CPU \(OpenMP\) only: CUDA OFF \(USE_CUDA=AUTO: nvcc [\d.]+ found, cuFFT not\)", s), s
    warning = out[out.index("CMake Warning at"):]
    flat = " ".join(warning.split())
    assert "PyCA is built CPU-only" in flat
    assert "cuFFT was not found" in flat
    assert "nvidia-cufft" in flat  # says how to get it
    assert "USE_CUDA=ON" in flat    # and how to make it an error
    # the request stays AUTO in the cache (a later configure re-detects)
    assert re.search(r"^USE_CUDA:STRING=AUTO$", cache, re.M)


@pytest.mark.skipif(_nvcc() is None, reason="needs nvcc (the nvcc-without-cuFFT machine)")
def test_explicit_on_with_nvcc_without_cufft_is_an_error(tmp_path, bare_python):
    rc, out, _ = configure(tmp_path / "b", "-DUSE_CUDA=ON", python=bare_python)
    if rc == 0:
        pytest.skip("the CUDA toolkit here has cuFFT")
    flat = " ".join(out.split())
    assert "CMake Error" in flat and "cuFFT was not found" in flat
    assert "configure with USE_CUDA=OFF" in flat
    assert "CMake Warning at" not in out  # an error, not the fallback


def test_build_info_records_the_cuda_choice():
    """The build information of this build agrees with CudaCompiled() and
    with the configure step's USE_CUDA request (CMakeCache.txt)."""
    from PyCA.Common import _build_info
    info = getattr(_build_info, "CUDA", None)
    if info is None:
        pytest.skip("this build's _build_info predates the CUDA field (rebuild)")
    assert info.startswith("ON (") == bool(ca.CudaCompiled()), info
    assert re.fullmatch(r"(ON|OFF) \(.+\)", info), info
    build = os.environ.get("PYCA_BUILD_DIR")
    cache = os.path.join(build, "CMakeCache.txt") if build else ""
    if cache and os.path.exists(cache):
        m = re.search(r"^USE_CUDA:\w+=(\S+)$", open(cache).read(), re.M)
        if m and m.group(1).upper() in ("OFF", "0", "FALSE", "NO"):
            assert info == "OFF (USE_CUDA=OFF)"


def test_wheel_install_rules_cover_stubs_and_markers():
    """The python component installs *.py, *.pyi and py.typed of the package
    (source tree and generated), and pyproject declares the console scripts
    of the entry points that exist."""
    text = open(os.path.join(source_dir(), "Code", "SWIG", "CMakeLists.txt")).read()
    rules = re.findall(r"install\(DIRECTORY [^)]*\)", text, re.S)
    src_rule = [r for r in rules if "Code/Python/PyCA/" in r]
    assert src_rule and all(p in src_rule[0] for p in ('"*.py"', '"*.pyi"', '"py.typed"'))
    assert any("${PYCA_PY_DIR}/" in r and '"*.pyi"' in r for r in rules)
    pyproject = open(os.path.join(source_dir(), "pyproject.toml")).read()
    for script, module in (("pyca-register", "register_cli"), ("pyca-apply", "apply"), ("pyca-atlas", "atlas")):
        assert re.search(r'^%s = "PyCA\.Apps\.%s:main_entry"$' % (script, module), pyproject, re.M)
        assert os.path.exists(os.path.join(source_dir(), "Code", "Python", "PyCA", "Apps", module + ".py"))


def _hide_fftw():
    # hide fftw3.h: the header folders (the libraries stay visible: OpenMP)
    hide = ["/usr/include", "/usr/local/include", "/usr/include/x86_64-linux-gnu",
            "/usr/include/aarch64-linux-gnu"]
    return "-DCMAKE_IGNORE_PATH=" + ";".join(hide)


def test_missing_fftw_falls_back_to_pocketfft(tmp_path):
    """FFTW (libfftw3-dev) cannot come from pip: without it (PYCA_FFT=auto,
    the default) the configure step succeeds on the bundled pocketfft and
    says so, with what is lost and how to get FFTW."""
    rc, out, _ = configure_raw(tmp_path / "b", "-DUSE_CUDA=OFF", _hide_fftw())
    flat = " ".join(out.split())
    if "CPU FFT: FFTW" in flat:
        pytest.skip("FFTW is installed outside the system folders here")
    assert rc == 0, out[-3000:]
    assert "was not found: the CPU fluid kernel uses pocketfft (bundled)" in flat
    assert "apt-get install libfftw3-dev" in flat and "slower than FFTW" in flat
    assert "CPU FFT: pocketfft" in flat and "CMake Error" not in flat


def test_pycafft_fftw_requires_fftw(tmp_path):
    """PYCA_FFT=fftw keeps the old behaviour: no FFTW, one clear error."""
    rc, out, _ = configure_raw(tmp_path / "b", "-DUSE_CUDA=OFF", "-DPYCA_FFT=fftw", _hide_fftw())
    if rc == 0:
        pytest.skip("FFTW is installed outside the system folders here")
    flat = " ".join(out.split())
    assert "FFTW 3 (single precision, with fftw3f_omp or fftw3f_threads) was not found" in flat
    assert "apt-get install libfftw3-dev" in flat and "pip cannot install it" in flat
    assert flat.count("CMake Error") == 1


def test_pycafft_choices(tmp_path):
    rc, out, _ = configure_raw(tmp_path / "p", "-DUSE_CUDA=OFF", "-DPYCA_FFT=pocketfft")
    assert rc == 0, out[-3000:]
    assert "PYCA_FFT=pocketfft: the CPU fluid kernel uses pocketfft" in out
    rc, out, _ = configure_raw(tmp_path / "x", "-DUSE_CUDA=OFF", "-DPYCA_FFT=mkl")
    assert rc != 0 and "PYCA_FFT must be auto, fftw or pocketfft" in out
