"""The atlas demo (python -m PyCA.Apps.atlas_demo --quick, in a subprocess):
subjects made from the MNI template by known random deformations, the atlas
command on them (2 MPI ranks where mpiexec and mpi4py exist, else one
process), and the demo's numbers in atlas_summary.json: the atlas must be
closer to the template than the plain mean of the subjects.

Skips without nilearn (the template comes with it) or without
PyCA.Apps.atlas.
"""
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("nilearn", reason="the MNI template comes with nilearn (pip install nilearn)")
if importlib.util.find_spec("PyCA.Apps.atlas") is None:
    pytest.skip("PyCA.Apps.atlas is not in this installation", allow_module_level=True)

from PyCA.Apps import atlas_demo  # noqa: E402


def _env():
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("atlas_demo")
    proc = subprocess.run([sys.executable, "-m", "PyCA.Apps.atlas_demo", "--quick", "--quiet",
                           "--out", str(out)], env=_env(), capture_output=True, text=True, timeout=300)
    return out, proc


def test_quick_demo_writes_summary(quick_run):
    out, proc = quick_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    q = atlas_demo.QUICK
    # the demo's inputs (the atlas command writes its per-subject outputs beside them)
    subjects = sorted(f for f in os.listdir(out / "subjects") if re.fullmatch(r"subject_\d+\.nii\.gz", f))
    assert subjects == ["subject_%02d.nii.gz" % i for i in range(1, q["subjects"] + 1)]
    assert (out / "atlas.nii.gz").is_file()
    assert "picture: %s" % (out / "atlas_summary.png") in proc.stdout
    summary = json.loads((out / "atlas_summary.json").read_text())
    demo = summary["demo"]
    assert demo["quick"] is True and demo["method"] == "greedy"
    assert demo["ranks"] == (atlas_demo.DEFAULT_RANKS if atlas_demo.find_mpiexec() else 1)
    assert demo["phantom"]["subjects"] == q["subjects"]
    assert demo["phantom"]["spacing_mm"] == q["spacing_mm"]
    for key in ("atlas_vs_template", "mean_vs_template", "atlas_vs_mean_shape_template",
                "mean_vs_mean_shape_template", "mean_shape_template_vs_template"):
        d = demo[key]
        assert set(d) == {"mean_abs", "rms"}
        assert 0 < d["mean_abs"] <= d["rms"] < 1


def test_quick_atlas_beats_plain_mean(quick_run):
    out, proc = quick_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    demo = json.loads((out / "atlas_summary.json").read_text())["demo"]
    a, m = demo["atlas_vs_template"], demo["mean_vs_template"]
    assert demo["atlas_beats_mean"] is True
    assert a["mean_abs"] < m["mean_abs"] and a["rms"] < m["rms"]


def test_bad_arguments_one_line_error(tmp_path):
    for args, word in ((["--method", "elastic"], "--method"), (["--subjects", "1"], "--subjects"),
                       (["--ranks", "0"], "--ranks"), (["--bogus"], "unrecognized")):
        proc = subprocess.run([sys.executable, "-m", "PyCA.Apps.atlas_demo", "--out", str(tmp_path)] + args,
                              env=_env(), capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1, args
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("pyca-atlas-demo: error:") and word in lines[0], \
            (args, proc.stderr)


def test_ranks_share_the_cores(monkeypatch):
    """OMP_NUM_THREADS of the ranks: the CPUs divided among them, unless the
    user set it; a value that import PyCA chose for this process (a cgroup
    quota) is not the user's and is divided too."""
    from PyCA import _threads
    monkeypatch.setattr(atlas_demo, "find_mpiexec", lambda: "mpiexec")
    monkeypatch.setattr(atlas_demo, "_mpi_launch", lambda mpiexec, ranks, env: [mpiexec, "-n", str(ranks)])
    monkeypatch.setattr(_threads, "_affinity_cpus", lambda: 8)
    monkeypatch.setattr(_threads, "cgroup_cpu_quota", lambda root="": 4)
    monkeypatch.setenv("OMP_NUM_THREADS", "4")                  # as import PyCA sets it under the quota
    monkeypatch.setattr(atlas_demo, "threading_info", lambda: {"threads": 4})
    _, env, ranks = atlas_demo.atlas_command(["a.nii"], "out", "greedy", 2)
    assert ranks == 2 and env["OMP_NUM_THREADS"] == "2"
    monkeypatch.setattr(atlas_demo, "threading_info", lambda: {"threads": None})   # the user's value
    _, env, _ = atlas_demo.atlas_command(["a.nii"], "out", "greedy", 2)
    assert env["OMP_NUM_THREADS"] == "4"
    monkeypatch.delenv("OMP_NUM_THREADS")
    _, env, _ = atlas_demo.atlas_command(["a.nii"], "out", "greedy", 4)
    assert env["OMP_NUM_THREADS"] == "1"
