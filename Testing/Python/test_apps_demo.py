"""PyCA.Apps.phantom (the demo's MNI template and known random deformation)
and the demo itself (python -m PyCA.Apps.demo --quick, in a subprocess).

The template comes from nilearn's package data: without nilearn the tests
skip. NumPy is the reference for the deformation error.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import PyCA.Core as ca

pytest.importorskip("nilearn", reason="the MNI template comes with nilearn (pip install nilearn)")

from PyCA.Apps import phantom  # noqa: E402


@pytest.fixture(scope="module")
def mni4():
    """(T1, mask) at 4 mm (the grid of the quick demo)."""
    return phantom.load_mni(4.0)


@pytest.fixture(scope="module")
def warp4(mni4):
    t1, mask = mni4
    psi, h_true = phantom.random_deformation(t1.grid(), max_disp_mm=8.0, smoothness_mm=20.0,
                                             seed=0, mask=mask)
    return psi, h_true


def comps(f):
    return [np.array(c, dtype=np.float64) for c in f.asnp()]


def identity(size):
    return [np.arange(size[d], dtype=np.float64).reshape([-1 if e == d else 1 for e in range(3)])
            for d in range(3)]


def disp_mm(h):
    g = h.grid()
    sp = [g.spacing()[d] for d in range(3)]
    ident = identity([g.size()[d] for d in range(3)])
    return np.sqrt(sum(((c - i) * s) ** 2 for c, i, s in zip(comps(h), ident, sp)))


# --------------------------------------------------------------------------- template

def test_template_paths_inside_nilearn():
    import nilearn
    base = os.path.dirname(nilearn.__file__)
    for p in (phantom.mni_template_path(), phantom.mni_brain_mask_path()) + phantom.mni_tissue_paths():
        assert os.path.isfile(p) and p.startswith(base)
    assert phantom.mni_template_path().endswith("mni_icbm152_t1_tal_nlin_sym_09a_converted.nii.gz")


def test_load_mni_4mm(mni4):
    t1, mask = mni4
    g = t1.grid()
    # 197 x 233 x 189 at 1 mm -> floor((n - 1) / 4) + 1 at 4 mm, same origin
    assert tuple(g.size()) == (50, 59, 48)
    assert tuple(g.spacing()) == (4.0, 4.0, 4.0)
    a, m = t1.asnp(), mask.asnp()
    assert a.min() == 0.0 and a.max() == pytest.approx(1.0, abs=1e-6)
    assert set(np.unique(m)) == {0.0, 1.0}
    vol_l = m.sum() * 64e-3 * 1e-3
    assert 1.2 < vol_l < 2.2  # grey + white matter of the (large) MNI brain, litres
    # the brain is brighter than the background on average
    assert a[m > 0.5].mean() > 3 * a[m < 0.5].mean()


def test_load_mni_2mm_grid():
    t1, mask = phantom.load_mni(2.0)
    assert tuple(t1.grid().size()) == (99, 117, 95)
    assert tuple(mask.grid().size()) == (99, 117, 95)


# --------------------------------------------------------------------------- deformation

def test_random_deformation_inverse_pair(mni4, warp4):
    t1, mask = mni4
    psi, h_true = warp4
    inside = mask.asnp() > 0.5
    for a, b in ((psi, h_true), (h_true, psi)):
        c = ca.Field3D(t1.grid(), ca.MEM_HOST)
        ca.ComposeHH(c, a, b)
        err = np.sqrt(sum((x - i) ** 2 for x, i in zip(comps(c), identity(t1.grid().size()))))
        # observed: max 0.034 voxel in the brain, 0.058 anywhere, mean 0.006
        assert err[inside].max() < 0.05
        assert err.max() < 0.1
        assert err.mean() < 0.01


def test_random_deformation_jacobian_and_size(mni4, warp4):
    t1, mask = mni4
    psi, h_true = warp4
    inside = mask.asnp() > 0.5
    jac = ca.Image3D(t1.grid(), ca.MEM_HOST)
    for f in (psi, h_true):
        ca.JacDetHVoxel(jac, f)  # voxel units: 1 for the identity on the 4 mm grid
        j = jac.asnp()
        assert j.min() > 0.3 and j.max() < 3.0  # observed about [0.63, 1.6]
    d = disp_mm(h_true)
    assert d[inside].max() == pytest.approx(8.0, rel=0.01)
    assert 2.0 < d[inside].mean() < 5.0  # observed 3.4 mm
    # psi moves as much (it is the inverse)
    assert disp_mm(psi)[inside].max() == pytest.approx(8.0, rel=0.1)
    # identity on the border of the grid (the velocity is tapered there)
    for c, i in zip(comps(h_true), identity(t1.grid().size())):
        assert np.abs((c - i)[0]).max() < 1e-6 and np.abs((c - i)[-1]).max() < 1e-6


def test_random_deformation_deterministic(mni4, warp4):
    t1, mask = mni4
    psi, h_true = warp4
    psi2, h2 = phantom.random_deformation(t1.grid(), max_disp_mm=8.0, smoothness_mm=20.0,
                                          seed=0, mask=mask)
    for a, b in ((psi, psi2), (h_true, h2)):
        for x, y in zip(comps(a), comps(b)):
            assert np.array_equal(x, y)
    psi3, _ = phantom.random_deformation(t1.grid(), seed=1, mask=mask)
    assert max(np.abs(x - y).max() for x, y in zip(comps(psi), comps(psi3))) > 0.5


def test_random_deformation_small_grid_no_mask():
    g = ca.GridInfo(ca.Vec3Di(24, 20, 16), ca.Vec3Df(2.0, 2.5, 3.0))
    psi, h = phantom.random_deformation(g, max_disp_mm=3.0, smoothness_mm=10.0, seed=5)
    assert disp_mm(h).max() == pytest.approx(3.0, rel=0.01)
    c = ca.Field3D(g, ca.MEM_HOST)
    ca.ComposeHH(c, psi, h)
    err = np.sqrt(sum((x - i) ** 2 for x, i in zip(comps(c), identity(g.size()))))
    assert err.max() < 0.1


def test_random_deformation_moving_image(mni4, warp4):
    """moving = ApplyH(fixed, psi); ApplyH(moving, h_true) gives the fixed image back."""
    t1, mask = mni4
    psi, h_true = warp4
    mov = ca.Image3D(t1.grid(), ca.MEM_HOST)
    back = ca.Image3D(t1.grid(), ca.MEM_HOST)
    ca.ApplyH(mov, t1, psi)
    ca.ApplyH(back, mov, h_true)
    inside = mask.asnp() > 0.5
    f, m, b = (np.array(x.asnp(), np.float64)[inside] for x in (t1, mov, back))
    before, after = np.mean((m - f) ** 2), np.mean((b - f) ** 2)
    assert after < 0.25 * before  # only the two interpolations remain


# --------------------------------------------------------------------------- error

def test_deformation_error_vs_numpy():
    rng = np.random.default_rng(3)
    sp = (1.5, 2.0, 2.5)
    g = ca.GridInfo(ca.Vec3Di(9, 8, 7), ca.Vec3Df(*sp))
    a, b = ca.Field3D(g, ca.MEM_HOST), ca.Field3D(g, ca.MEM_HOST)
    A = [rng.standard_normal((9, 8, 7)) for _ in range(3)]
    B = [rng.standard_normal((9, 8, 7)) for _ in range(3)]
    for v, x in zip(a.asnp(), A):
        v[...] = x
    for v, x in zip(b.asnp(), B):
        v[...] = x
    A = comps(a)
    B = comps(b)
    maskarr = (rng.uniform(size=(9, 8, 7)) > 0.4).astype(np.float32)
    mask = ca.Image3D(g, ca.MEM_HOST)
    mask.asnp()[...] = maskarr
    err = np.sqrt(sum(((x - y) * s) ** 2 for x, y, s in zip(A, B, sp)))
    sel = err[maskarr > 0.5]
    got = phantom.deformation_error(a, b, mask, sp)
    assert got["mean_mm"] == pytest.approx(sel.mean(), rel=1e-9)
    assert got["p95_mm"] == pytest.approx(np.percentile(sel, 95), rel=1e-9)
    assert got["max_mm"] == pytest.approx(sel.max(), rel=1e-9)
    assert got["n_voxels"] == sel.size
    # spacing from the grid; no mask = every voxel
    assert phantom.deformation_error(a, b, mask)["mean_mm"] == pytest.approx(sel.mean(), rel=1e-9)
    assert phantom.deformation_error(a, b)["max_mm"] == pytest.approx(err.max(), rel=1e-9)
    mask.asnp()[...] = 0
    with pytest.raises(ValueError, match="empty"):
        phantom.deformation_error(a, b, mask)


# --------------------------------------------------------------------------- the demo

def _env():
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "2")
    return env


def test_demo_quick(tmp_path):
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "PyCA.Apps.demo", "--quick", "--quiet", "--out", str(out)],
                       capture_output=True, text=True, env=_env(), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    for name in ("deformed.nii.gz", "hfield.nii.gz", "summary.png", "summary.json"):
        assert (out / name).is_file(), name
    assert str(out / "summary.png") in r.stdout
    err, ph = s["deformation_error_mm"], s["phantom"]
    assert ph["seed"] == 0 and ph["max_disp_mm"] == 8.0 and ph["spacing_mm"] == 4.0
    assert s["folded_voxels"] == 0
    # observed (LDDMM quick schedule, 4 mm): mismatch ratio 0.095, error mean 1.6 mm /
    # p95 3.1 mm against the phantom's 3.4 mm mean / 8 mm max displacement
    assert s["mismatch_ratio"] < 0.5
    assert err["mean_mm"] < 0.75 * ph["disp_brain_mean_mm"]
    assert err["p95_mm"] < 0.75 * ph["disp_brain_max_mm"]


def test_demo_user_files(tmp_path, mni4, warp4):
    """--fixed/--moving: the files go through io.load_pair; no deformation error."""
    from PyCA.Common import SaveITKImage, GetDirection, SetDirection
    t1, mask = mni4
    psi, _ = warp4
    mov = ca.Image3D(t1.grid(), ca.MEM_HOST)
    ca.ApplyH(mov, t1, psi)
    SetDirection(mov, GetDirection(t1))  # same space as the template (no world resampling)
    fa, fb = str(tmp_path / "fixed.nii.gz"), str(tmp_path / "moving.nii.gz")
    SaveITKImage(t1, fa)
    SaveITKImage(mov, fb)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "PyCA.Apps.demo", "--fixed", fa, "--moving", fb, "--method",
                        "greedy", "--quick", "--quiet", "--out", str(out)],
                       capture_output=True, text=True, env=_env(), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert "deformation_error_mm" not in s and "phantom" not in s
    assert s["mismatch_ratio"] < 0.5 and s["folded_voxels"] == 0
    assert "deformation error" not in r.stdout


def test_demo_errors_are_one_line(tmp_path):
    for args, text in ((["--fixed", str(tmp_path / "a.nii.gz")], "--fixed and --moving go together"),
                       (["--method", "nope"], "--method must be one of"),
                       (["--bogus"], "unrecognized arguments"),
                       (["--fixed", str(tmp_path / "a.nii.gz"), "--moving", str(tmp_path / "b.nii.gz")],
                        "not found")):
        r = subprocess.run([sys.executable, "-m", "PyCA.Apps.demo", "--out", str(tmp_path / "o")] + args,
                           capture_output=True, text=True, env=_env(), timeout=120)
        assert r.returncode == 1
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("pyca-demo: error: ") and text in lines[0], r.stderr


@pytest.mark.skipif(ca.GetNumberOfCUDADevices() > 0, reason="a GPU is present")
def test_demo_gpu_without_gpu_is_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "PyCA.Apps.demo", "--gpu", "--quick", "--out", str(tmp_path)],
                       capture_output=True, text=True, env=_env(), timeout=120)
    assert r.returncode == 1
    assert r.stderr.strip().startswith("pyca-demo: error: --gpu: no CUDA device")


# --------------------------------------------------------------------------- the rescanned pair

def test_rescan_bias_gamma_noise(mni4):
    """phantom.rescan: (I ** gamma) * bias + noise, seeded; the bias stays
    within +-bias and is smooth; NumPy recomputes it from the parts."""
    t1, mask = mni4
    a, info = phantom.rescan(t1, seed=5)
    b, _ = phantom.rescan(t1, seed=5)
    A, B = np.array(a.asnp()), np.array(b.asnp())
    assert np.array_equal(A, B)                              # seeded
    lo, hi = info["bias_range"]
    assert 0.79 <= lo < 1.0 < hi <= 1.21
    T = np.clip(np.array(t1.asnp(), np.float64), 0, 1)
    inside = np.array(mask.asnp()) > 0.5
    # where the template is bright the ratio to T**gamma is the bias (noise aside)
    sel = inside & (T > 0.5)
    ratio = A[sel] / T[sel] ** info["gamma"]
    assert 0.7 < ratio.min() and ratio.max() < 1.3
    noise = A - phantom.rescan(t1, seed=5, noise_sd=0.0)[0].asnp()
    assert abs(float(noise.std()) - 0.03) < 0.003
    assert a.grid().size() == t1.grid().size()


def test_t2_like_contrast_is_not_monotone(mni4):
    """CSF bright, white matter dark: the T2-like image is not a monotone
    function of the T1 (a grey-level correlation across tissues is negative)."""
    t1, mask = mni4
    t2 = phantom.t2_like(t1, 4.0)
    gm, wm = (np.array(im.asnp(), np.float64) for im in phantom.load_mni_tissues(4.0))
    T2 = np.array(t2.asnp(), np.float64)
    T1 = np.array(t1.asnp(), np.float64)
    wm_sel, gm_sel = wm > 0.9, gm > 0.9
    assert T2[wm_sel].mean() < T2[gm_sel].mean()             # white matter darker than grey
    assert T1[wm_sel].mean() > T1[gm_sel].mean()             # the reverse in T1
    inside = np.array(mask.asnp()) > 0.5
    assert np.corrcoef(T1[inside], T2[inside])[0, 1] < 0


def test_demo_rescan_quick(tmp_path):
    """--rescan --metric lncc: the moving image is re-acquired and the
    summary names the metric and the rescan; the deformation is still
    recovered (about 1.5 mm mean at 4 mm)."""
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "PyCA.Apps.demo", "--quick", "--quiet", "--rescan", "--metric",
                        "lncc", "--method", "greedy", "--out", str(out)],
                       capture_output=True, text=True, env=_env(), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["metric"] == "lncc" and s["metric_params"] == {"lncc_radius": 1}   # automatic at 4 mm
    assert s["phantom"]["rescan"]["gamma"] == 0.75
    err, ph = s["deformation_error_mm"], s["phantom"]
    assert err["mean_mm"] < 0.6 * ph["disp_brain_mean_mm"]
    assert s["folded_voxels"] == 0


def test_demo_rescan_errors(tmp_path):
    for args, text in ((["--rescan", "t3"], "invalid choice"),
                       (["--metric", "xx"], "invalid choice"),
                       (["--fixed", __file__, "--moving", __file__, "--rescan"], "--rescan applies")):
        r = subprocess.run([sys.executable, "-m", "PyCA.Apps.demo", "--out", str(tmp_path / "o")] + args,
                           capture_output=True, text=True, env=_env(), timeout=120)
        assert r.returncode == 1
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and text in lines[0], r.stderr


@pytest.mark.skipif(bool(os.environ.get('PYCA_SANITIZED')),
                    reason='half a minute under the sanitizers; the arithmetic is covered elsewhere')
def test_lddmm_large_3d_deformation_no_fold_and_no_worse_than_greedy():
    """The brain at 4 mm against a phantom of up to 24 mm (``--quick --max-disp
    24``: mean 10 mm in the brain). LDDMM with its defaults must return a
    diffeomorphism (det J > 0 everywhere, of h and of hinv) and recover the
    deformation at least as well as greedy. With the former kernel (K = L^-1,
    alpha 800) it left 4.7 mm against greedy's 4.3 mm (UserGuide, "LDDMM's
    kernel")."""
    from PyCA.Apps import register
    from PyCA.Apps.demo import make_phantom_pair
    from PyCA.Apps.outputs import jacobian_determinant
    fixed, moving, mask, h_true, info = make_phantom_pair(4.0, max_disp_mm=24.0)
    assert info['disp_brain_mean_mm'] > 9.0
    err = {}
    for method in ('lddmm', 'greedy'):
        r = register(fixed, moving, method=method, quiet=True, device='cpu')
        err[method] = phantom.deformation_error(r.h, h_true, mask)
        if method == 'lddmm':
            for f in (r.h, r.hinv):
                j = np.array(jacobian_determinant(f).asnp())
                assert np.isfinite(j).all() and j.min() > 0, j.min()
    ident = ca.Field3D(fixed.grid(), ca.MEM_HOST)
    ca.SetToIdentity(ident)
    e_id = phantom.deformation_error(ident, h_true, mask)
    assert err['lddmm']['mean_mm'] <= err['greedy']['mean_mm'], err
    assert err['lddmm']['mean_mm'] < 0.5 * e_id['mean_mm'], (err, e_id)
