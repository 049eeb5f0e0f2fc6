"""JacDetH keeps the legacy units; JacDetHVoxel is the voxel-unit extension
(issue 17, item 2; Documentation/LegacyDifferences.md).

The legacy JacDetH of an H-field (h in voxel coordinates) divides the
derivatives by the spacing (the legacy unit test and PyCA.Numpy.JacDet), so
the identity gives 1 / voxelVol (1 / (sx sy) in 2-D). The three-gradient
overload is the plain determinant of its rows. JacDetHVoxel is JacDetH times
the voxel volume for both overloads: 1 for the identity on any spacing.

References: analytic values (identity, affine maps), a float64 NumPy
reference of the finite differences (numpy_ref, the spec's definitions),
and the legacy golden outputs. Every check runs on the host and, when a CUDA
device is present, on the device.
"""
import itertools

import numpy as np
import pytest

import PyCA.Core as ca
import numpy_ref as ref
from conftest import field_from, grid, image_from, to_np, usable_mem_types

DIFF = {"FORWARD": ca.DIFF_FORWARD, "BACKWARD": ca.DIFF_BACKWARD, "CENTRAL": ca.DIFF_CENTRAL}
BC = {"APPROX": ca.BC_APPROX, "WRAP": ca.BC_WRAP, "CLAMP": ca.BC_CLAMP}
#: anisotropic grids; the 2-D one has sz = 1 and a z spacing that must not count
GRIDS = {"3d": ((13, 11, 7), (1.5, 2.1, 0.7)), "2d": ((17, 15, 1), (1.7, 0.6, 3.0))}
MEMS = {("host" if m == ca.MEM_HOST else "pinned" if m == ca.MEM_HOST_PINNED else "device"): m
        for m in usable_mem_types}


def vol(tag):
    """The voxel volume the legacy divides by: sx sy sz, or sx sy in 2-D."""
    size, sp = GRIDS[tag]
    return float(np.prod(sp[:2] if size[2] == 1 else sp))


def det(J, flat):
    """det of J (3, 3, ...) in float64; the 2x2 x, y block when flat."""
    if flat:
        return J[0, 0] * J[1, 1] - J[0, 1] * J[1, 0]
    return ref.det3(J)


def close(got, want, what, rtol=2e-6, atol=0.0):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, what
    err = np.abs(got - want)
    lim = atol + rtol * np.abs(want)
    assert (err <= lim).all(), "%s: max excess %g at %s (got %r, want %r)" % (
        what, (err - lim).max(), np.unravel_index(np.argmax(err - lim), err.shape),
        got.flat[np.argmax(err - lim)], want.flat[np.argmax(err - lim)])


def g_of(tag):
    size, sp = GRIDS[tag]
    return grid(*size, sp=sp, org=(-2.0, 1.0, 0.5))


def run(fn, tag, mem, h, *args):
    """fn(out, field h, *args) on memory mem: the output as a host array."""
    g = g_of(tag)
    out = ca.Image3D(g, mem)
    fn(out, field_from(h, g, mem), *args)
    return to_np(out)


def interior(shape):
    return tuple(slice(1, -1) if n > 2 else slice(None) for n in shape)


def voxel_affine(tag, A, b):
    """h(x) = A x + b in voxel coordinates; z row/column identity in 2-D."""
    size, _ = GRIDS[tag]
    I = ref.identity(size)
    h = np.einsum("ij,j...->i...", A, I) + np.reshape(b, (3, 1, 1, 1))
    if size[2] == 1:
        h[2] = 0.0
    return h


# ---------------------------------------------------------------------------
# analytic values

@pytest.mark.parametrize("mem", sorted(MEMS))
@pytest.mark.parametrize("tag", sorted(GRIDS))
def test_identity_is_one_over_voxel_volume(tag, mem):
    size, _ = GRIDS[tag]
    I = ref.identity(size)
    for (dn, diff), (bn, bc) in itertools.product(DIFF.items(), BC.items()):
        got = run(ca.JacDetH, tag, MEMS[mem], I, diff, bc)
        vox = run(ca.JacDetHVoxel, tag, MEMS[mem], I, diff, bc)
        # central BC_APPROX is exact everywhere for a linear map, the rest inside
        sl = (slice(None),) * 3 if (dn, bn) == ("CENTRAL", "APPROX") else interior(size)
        close(got[sl], np.full(got[sl].shape, 1.0 / vol(tag)), "JacDetH(Id) %s %s %s" % (tag, dn, bn))
        close(vox[sl], np.ones(vox[sl].shape), "JacDetHVoxel(Id) %s %s %s" % (tag, dn, bn))
    # the defaults (central, BC_APPROX)
    close(run(ca.JacDetH, tag, MEMS[mem], I), np.full(size, 1.0 / vol(tag)), "JacDetH(Id) defaults")
    close(run(ca.JacDetHVoxel, tag, MEMS[mem], I), np.ones(size), "JacDetHVoxel(Id) defaults")


def test_identity_values_spelled_out():
    """The legacy value on the 3-D grid is 1 / (1.5 * 2.1 * 0.7) = 0.45351...;
    in 2-D (sz = 1, z spacing 3) 1 / (1.7 * 0.6) = 0.98039..."""
    got3 = run(ca.JacDetH, "3d", ca.MEM_HOST, ref.identity(GRIDS["3d"][0]))
    got2 = run(ca.JacDetH, "2d", ca.MEM_HOST, ref.identity(GRIDS["2d"][0]))
    assert got3[6, 5, 3] == pytest.approx(0.4535147392290249, rel=1e-6)
    assert got2[8, 7, 0] == pytest.approx(0.9803921568627451, rel=1e-6)


@pytest.mark.parametrize("mem", sorted(MEMS))
@pytest.mark.parametrize("tag", sorted(GRIDS))
def test_affine_maps(tag, mem):
    """x -> A x + b: in voxel coordinates JacDetHVoxel = det A and JacDetH =
    det A / voxelVol; for a map of physical coordinates y = A x + b (h =
    (A (x sp + o) + b - o) / sp) JacDetH = det A / voxelVol too, and
    JacDetHVoxel = det A, the physical volume ratio."""
    size, sp = GRIDS[tag]
    flat = size[2] == 1
    if flat:
        A = np.array([[1.2, 0.35, 0.0], [-0.2, 0.85, 0.0], [0.0, 0.0, 1.0]])
        b = np.array([1.5, -2.0, 0.0])
    else:
        A = np.array([[1.2, 0.3, -0.1], [0.05, 0.9, 0.2], [-0.3, 0.1, 1.1]])
        b = np.array([2.0, -1.0, 0.5])
    dA = np.linalg.det(A[:2, :2] if flat else A)
    g = g_of(tag)
    spv = np.reshape(sp, (3, 1, 1, 1))
    o = np.reshape([g.origin().x, g.origin().y, g.origin().z], (3, 1, 1, 1))
    X = ref.identity(size) * spv + o
    h_phys = (np.einsum("ij,j...->i...", A, X) + np.reshape(b, (3, 1, 1, 1)) - o) / spv
    if flat:
        h_phys[2] = 0.0
    for name, h in (("voxel", voxel_affine(tag, A, b)), ("physical", h_phys)):
        atol = 3e-6 * np.abs(h).max()
        got = run(ca.JacDetH, tag, MEMS[mem], h)
        vox = run(ca.JacDetHVoxel, tag, MEMS[mem], h)
        close(got, np.full(size, dA / vol(tag)), "JacDetH %s affine %s" % (name, tag), atol=atol / vol(tag))
        close(vox, np.full(size, dA), "JacDetHVoxel %s affine %s" % (name, tag), atol=atol)


# ---------------------------------------------------------------------------
# a float64 NumPy reference with anisotropic spacing

def smooth_hfield(tag, seed):
    size, _ = GRIDS[tag]
    rng = np.random.default_rng(seed)
    I = ref.identity(size)
    x = [I[d] / max(n - 1, 1) for d, n in enumerate(size)]
    u = np.array([0.9 * np.sin(2.0 * x[0] + 3.0 * x[1] + rng.uniform(0, 6)) * np.cos(1.5 * x[2] + rng.uniform(0, 6))
                  for _ in range(3)])
    h = (I + u + rng.uniform(-0.05, 0.05, I.shape)).astype(np.float32).astype(np.float64)
    if size[2] == 1:
        h[2] = 0.0
    return h


@pytest.mark.parametrize("mem", sorted(MEMS))
@pytest.mark.parametrize("tag", sorted(GRIDS))
def test_hfield_overload_vs_numpy(tag, mem):
    size, sp = GRIDS[tag]
    flat = size[2] == 1
    h = smooth_hfield(tag, 17)
    for (dn, diff), (bn, bc) in itertools.product(DIFF.items(), BC.items()):
        Jp = ref.jacobian(h, dn, bn, sp)        # d h / d x, x physical (legacy)
        Jv = ref.jacobian(h, dn, bn)            # voxel units
        want, want_vox = det(Jp, flat), det(Jv, flat)
        scale = np.abs(want_vox).max()
        got = run(ca.JacDetH, tag, MEMS[mem], h, diff, bc)
        vox = run(ca.JacDetHVoxel, tag, MEMS[mem], h, diff, bc)
        close(got, want, "JacDetH %s %s %s" % (tag, dn, bn), rtol=1e-5, atol=1e-5 * scale / vol(tag))
        close(vox, want_vox, "JacDetHVoxel %s %s %s" % (tag, dn, bn), rtol=1e-5, atol=1e-5 * scale)


@pytest.mark.parametrize("mem", sorted(MEMS))
@pytest.mark.parametrize("tag", sorted(GRIDS))
def test_gradient_overload_vs_numpy(tag, mem):
    """JacDetH(X, Y, Z) is det of the rows (as the legacy); JacDetHVoxel is
    that times the voxel volume; with Jacobian(h)'s rows they equal the
    H-field overloads."""
    size, sp = GRIDS[tag]
    flat = size[2] == 1
    rng = np.random.default_rng(23)
    rows = rng.uniform(-2, 2, (3, 3) + size).astype(np.float32).astype(np.float64)
    g = g_of(tag)
    objs = [field_from(r, g, MEMS[mem]) for r in rows]
    for fn, scale, name in ((ca.JacDetH, 1.0, "JacDetH"), (ca.JacDetHVoxel, vol(tag), "JacDetHVoxel")):
        out = ca.Image3D(g, MEMS[mem])
        fn(out, *objs)
        want = scale * det(rows, flat)
        close(to_np(out), want, "%s(X, Y, Z) %s" % (name, tag), rtol=1e-5, atol=1e-5 * np.abs(want).max())
    # the rows of Jacobian(h): the same determinants as from h
    h = smooth_hfield(tag, 29)
    hf = field_from(h, g, MEMS[mem])
    X, Y, Z = (ca.Field3D(g, MEMS[mem]) for _ in range(3))
    ca.Jacobian(X, Y, Z, hf, ca.DIFF_CENTRAL, ca.BC_APPROX)
    want = det(ref.jacobian(h, "CENTRAL", "APPROX", sp), flat)
    for fn, scale, name in ((ca.JacDetH, 1.0, "JacDetH"), (ca.JacDetHVoxel, vol(tag), "JacDetHVoxel")):
        out = ca.Image3D(g, MEMS[mem])
        fn(out, X, Y, Z)
        close(to_np(out), scale * want, "%s(Jacobian(h)) %s" % (name, tag), rtol=1e-5,
              atol=1e-5 * scale * np.abs(want).max())


def test_voxel_is_legacy_times_volume_bitwise_close():
    """On the same input the two differ by the voxel volume only."""
    h = smooth_hfield("3d", 5)
    a = run(ca.JacDetH, "3d", ca.MEM_HOST, h)
    b = run(ca.JacDetHVoxel, "3d", ca.MEM_HOST, h)
    close(a * vol("3d"), b, "JacDetH * voxelVol == JacDetHVoxel", rtol=1e-5, atol=1e-6 * np.abs(b).max())


def test_errors():
    g = g_of("3d")
    other = grid(5, 5, 5)
    with pytest.raises(RuntimeError, match="Input grids are not equal"):
        ca.JacDetHVoxel(ca.Image3D(g, ca.MEM_HOST), ca.Field3D(other, ca.MEM_HOST))
    with pytest.raises(RuntimeError, match="Input grids are not equal"):
        ca.JacDetHVoxel(ca.Image3D(g, ca.MEM_HOST), *(ca.Field3D(other, ca.MEM_HOST) for _ in range(3)))
    with pytest.raises(TypeError):
        ca.JacDetHVoxel(ca.Image3D(g, ca.MEM_HOST), None)


# ---------------------------------------------------------------------------
# the legacy golden outputs

def _golden_cases():
    import json
    import os
    from conftest import golden_dir_path
    d = golden_dir_path()
    if d is None:
        return None, []
    with open(os.path.join(d, "manifest.json")) as fh:
        cases = json.load(fh)["cases"]
    return d, [c for c in cases if c["op"] == "JacDetH"]


GOLDEN, JCASES = _golden_cases()


def _load(entry):
    import os
    a = np.fromfile(os.path.join(GOLDEN, entry["file"]), dtype="<f4")
    s = tuple(entry["grid"]["size"])
    if entry["kind"] == "field":
        return [c.reshape(s, order="F") for c in a.reshape(3, -1)]
    return a.reshape(s, order="F")


def test_golden_cases_present():
    if GOLDEN is None:
        pytest.skip("golden data not available")
    assert len(JCASES) == 20  # 9 schemes x 2 grids + the gradient form x 2


@pytest.mark.parametrize("case", JCASES, ids=[c["id"] for c in JCASES])
def test_golden_legacy_and_voxel(case):
    """JacDetH reproduces the legacy output; JacDetHVoxel is it times the
    voxel volume (sx sy in 2-D)."""
    gd = case["grid"]
    g = ca.GridInfo(ca.Vec3Di(*gd["size"]), ca.Vec3Df(*gd["spacing"]), ca.Vec3Df(*gd["origin"]))
    ins = [field_from(_load(e), g) for e in case["inputs"]]
    enums = [getattr(ca, case["enums"][k]) for k in ("diff", "bc") if k in case["enums"]]
    want = _load(case["outputs"][0]).astype(np.float64)
    v = float(np.prod(gd["spacing"][:2] if gd["size"][2] == 1 else gd["spacing"]))
    rtol, atol = case["tolerance"]["rtol"], case["tolerance"]["atol"]
    for fn, scale in ((ca.JacDetH, 1.0), (ca.JacDetHVoxel, v)):
        out = ca.Image3D(g, ca.MEM_HOST)
        fn(out, *ins, *enums)
        close(to_np(out), scale * want, "%s %s" % (fn.__name__, case["id"]), rtol=rtol, atol=atol * scale)


def test_apps_report_voxel_units():
    """PyCA.Apps' det J (summaries, fold checks) is JacDetHVoxel: the
    identity gives 1 on an anisotropic grid, an affine map its determinant."""
    outputs = pytest.importorskip("PyCA.Apps.outputs")
    size, _ = GRIDS["3d"]
    A = np.array([[1.2, 0.3, -0.1], [0.05, 0.9, 0.2], [-0.3, 0.1, 1.1]])
    for h, want in ((ref.identity(size), 1.0), (voxel_affine("3d", A, [1.0, 2.0, -0.5]), np.linalg.det(A))):
        j = outputs.jacobian_determinant(field_from(h, g_of("3d")))
        assert j.memType() == ca.MEM_HOST
        close(to_np(j), np.full(size, want), "Apps jacobian_determinant", rtol=1e-5)
