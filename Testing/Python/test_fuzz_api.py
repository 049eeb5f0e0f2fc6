"""CI target of the API fuzzer (fuzz_api.py, issue 11 item 1).

* test_fuzz_calls: 12,000 calls (seed 20261201) of every Appendix A free
  function with random argument lists, in 6 child batches of 2,000 with a
  60 s timeout each: every call returns or raises a Python exception (never a
  crash or hang: the failure names the last call printed), the pools in use
  are those the managed arguments hold, host inputs are unchanged, no guard
  region around a canary operand changes, the process's memory returns to
  its level after the warm-up (see fuzz_api.py).
* test_fuzz_files: 2,500 mutated files per format (NIfTI .nii and .nii.gz,
  MetaImage .mha, NRRD .nrrd; 10,000 files) loaded with
  PyCA.Common.LoadITKImage in child batches whose address space may grow by
  2 GB at most (RLIMIT_AS): each loads or raises
  IOError/OSError/ValueError/RuntimeError/MemoryError.
  Known third-party crash (SimpleITK 2.5.7 / ITK 5.4 MetaIO segfault on a
  MetaImage header with an absurd NDims) is excluded here and shown by the
  xfail test_mha_absurd_ndims_crash.
* Long run: ``./run fuzz`` (100,000 calls, 10,000 mutated files).
"""
import os
import subprocess
import sys

import pytest

import fuzz_api
from test_api_names import SPEC

needs_spec = pytest.mark.skipif(SPEC is None, reason="spec PYCA_API.md not found (set PYCA_SPEC)")

SEED = 20261201
FILES_PER_FORMAT = 2500  # 10,000 mutated files


@needs_spec
def test_fuzz_calls():
    fails, totals = fuzz_api.fuzz_calls(12000, SEED, batch=2000, timeout=60)
    assert not fails, "\n".join(fails)
    assert totals["returned"] + totals["raised"] == 12000
    assert totals["returned"] > 1000 and totals["raised"] > 1000, totals


@needs_spec
def test_leak_check_catches_a_leak(monkeypatch):
    """The fuzzer's memory check fails a batch that keeps 16 KiB per call
    (and the same batch passes without the leak, in test_fuzz_calls)."""
    if os.environ.get("PYCA_SANITIZED"):
        pytest.skip("the memory check is off under ASan (its quarantine holds freed memory)")
    monkeypatch.setenv("PYCA_FUZZ_SELFTEST_LEAK", "1")
    ok, msg, lines = fuzz_api.run_batch(["--child-calls", str(SEED), "0", "2000"], 120)
    assert not ok and "process memory grew by" in msg, msg


@needs_spec
def test_generator_covers_every_name():
    import PyCA.Core as ca
    ovls = fuzz_api.load_overloads()
    gen = fuzz_api.Gen(ca, ovls, False)
    names = {gen.call(SEED, i)[0].name for i in range(12000)}
    expected = {n for n in ovls if n not in fuzz_api.SKIP and n not in fuzz_api.KNOWN_CRASHES
                and hasattr(ca, n)}
    assert len(expected) >= 230
    # 12,000 draws over ~490 overloads: nearly every name is hit
    assert len(expected - names) <= 5, sorted(expected - names)


def test_fuzz_files():
    pytest.importorskip("SimpleITK")
    fails, counts, memerr, known = fuzz_api.fuzz_files(FILES_PER_FORMAT, SEED, timeout=90)
    assert not fails, "\n".join(fails)
    assert sum(counts.values()) + len(known) == 4 * FILES_PER_FORMAT, counts
    assert counts.get("loaded", 0) > FILES_PER_FORMAT // 3, counts
    for n, why in known:
        print("known crash:", n, why)
    if memerr:
        print("MemoryError under the 2 GB limit:", memerr)


def test_mha_absurd_ndims_crash(tmp_path):
    """SimpleITK 2.5.7 (ITK 5.4 MetaIO) segfaults on a MetaImage header with an
    absurd NDims; LoadITKImage refuses NDims outside 1..16 before calling it."""
    pytest.importorskip("SimpleITK")
    seed = fuzz_api.make_seeds(str(tmp_path))[".mha"][0]
    assert b"NDims = 3" in seed
    p = tmp_path / "ndims.mha"
    p.write_bytes(seed.replace(b"NDims = 3", b"NDims = 65536"))
    code = ("import sys, PyCA.Common as c\n"
            "try:\n    c.LoadITKImage(sys.argv[1])\n"
            "except (IOError, OSError, ValueError, RuntimeError, MemoryError):\n    pass\n")
    r = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, timeout=60,
                       env=dict(os.environ))
    assert r.returncode == 0, "LoadITKImage crashed (rc %d)" % r.returncode
    import PyCA.Common as common
    with pytest.raises(OSError, match="NDims"):
        common.LoadITKImage(str(p))


def test_mha_huge_offset_is_value_error(tmp_path):
    """A header Offset beyond float32 (found by ./run fuzz: a SWIG TypeError
    used to escape) is refused with an error naming the file."""
    pytest.importorskip("SimpleITK")
    import PyCA.Common as common
    seed = fuzz_api.make_seeds(str(tmp_path))[".mha"][0]
    assert b"Offset = 1 2 3" in seed
    p = tmp_path / "offset.mha"
    p.write_bytes(seed.replace(b"Offset = 1 2 3", b"Offset = 99999999999e30 2 3"))
    with pytest.raises(OSError, match="origin"):
        common.LoadITKImage(str(p))
