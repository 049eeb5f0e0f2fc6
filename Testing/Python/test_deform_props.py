"""Deformation, splatting and differential operators (spec groups E, F, H, V
and the rest of D) against independent NumPy references and properties.

Grids: a 3-D grid (17x19x23) and a 2-D one (31x33x1), both with anisotropic
spacing and a non-zero origin; fixed seeds. Deformations are smooth:
identity + a few low-frequency sines of 1-2 voxels (checked invertible:
det(I + Du) > 0.3). References are float64 (numpy_ref, PyCA.Numpy) evaluated
at the float32 sample points the kernels use (the points are computed with
the same float32 operations, so nearest-neighbour ties cannot flip).

Tolerances: "exact" means bit-identical float32; otherwise CLOSE (1e-5
relative to max(1, max |reference|) plus 1e-5 relative per value) unless a
test states its own.
"""
import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

import PyCA.Core as ca
import PyCA.Numpy as pn
import numpy_ref as ref
from conftest import field_from, grid, image_from, to_np

GRIDS = {
    "3d": dict(size=(17, 19, 23), sp=(0.7, 1.3, 2.1), org=(1.5, -2.0, 0.25)),
    "2d": dict(size=(31, 33, 1), sp=(1.3, 0.7, 2.1), org=(-0.5, 3.0, 1.0)),
}
SEEDS = {"3d": 11, "2d": 23}

BG = {n: getattr(ca, "BACKGROUND_STRATEGY_" + n)
      for n in ("PARTIAL_ID", "ID", "PARTIAL_ZERO", "ZERO", "CLAMP", "WRAP")}
IMAGE_BGS = ["CLAMP", "WRAP", "ZERO", "PARTIAL_ZERO"]
FIELD_BGS = IMAGE_BGS + ["ID", "PARTIAL_ID"]
HFIELD_BGS = ["CLAMP", "ID", "PARTIAL_ID"]
VFIELD_BGS = IMAGE_BGS
#: name -> (InterpT, order of numpy_ref.interp_image)
INTERP = {"NN": (ca.INTERP_NN, 0), "LINEAR": (ca.INTERP_LINEAR, 1), "CUBIC": (ca.INTERP_CUBIC, 3)}
DIFF = {"FORWARD": ca.DIFF_FORWARD, "BACKWARD": ca.DIFF_BACKWARD, "CENTRAL": ca.DIFF_CENTRAL}
BC = {"APPROX": ca.BC_APPROX, "WRAP": ca.BC_WRAP, "CLAMP": ca.BC_CLAMP}
DIMS = [ca.DIM_X, ca.DIM_Y, ca.DIM_Z]

RTOL = 1e-5


# ---------------------------------------------------------------------------
# helpers

def f32(a):
    """float64 copy of the float32 rounding of a."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def inp(obj):
    """float64 NumPy copy of an image (X, Y, Z) or a field (3, X, Y, Z)."""
    if isinstance(obj, ca.Field3D):
        return np.stack(to_np(obj)).astype(np.float64)
    return to_np(obj).astype(np.float64)


def close(got, want, what="", rtol=RTOL, atol=None):
    """|got - want| <= atol + rtol |want|, atol = rtol * max(1, max |want|)."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if atol is None:
        atol = rtol * max(1.0, float(np.abs(want).max()) if want.size else 1.0)
    err = np.abs(got - want)
    lim = atol + rtol * np.abs(want)
    if (err > lim).any():
        i = np.unravel_index(np.argmax(err - lim), err.shape)
        pytest.fail("%s: %d values off, worst at %s: got %r want %r (|err| %.3g, limit %.3g)" % (
            what, int((err > lim).sum()), i, got[i], want[i], err[i], lim[i]), pytrace=False)


def same(a, b, what=""):
    """Bit-identical float32 results (+0 == -0)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, what
    bad = ~((a == b) | (np.isnan(a) & np.isnan(b)))
    if bad.any():
        i = np.unravel_index(np.argmax(bad), bad.shape)
        pytest.fail("%s: %d values differ, first at %s: %r vs %r" % (what, int(bad.sum()), i, a[i], b[i]),
                    pytrace=False)


class Dom:
    """One test grid and its NumPy helpers."""

    def __init__(self, tag, params=None):
        p = params or GRIDS[tag]
        self.tag = tag
        self.shape = tuple(p["size"])
        self.spv = np.array(p["sp"], np.float64)
        self.sp = self.spv.reshape(3, 1, 1, 1)
        self.g = grid(*p["size"], sp=p["sp"], org=p["org"])
        self.I = ref.identity(self.shape)
        self.flat = self.shape[2] == 1
        self.axes = [e for e in range(3) if self.shape[e] > 1]
        self.seed = SEEDS.get(tag, 5)

    def rng(self, k):
        return np.random.default_rng(1000 * self.seed + k)

    def im(self, a):
        return image_from(a, self.g)

    def fld(self, F):
        return field_from(list(F), self.g)

    def new_im(self, fill=np.nan):
        im = ca.Image3D(self.g, ca.MEM_HOST)
        ca.SetMem(im, float(fill))
        return im

    def new_fld(self, fill=np.nan):
        f = ca.Field3D(self.g, ca.MEM_HOST)
        ca.SetMem(f, float(fill))
        return f

    def rand(self, k, lo=-1.0, hi=1.0):
        return f32(self.rng(k).uniform(lo, hi, self.shape))

    def rand_field(self, k, lo=-1.0, hi=1.0):
        return f32(self.rng(k).uniform(lo, hi, (3,) + self.shape))

    def smooth_image(self, k):
        """A smooth image (low-frequency cosines), values in about [-2, 2]."""
        r = self.rng(k)
        out = np.zeros(self.shape)
        for _ in range(3):
            arg = sum(np.pi * r.uniform(0.5, 1.5) * self.I[e] / self.shape[e] for e in self.axes)
            out += r.uniform(0.4, 0.7) * np.cos(arg + r.uniform(0, 2 * np.pi))
        return f32(out)

    def disp(self, k, amp=1.5, window=False, terms=3, invertible=True):
        """A smooth displacement in voxels (3, X, Y, Z): terms sines of
        wavelength 2 n / |k| (k in {-1, 0, 1} per axis), total amplitude up
        to amp, zero along flat axes; window=True makes it vanish on the grid
        border (then g = Id + u maps the grid onto itself). invertible:
        check det(I + Du) > 0.3 (the test deformation is a diffeomorphism)."""
        r = self.rng(k)
        u = np.zeros((3,) + self.shape)
        for d in self.axes:
            for _ in range(terms):
                kv = np.zeros(3)
                for e in self.axes:
                    kv[e] = r.integers(-1, 2)
                if not kv.any():
                    kv[r.choice(self.axes)] = 1
                arg = sum(np.pi * kv[e] * self.I[e] / self.shape[e] for e in self.axes)
                u[d] += amp / terms * r.uniform(0.6, 1.0) * np.sin(arg + r.uniform(0, 2 * np.pi))
        if window:
            w = np.ones(self.shape)
            for e in self.axes:
                n = self.shape[e] - 1
                w *= 4.0 * self.I[e] * (n - self.I[e]) / n ** 2
            u *= w
        if invertible:
            J = ref.jacobian(u) + np.eye(3).reshape(3, 3, 1, 1, 1)
            if self.flat:
                J[2, 2] = 1.0
            assert ref.det3(J).min() > 0.3, "test deformation not invertible"
        return u

    def hfield(self, k, amp=1.5, window=False, invertible=True):
        return f32(self.I + self.disp(k, amp, window, invertible=invertible))

    def interior(self, m):
        return tuple(slice(m, -m) if s > 2 * m else slice(None) for s in self.shape)


@pytest.fixture(params=sorted(GRIDS), scope="module")
def dom(request):
    return Dom(request.param)


def identity_field(d):
    h = d.new_fld()
    ca.SetToIdentity(h)
    return h


def border_points(d, k):
    """Sample points (3, X, Y, Z) spread over and beyond the grid (to 2.5
    voxels outside), a quarter of the coordinates exact integers (0, n - 1,
    -1, n included), flat axes mostly at 0."""
    r = d.rng(k)
    p = np.empty((3,) + d.shape)
    for e in range(3):
        n = d.shape[e]
        if n == 1:
            p[e] = np.where(r.uniform(size=d.shape) < 0.7, 0.0, r.uniform(-1.5, 1.5, d.shape))
            continue
        p[e] = r.uniform(-2.5, n + 1.5, d.shape)
        pick = r.uniform(size=d.shape)
        p[e] = np.where(pick < 0.25, np.round(p[e]), p[e])
        p[e] = np.where(pick < 0.05, n - 1.0, np.where(pick < 0.08, 0.0, p[e]))
    return f32(p)


def pts_v(d, u, delta):
    """x + delta * u / sp with the kernel's float32 operations."""
    k = (np.float32(delta) / d.spv.astype(np.float32)).reshape(3, 1, 1, 1)
    return (d.I.astype(np.float32) + k * np.asarray(u, np.float32)).astype(np.float64)


def pts_lin(shape, a, b):
    """a * x + b per axis in float32 (translations, resampling)."""
    I = ref.identity(shape).astype(np.float32)
    a = np.asarray(a, np.float32).reshape(3, 1, 1, 1)
    b = np.asarray(b, np.float32).reshape(3, 1, 1, 1)
    return (a * I + b).astype(np.float64)


# ---------------------------------------------------------------------------
# identity deformations and integer translations: exact

@pytest.mark.parametrize("interp", sorted(INTERP))
@pytest.mark.parametrize("bg", IMAGE_BGS)
def test_identity_reproduces_image(dom, bg, interp):
    a = dom.rand(1)
    im, h = dom.im(a), identity_field(dom)
    zero = dom.new_fld(0.0)
    it = INTERP[interp][0]
    for name, call in (
            ("ApplyH", lambda o: ca.ApplyH(o, im, h, BG[bg], it)),
            ("ApplyV", lambda o: ca.ApplyV(o, im, zero, 1.7, BG[bg], it)),
            ("ApplyVInv", lambda o: ca.ApplyVInv(o, im, zero, -0.3, BG[bg], it)),
            ("ComposeTranslation", lambda o: ca.ComposeTranslation(o, im, ca.Vec3Df(0, 0, 0), BG[bg], it))):
        out = dom.new_im()
        call(out)
        same(to_np(out), a.astype(np.float32), "%s %s %s" % (name, bg, interp))


@pytest.mark.parametrize("bg", FIELD_BGS)
def test_identity_reproduces_field(dom, bg):
    F = dom.rand_field(2, -3, 3)
    f, h, zero = dom.fld(F), identity_field(dom), dom.new_fld(0.0)
    t0 = ca.Vec3Df(0, 0, 0)
    calls = [("ApplyH", lambda o: ca.ApplyH(o, f, h, BG[bg])),
             ("ApplyV", lambda o: ca.ApplyV(o, f, zero, BG[bg], 2.0)),
             ("ApplyVInv", lambda o: ca.ApplyVInv(o, f, zero, BG[bg])),
             ("ComposeTranslation", lambda o: ca.ComposeTranslation(o, f, t0, BG[bg])),
             ("ComposeHTranslation", lambda o: ca.ComposeHTranslation(o, f, t0, BG[bg])),
             ("ComposeVTranslation", lambda o: ca.ComposeVTranslation(o, f, t0, BG[bg]))]
    if bg in HFIELD_BGS:
        calls += [("ComposeHH", lambda o: ca.ComposeHH(o, f, h, BG[bg])),
                  ("ComposeHV", lambda o: ca.ComposeHV(o, f, zero, 1.3, BG[bg])),
                  ("ComposeHVInv", lambda o: ca.ComposeHVInv(o, f, zero, 1.3, BG[bg]))]
    for name, call in calls:
        out = dom.new_fld()
        call(out)
        same(inp(out), F, "%s %s" % (name, bg))


def test_set_to_identity_and_zero(dom):
    h = dom.fld(dom.rand_field(3))
    ca.SetToIdentity(h)
    same(inp(h), dom.I, "SetToIdentity")
    v = dom.fld(dom.rand_field(4))
    ca.SetToZero(v)
    assert not inp(v).any() and not np.signbit(inp(v)).any()


def _shift_ref(a, t, bg):
    """a(x + t) for integer t, with bg at the border (images)."""
    idx = []
    ok = np.ones(a.shape, bool)
    for e in range(3):
        i = ref.identity(a.shape)[e].astype(np.int64) + int(t[e])
        n = a.shape[e]
        ok &= (i >= 0) & (i < n)
        idx.append(np.mod(i, n) if bg == "WRAP" else np.clip(i, 0, n - 1))
    v = a[tuple(idx)]
    return v if bg in ("CLAMP", "WRAP") else np.where(ok, v, 0.0)


def _int_shift(dom):
    return (2, -3, 1) if not dom.flat else (3, -2, 0)


@pytest.mark.parametrize("interp", sorted(INTERP))
@pytest.mark.parametrize("bg", IMAGE_BGS)
def test_integer_translation_image(dom, bg, interp):
    a = dom.rand(5)
    t = _int_shift(dom)
    out = dom.new_im()
    ca.ComposeTranslation(out, dom.im(a), ca.Vec3Df(*t), BG[bg], INTERP[interp][0])
    same(to_np(out), _shift_ref(a, t, bg).astype(np.float32), "ComposeTranslation %s %s" % (bg, interp))


POW2 = dict(size=(13, 11, 9), sp=(0.5, 2.0, 0.25), org=(1.0, 2.0, -3.0))


@pytest.mark.parametrize("interp", sorted(INTERP))
@pytest.mark.parametrize("bg", IMAGE_BGS)
def test_apply_v_constant_field_shifts_exactly(bg, interp):
    """ApplyV / ApplyVInv with a constant field u = t sp / delta shift by t
    voxels: exact where delta / sp and u are exact in float32 (powers of 2),
    to rounding on the anisotropic 3-D grid."""
    it = INTERP[interp][0]
    for d, exact in ((Dom("pow2", POW2), True), (Dom("3d"), False)):
        a = d.rand(6)
        t = np.array([2.0, -3.0, 1.0])
        want = _shift_ref(a, t, bg)
        for delta in (1.0, 2.0):
            u = np.broadcast_to((t * d.spv / delta).reshape(3, 1, 1, 1), (3,) + d.shape)
            out = d.new_im()
            ca.ApplyV(out, d.im(a), d.fld(u), delta, BG[bg], it)
            out2 = d.new_im()
            ca.ApplyVInv(out2, d.im(a), d.fld(-u), delta, BG[bg], it)
            what = "%s %s %s delta %g" % (d.tag, bg, interp, delta)
            if exact:
                same(to_np(out), want.astype(np.float32), "ApplyV " + what)
                same(to_np(out2), want.astype(np.float32), "ApplyVInv " + what)
            else:
                close(to_np(out), want, "ApplyV " + what)
                close(to_np(out2), want, "ApplyVInv " + what)


def _shift_field_ref(F, t, bg):
    out = np.empty_like(F)
    shape = F.shape[1:]
    I = ref.identity(shape)
    ok = np.ones(shape, bool)
    for e in range(3):
        i = I[e] + t[e]
        ok &= (i >= 0) & (i < shape[e])
    for d in range(3):
        out[d] = _shift_ref(F[d], t, "WRAP" if bg == "WRAP" else "CLAMP")
        if bg in ("ZERO", "PARTIAL_ZERO"):
            out[d] = np.where(ok, out[d], 0.0)
        elif bg in ("ID", "PARTIAL_ID"):
            out[d] = np.where(ok, out[d], I[d] + t[d])
    return out


@pytest.mark.parametrize("bg", FIELD_BGS)
def test_integer_translation_field(dom, bg):
    F = dom.rand_field(7, -4, 4)
    t = _int_shift(dom)
    want = _shift_field_ref(F, t, bg)
    for name in ("ComposeTranslation", "ComposeHTranslation", "ComposeVTranslation"):
        out = dom.new_fld()
        getattr(ca, name)(out, dom.fld(F), ca.Vec3Df(*t), BG[bg])
        same(inp(out), want, "%s %s" % (name, bg))
    d = Dom("pow2", POW2)
    F = d.rand_field(8, -4, 4)
    t = (1, 2, -1)
    u = np.broadcast_to((np.array(t) * d.spv / 2.0).reshape(3, 1, 1, 1), (3,) + d.shape)
    out = d.new_fld()
    ca.ApplyV(out, d.fld(F), d.fld(u), BG[bg], 2.0)
    same(inp(out), _shift_field_ref(F, t, bg), "field ApplyV %s" % bg)


def test_nearest_rounds_half_away_from_zero(dom):
    a = dom.rand(9)
    for t in (0.5, -0.5, 1.5):
        for bg in ("CLAMP", "ZERO"):
            out = dom.new_im()
            ca.ComposeTranslation(out, dom.im(a), ca.Vec3Df(t, 0, 0), BG[bg], ca.INTERP_NN)
            x = dom.I[0] + t
            xi = np.where(x >= 0, np.floor(x + 0.5), -np.floor(-x + 0.5)).astype(int)
            want = _shift_ref(a, (0, 0, 0), bg)[np.clip(xi, 0, dom.shape[0] - 1), dom.I[1].astype(int),
                                                dom.I[2].astype(int)]
            if bg == "ZERO":
                want = np.where((xi >= 0) & (xi < dom.shape[0]), want, 0.0)
            same(to_np(out), want.astype(np.float32), "NN t=%g %s" % (t, bg))


# ---------------------------------------------------------------------------
# background strategies at the borders

@pytest.mark.parametrize("interp", sorted(INTERP))
@pytest.mark.parametrize("bg", IMAGE_BGS)
def test_image_background_vs_reference(dom, bg, interp):
    a = dom.rand(10, -2, 2)
    p = border_points(dom, 11)
    out = dom.new_im()
    ca.ApplyH(out, dom.im(a), dom.fld(p), BG[bg], INTERP[interp][0])
    want = ref.interp_image(a, p, INTERP[interp][1], bg)
    if interp == "NN":
        same(to_np(out), want.astype(np.float32), "NN %s" % bg)
    else:
        close(to_np(out), want, "%s %s" % (interp, bg))


@pytest.mark.parametrize("interp", sorted(INTERP))
def test_image_zero_is_partial_zero(dom, interp):
    a, p = dom.rand(12), border_points(dom, 13)
    outs = []
    for bg in ("ZERO", "PARTIAL_ZERO"):
        out = dom.new_im()
        ca.ApplyH(out, dom.im(a), dom.fld(p), BG[bg], INTERP[interp][0])
        outs.append(to_np(out))
    same(outs[0], outs[1], "image ZERO vs PARTIAL_ZERO " + interp)
    # and they are not CLAMP at the border
    clamp = dom.new_im()
    ca.ApplyH(clamp, dom.im(a), dom.fld(p), BG["CLAMP"], INTERP[interp][0])
    assert (to_np(clamp) != outs[0]).any()


@pytest.mark.parametrize("bg", FIELD_BGS)
def test_field_background_vs_reference(dom, bg):
    F = dom.rand_field(14, -3, 3)
    p = border_points(dom, 15)
    out = dom.new_fld()
    ca.ApplyH(out, dom.fld(F), dom.fld(p), BG[bg])
    close(inp(out), ref.interp_field(F, p, bg), "field ApplyH " + bg)


def test_field_all_or_nothing_strategies(dom):
    """ZERO / ID: the zero vector / the sample point where a corner the
    sample uses (non-zero weight) is outside; PARTIAL_ZERO / PARTIAL_ID
    elsewhere (bit-identical), and they differ at the border."""
    F = dom.rand_field(16, -3, 3)
    p = border_points(dom, 17)
    inside = np.ones(dom.shape, bool)
    for e in range(3):
        inside &= (p[e] >= 0) & (p[e] <= dom.shape[e] - 1)
    assert inside.any() and (~inside).any()
    res = {}
    for bg in ("ZERO", "PARTIAL_ZERO", "ID", "PARTIAL_ID"):
        out = dom.new_fld()
        ca.ApplyH(out, dom.fld(F), dom.fld(p), BG[bg])
        res[bg] = inp(out)
    for full, part in (("ZERO", "PARTIAL_ZERO"), ("ID", "PARTIAL_ID")):
        same(res[full][:, inside], res[part][:, inside], full + " inside")
        assert (res[full][:, ~inside] != res[part][:, ~inside]).any(), full
    assert not res["ZERO"][:, ~inside].any()
    same(res["ID"][:, ~inside], p[:, ~inside], "ID outside = sample point")


# ---------------------------------------------------------------------------
# deforming operators vs NumPy on smooth deformations

IMAGE_OPS = ["ApplyH", "ApplyV", "ApplyVInv", "ComposeTranslation"]


def _image_op(dom, name, a, bg, interp):
    """(call, sample points) of the image operator name."""
    delta = 0.8
    if name == "ApplyH":
        h = dom.hfield(20, amp=2.0)
        return (lambda o: ca.ApplyH(o, dom.im(a), dom.fld(h), BG[bg], interp)), h
    if name in ("ApplyV", "ApplyVInv"):
        u = f32(dom.disp(21, amp=2.0) * dom.sp)
        s = 1.0 if name == "ApplyV" else -1.0
        fn = getattr(ca, name)
        return (lambda o: fn(o, dom.im(a), dom.fld(u), delta, BG[bg], interp)), pts_v(dom, u, s * delta)
    t = (1.37, -2.61, 0.83) if not dom.flat else (1.37, -2.61, 0.0)
    return ((lambda o: ca.ComposeTranslation(o, dom.im(a), ca.Vec3Df(*t), BG[bg], interp)),
            pts_lin(dom.shape, (1, 1, 1), t))


@pytest.mark.parametrize("interp", sorted(INTERP))
@pytest.mark.parametrize("name", IMAGE_OPS)
def test_image_deformation_vs_reference(dom, name, interp):
    a = dom.rand(22, -2, 2)
    for bg in IMAGE_BGS:
        call, p = _image_op(dom, name, a, bg, INTERP[interp][0])
        out = dom.new_im()
        call(out)
        want = ref.interp_image(a, p, INTERP[interp][1], bg)
        if interp == "NN":
            same(to_np(out), want.astype(np.float32), "%s NN %s" % (name, bg))
        else:
            close(to_np(out), want, "%s %s %s" % (name, interp, bg))


def test_image_deformation_defaults(dom):
    """bg = CLAMP and interp = LINEAR by default; delta = 1."""
    a, h = dom.rand(23), dom.hfield(24)
    u = f32(dom.disp(25) * dom.sp)
    for name, short, full in (
            ("ApplyH", lambda o: ca.ApplyH(o, dom.im(a), dom.fld(h)),
             lambda o: ca.ApplyH(o, dom.im(a), dom.fld(h), BG["CLAMP"], ca.INTERP_LINEAR)),
            ("ApplyV", lambda o: ca.ApplyV(o, dom.im(a), dom.fld(u)),
             lambda o: ca.ApplyV(o, dom.im(a), dom.fld(u), 1.0, BG["CLAMP"], ca.INTERP_LINEAR)),
            ("ApplyVInv", lambda o: ca.ApplyVInv(o, dom.im(a), dom.fld(u)),
             lambda o: ca.ApplyVInv(o, dom.im(a), dom.fld(u), 1.0, BG["CLAMP"], ca.INTERP_LINEAR)),
            ("ComposeTranslation", lambda o: ca.ComposeTranslation(o, dom.im(a), ca.Vec3Df(0.5, 0.25, 0)),
             lambda o: ca.ComposeTranslation(o, dom.im(a), ca.Vec3Df(0.5, 0.25, 0), BG["CLAMP"],
                                             ca.INTERP_LINEAR))):
        o1, o2 = dom.new_im(), dom.new_im()
        short(o1)
        full(o2)
        same(to_np(o1), to_np(o2), name)


@pytest.mark.parametrize("name", IMAGE_OPS)
def test_field_deformation_vs_reference(dom, name):
    F = dom.rand_field(26, -3, 3)
    h = dom.hfield(27, amp=2.0)
    u = f32(dom.disp(28, amp=2.0) * dom.sp)
    t = (-1.71, 2.33, 0.61) if not dom.flat else (-1.71, 2.33, 0.0)
    delta = 1.3
    for bg in FIELD_BGS:
        out = dom.new_fld()
        if name == "ApplyH":
            ca.ApplyH(out, dom.fld(F), dom.fld(h), BG[bg])
            p = h
        elif name == "ApplyV":
            ca.ApplyV(out, dom.fld(F), dom.fld(u), BG[bg], delta)
            p = pts_v(dom, u, delta)
        elif name == "ApplyVInv":
            ca.ApplyVInv(out, dom.fld(F), dom.fld(u), BG[bg], delta)
            p = pts_v(dom, u, -delta)
        else:
            ca.ComposeTranslation(out, dom.fld(F), ca.Vec3Df(*t), BG[bg])
            p = pts_lin(dom.shape, (1, 1, 1), t)
        close(inp(out), ref.interp_field(F, p, bg), "field %s %s" % (name, bg))


def test_compose_vs_formulas(dom):
    """The compositions of FOpers.h / HFOpers.h / VFOpers.h against their
    formulas, every accepted strategy, delta != 1."""
    g = dom.hfield(30, amp=2.0)
    h = dom.hfield(31, amp=2.0)
    v = f32(dom.disp(32, amp=2.0) * dom.sp)
    delta = 0.7
    k = (np.float32(delta) / dom.spv.astype(np.float32)).reshape(3, 1, 1, 1).astype(np.float64)
    for bg in HFIELD_BGS:
        out = dom.new_fld()
        ca.ComposeHH(out, dom.fld(g), dom.fld(h), BG[bg])
        close(inp(out), ref.interp_field(g, h, bg), "ComposeHH " + bg)
        for name, s in (("ComposeHV", 1.0), ("ComposeHVInv", -1.0)):
            out = dom.new_fld()
            getattr(ca, name)(out, dom.fld(g), dom.fld(v), delta, BG[bg])
            close(inp(out), ref.interp_field(g, pts_v(dom, v, s * delta), bg), name + " " + bg)
    for bg in VFIELD_BGS:
        for name, s in (("ComposeVH", 1.0), ("ComposeVInvH", -1.0)):
            out = dom.new_fld()
            getattr(ca, name)(out, dom.fld(v), dom.fld(g), delta, BG[bg])
            close(inp(out), g + s * k * ref.interp_field(v, g, bg), name + " " + bg)
    # defaults: PARTIAL_ID for the H compositions, PARTIAL_ZERO for the V ones, delta 1
    for name, args, full in (
            ("ComposeHH", (g, h), (g, h, BG["PARTIAL_ID"])),
            ("ComposeHV", (g, v), (g, v, 1.0, BG["PARTIAL_ID"])),
            ("ComposeHVInv", (g, v), (g, v, 1.0, BG["PARTIAL_ID"])),
            ("ComposeVH", (v, g), (v, g, 1.0, BG["PARTIAL_ZERO"])),
            ("ComposeVInvH", (v, g), (v, g, 1.0, BG["PARTIAL_ZERO"]))):
        o1, o2 = dom.new_fld(), dom.new_fld()
        conv = lambda a: [dom.fld(x) if isinstance(x, np.ndarray) else x for x in a]
        getattr(ca, name)(o1, *conv(args))
        getattr(ca, name)(o2, *conv(full))
        same(inp(o1), inp(o2), name + " defaults")


def test_translation_helpers_defaults(dom):
    F = dom.rand_field(33, -3, 3)
    t = ca.Vec3Df(0.4, -1.6, 0.0 if dom.flat else 2.2)
    for name, default in (("ComposeHTranslation", "PARTIAL_ID"), ("ComposeVTranslation", "PARTIAL_ZERO"),
                          ("ComposeTranslation", "CLAMP")):
        o1, o2 = dom.new_fld(), dom.new_fld()
        getattr(ca, name)(o1, dom.fld(F), t)
        getattr(ca, name)(o2, dom.fld(F), t, BG[default])
        same(inp(o1), inp(o2), name)
        close(inp(o1), ref.interp_field(F, pts_lin(dom.shape, (1, 1, 1), tuple(t)), default), name)


def test_composehh_approximates_double_apply(dom):
    """I o (g o h) vs (I o g) o h for a smooth image and deformations that
    stay inside the grid: equal up to interpolation error. Stated tolerance:
    2% of the image's range away from the border (measured about 0.5%), and
    at least 10 times closer than applying g alone."""
    a = dom.smooth_image(34)
    g = dom.hfield(35, amp=2.5, window=True)
    h = dom.hfield(36, amp=2.5, window=True)
    f = dom.new_fld()
    ca.ComposeHH(f, dom.fld(g), dom.fld(h))
    once, ig, twice, gonly = dom.new_im(), dom.new_im(), dom.new_im(), dom.new_im()
    ca.ApplyH(once, dom.im(a), f)
    ca.ApplyH(ig, dom.im(a), dom.fld(g))
    ca.ApplyH(twice, ig, dom.fld(h))
    ca.ApplyH(gonly, dom.im(a), dom.fld(g))
    m = dom.interior(2)
    rng_ = np.ptp(a)
    err = np.abs(to_np(once) - to_np(twice))[m].max()
    assert err < 0.02 * rng_, (err, rng_)
    assert err < 0.1 * np.abs(to_np(gonly) - to_np(twice))[m].max()


@pytest.mark.parametrize("interp", sorted(INTERP))
@pytest.mark.parametrize("offset", [True, False], ids=["centred", "corner"])
def test_resample_image(dom, interp, offset):
    a = dom.rand(37, -2, 2)
    for so in ([(s + 1) // 2 for s in dom.shape], [max(1, s * 3 // 2) for s in dom.shape]):
        so = [1 if s == 1 else n for s, n in zip(dom.shape, so)]
        out = ca.Image3D(grid(*so, sp=(0.9, 1.1, 1.7), org=(3, 2, 1)), ca.MEM_HOST)
        for bg in IMAGE_BGS:
            ca.Resample(out, dom.im(a), BG[bg], INTERP[interp][0], offset)
            r = np.float32(dom.shape) / np.float32(so)
            o = (r - np.float32(1)) / np.float32(2) if offset else np.zeros(3, np.float32)
            p = pts_lin(tuple(so), r, o)
            want = ref.interp_image(a, p, INTERP[interp][1], bg)
            if interp == "NN":
                same(to_np(out), want.astype(np.float32), "Resample NN %s %s" % (so, bg))
            else:
                close(to_np(out), want, "Resample %s %s %s" % (interp, so, bg))
    # equal sizes copy (whatever the spacing / origin)
    out = ca.Image3D(grid(*dom.shape, sp=(3, 3, 3)), ca.MEM_HOST)
    ca.Resample(out, dom.im(a), BG["ZERO"], INTERP[interp][0], offset)
    same(to_np(out), a.astype(np.float32), "Resample same size")


def test_resample_field(dom):
    F = dom.rand_field(38, -3, 3)
    so = [max(1, (s * 2) // 3) for s in dom.shape]
    go = grid(*so)
    r = np.float32(dom.shape) / np.float32(so)
    p = pts_lin(tuple(so), r, (r - np.float32(1)) / np.float32(2))
    for name, default in (("Resample", "CLAMP"), ("ResampleH", "PARTIAL_ID"), ("ResampleV", "PARTIAL_ZERO")):
        for bg in FIELD_BGS:
            for rescale in (False, True):
                out = ca.Field3D(go, ca.MEM_HOST)
                getattr(ca, name)(out, dom.fld(F), BG[bg], rescale)
                want = ref.interp_field(F, p, bg)
                if rescale:
                    want = want * f32(np.float32(1) / r).reshape(3, 1, 1, 1)
                close(inp(out), want, "%s %s rescale=%s" % (name, bg, rescale))
        o1, o2 = ca.Field3D(go, ca.MEM_HOST), ca.Field3D(go, ca.MEM_HOST)
        getattr(ca, name)(o1, dom.fld(F))
        getattr(ca, name)(o2, dom.fld(F), BG[default], False)
        same(inp(o1), inp(o2), name + " defaults")
    out = ca.Field3D(dom.g, ca.MEM_HOST)
    ca.ResampleV(out, dom.fld(F), BG["ZERO"], True)
    same(inp(out), F, "field Resample same size copies (no rescale)")


def _world_grids(dom):
    if dom.flat:
        return grid(24, 30, 1, sp=(2.0, 0.9, 2.1), org=(1.0, 4.0, 1.0))
    return grid(14, 14, 18, sp=(1.1, 0.9, 3.0), org=(-1.0, -1.0, 2.0))


def _world_points(go, gi):
    """Voxel coordinates in gi of the voxels of go (float32, as the kernel)."""
    so, oo = np.float32(go.spacing().tolist()), np.float32(go.origin().tolist())
    si, oi = np.float32(gi.spacing().tolist()), np.float32(gi.origin().tolist())
    return pts_lin(tuple(go.size().tolist()), so / si, (oo - oi) / si)


@pytest.mark.parametrize("interp", sorted(INTERP))
def test_resample_world(dom, interp):
    a = dom.rand(39, -2, 2)
    go = _world_grids(dom)
    p = _world_points(go, dom.g)
    for bg in IMAGE_BGS:
        out = ca.Image3D(go, ca.MEM_HOST)
        ca.ResampleWorld(out, dom.im(a), BG[bg], INTERP[interp][0])
        want = ref.interp_image(a, p, INTERP[interp][1], bg)
        if interp == "NN":
            same(to_np(out), want.astype(np.float32), "ResampleWorld NN " + bg)
        else:
            close(to_np(out), want, "ResampleWorld %s %s" % (interp, bg))
    o1, o2 = ca.Image3D(go, ca.MEM_HOST), ca.Image3D(go, ca.MEM_HOST)
    ca.ResampleWorld(o1, dom.im(a))
    ca.ResampleWorld(o2, dom.im(a), BG["CLAMP"], ca.INTERP_LINEAR)
    same(to_np(o1), to_np(o2), "ResampleWorld defaults")


# ---------------------------------------------------------------------------
# H- and V-field helpers

@pytest.mark.parametrize("delta", [1.0, 0.37, -2.5])
def test_vtoh_htov(dom, delta):
    v = f32(dom.disp(40, amp=2.0) * dom.sp)
    h = dom.new_fld()
    ca.VtoH(h, dom.fld(v), delta)
    k = (np.float32(delta) / dom.spv.astype(np.float32)).reshape(3, 1, 1, 1).astype(np.float64)
    close(inp(h), dom.I + k * v, "VtoH", rtol=1e-6)
    back = dom.new_fld()
    ca.HtoV(back, h)
    # (x + delta v / sp - x) sp: the coordinates' rounding (a few ulp of the
    # largest coordinate, times the spacing) is all that is lost
    tol = 4 * 2.0 ** -23 * (np.abs(inp(h)).max() + 1) * dom.spv.max()
    close(inp(back), delta * v, "HtoV(VtoH(v, delta))", rtol=1e-6, atol=tol)
    # in place forms, default delta = 1
    hi = dom.fld(v)
    ca.VtoH_I(hi, delta)
    same(inp(hi), inp(h), "VtoH_I")
    ca.HtoV_I(hi)
    same(inp(hi), inp(back), "HtoV_I")
    d1, d2 = dom.new_fld(), dom.new_fld()
    ca.VtoH(d1, dom.fld(v))
    ca.VtoH(d2, dom.fld(v), 1.0)
    same(inp(d1), inp(d2), "VtoH default delta")
    # HtoV of an H-field: (h - x) sp
    g = dom.hfield(41)
    out = dom.new_fld()
    ca.HtoV(out, dom.fld(g))
    close(inp(out), (g - dom.I) * dom.sp, "HtoV", rtol=1e-6, atol=tol)


def test_inverse_zeroth_order(dom):
    h = dom.hfield(42, amp=0.8)
    out = dom.new_fld()
    ca.InverseZerothOrder(out, dom.fld(h))
    want = (2 * dom.I).astype(np.float32) - h.astype(np.float32)  # one float32 rounding
    same(inp(out), want, "InverseZerothOrder")
    hi = dom.fld(h)
    ca.InverseZerothOrder_I(hi)
    same(inp(hi), want, "InverseZerothOrder_I")
    # a first-order inverse: h o (2x - h) - x is O(|u| |Du|), much less than |u|
    r = ref.interp_field(h, want, "PARTIAL_ID") - dom.I
    m = dom.interior(3)
    assert np.abs(r[(slice(None),) + m]).max() < 0.5 * np.abs(h - dom.I).max()


@pytest.mark.skipif(not hasattr(ca, "Aff3Df"), reason="InitializeHFromAffine comes with ca.Aff3Df")
def test_initialize_h_from_affine(dom):
    """h(x) = voxel coordinates of A w(x) + b, w(x) = x sp + org the world
    position of voxel x (spec 2.10 H); invertAff uses the inverse map; a
    singular matrix cannot be inverted."""
    A = np.array([[1.1, 0.2, -0.1], [0.05, 0.95, 0.1], [-0.2, 0.1, 1.05]])
    b = np.array([0.7, -1.2, 0.4])

    def aff(M, t):
        m = ca.Mat3Df()
        for r, c in itertools.product(range(3), range(3)):
            m.set(r, c, float(M[r, c]))
        return ca.Aff3Df(m, ca.Vec3Df(*t))

    org = np.array(dom.g.origin().tolist()).reshape(3, 1, 1, 1)
    world = dom.I * dom.sp + org
    for invert in (False, True):
        M, t = (np.linalg.inv(A), -np.linalg.inv(A) @ b) if invert else (A, b)
        want = (np.einsum("ij,j...->i...", M, world) + t.reshape(3, 1, 1, 1) - org) / dom.sp
        h = dom.new_fld()
        ca.InitializeHFromAffine(h, aff(A, b), invert)
        close(inp(h), want, "InitializeHFromAffine invert=%s" % invert, rtol=1e-5)
    h = dom.new_fld()
    ca.InitializeHFromAffine(h, aff(np.eye(3), (0, 0, 0)), False)
    close(inp(h), dom.I, "identity affine", rtol=1e-6)
    with pytest.raises(RuntimeError) as ei:
        ca.InitializeHFromAffine(h, aff(np.zeros((3, 3)), (1, 2, 3)), True)
    assert "Error, could not invert affine transform" in str(ei.value)


# ---------------------------------------------------------------------------
# adjoint identities

def _dot(a, b):
    return float(np.sum(np.asarray(a, np.float64) * np.asarray(b, np.float64)))


def _adj_close(lhs, rhs, scale, what, rtol=1e-5):
    assert abs(lhs - rhs) <= rtol * scale, "%s: %r vs %r (|diff| %.3g, scale %.3g)" % (
        what, lhs, rhs, abs(lhs - rhs), scale)


@pytest.mark.parametrize("bg", ["ZERO", "PARTIAL_ZERO"])
def test_applyh_splat_adjoint(dom, bg):
    """<ApplyH(I, h), J> = <I, Splat(J, h)> (linear interpolation, samples
    outside count 0 for images with ZERO and PARTIAL_ZERO alike)."""
    a, j = dom.rand(50), dom.rand(51)
    h = dom.hfield(52, amp=3.0, invertible=False)
    Ah, Sj = dom.new_im(), dom.new_im()
    ca.ApplyH(Ah, dom.im(a), dom.fld(h), BG[bg], ca.INTERP_LINEAR)
    ca.Splat(Sj, dom.fld(h), dom.im(j))
    scale = _dot(np.abs(to_np(Ah)), np.abs(j)) + _dot(np.abs(a), np.abs(to_np(Sj)))
    _adj_close(_dot(to_np(Ah), j), _dot(a, to_np(Sj)), scale, "ApplyH/Splat " + bg)
    # fields, component by component: field ApplyH with PARTIAL_ZERO vs SplatField / SplatV
    A, Jf = dom.rand_field(53), dom.rand_field(54)
    FA, SJ, SV = dom.new_fld(), dom.new_fld(), dom.new_fld()
    ca.ApplyH(FA, dom.fld(A), dom.fld(h), BG["PARTIAL_ZERO"])
    ca.SplatField(SJ, dom.fld(Jf), dom.fld(h))
    ca.SplatV(SV, dom.fld(h), dom.fld(Jf), False)
    scale = _dot(np.abs(inp(FA)), np.abs(Jf)) + _dot(np.abs(A), np.abs(inp(SJ)))
    _adj_close(_dot(inp(FA), Jf), _dot(A, inp(SJ)), scale, "field ApplyH/SplatField")
    same(inp(SV), inp(SJ), "SplatV = SplatField")


def test_resample_world_splat_world_adjoint(dom):
    """<ResampleWorld(I), J> = <I, SplatWorld(J)> (ZERO background, the
    splat target zeroed first), the weights output and the accumulation."""
    gb = _world_grids(dom)
    shape_b = tuple(gb.size().tolist())
    rng = dom.rng(55)
    a = f32(rng.uniform(-1, 1, shape_b))   # on grid B
    j = dom.rand(56)                         # on grid A (dom)
    RA = dom.new_im()
    ca.ResampleWorld(RA, image_from(a, gb), BG["ZERO"], ca.INTERP_LINEAR)
    SB, W = ca.Image3D(gb, ca.MEM_HOST), ca.Image3D(gb, ca.MEM_HOST)
    ca.SetMem(SB, 0.0)
    ca.SetMem(W, 0.0)
    ca.SplatWorld(SB, dom.im(j), W, BG["ZERO"])
    scale = _dot(np.abs(to_np(RA)), np.abs(j)) + _dot(np.abs(a), np.abs(to_np(SB)))
    _adj_close(_dot(to_np(RA), j), _dot(a, to_np(SB)), scale, "ResampleWorld/SplatWorld")
    p = _world_points(dom.g, gb)
    sv, sw = ref.splat(j, p, shape_b, weights=True)
    close(to_np(SB), sv, "SplatWorld values")
    close(to_np(W), sw, "SplatWorld weights")
    assert sw.sum() > 0 and (sw == 0).any()
    # the unweighted form gives the same values; both accumulate
    S2 = ca.Image3D(gb, ca.MEM_HOST)
    ca.SetMem(S2, 0.0)
    ca.SplatWorld(S2, dom.im(j), BG["ZERO"])
    same(to_np(S2), to_np(SB), "SplatWorld without weights")
    ca.SplatWorld(S2, dom.im(j))
    ca.SplatWorld(SB, dom.im(j), W)
    close(to_np(S2), 2 * sv, "SplatWorld accumulates")
    close(to_np(W), 2 * sw, "SplatWorld weights accumulate")


@pytest.mark.parametrize("bg", ["ZERO", "PARTIAL_ZERO"])
def test_ad_coad_adjoint(dom, bg):
    """<Ad_g X, m> = <X, CoAd_g m>: exact for PARTIAL_ZERO; for ZERO with a
    g that maps the grid onto itself (no sample uses a corner outside)."""
    g = dom.hfield(57, amp=1.5, window=(bg == "ZERO"))
    X, m = dom.rand_field(58), dom.rand_field(59)
    AdX, CoAdm = dom.new_fld(), dom.new_fld()
    ca.Ad(AdX, dom.fld(g), dom.fld(X), BG[bg])
    ca.CoAd(CoAdm, dom.fld(g), dom.fld(m), BG[bg])
    scale = _dot(np.abs(inp(AdX)), np.abs(m)) + _dot(np.abs(X), np.abs(inp(CoAdm)))
    _adj_close(_dot(inp(AdX), m), _dot(X, inp(CoAdm)), scale, "Ad/CoAd " + bg)


def test_gradfor_divback_adjoint(dom):
    """<GradFor(f), v> = -<f, DivBack(v)> with BC_WRAP (exactly, up to float
    rounding), in physical units."""
    f, v = dom.rand(60), dom.rand_field(61)
    G, D = dom.new_fld(), dom.new_im()
    ca.GradFor(G, dom.im(f), ca.BC_WRAP)
    ca.DivBack(D, dom.fld(v), ca.BC_WRAP)
    scale = _dot(np.abs(inp(G)), np.abs(v)) + _dot(np.abs(f), np.abs(to_np(D)))
    _adj_close(_dot(inp(G), v), -_dot(f, to_np(D)), scale, "GradFor/DivBack", rtol=1e-6)


# ---------------------------------------------------------------------------
# 2-D problems embedded in 3-D: a 31x33x1 problem and the same data stacked
# in 5 z planes with the identity in z must give the same answer per plane

NZ = 5


@pytest.fixture(scope="module")
def embed():
    d2 = Dom("2d")
    p = dict(GRIDS["2d"])
    p["size"] = (31, 33, NZ)
    d3 = Dom("stack", p)
    return d2, d3


def _stack(a):
    return np.repeat(a, NZ, axis=-1)


def _stack_h(h2, d3):
    h3 = _stack(h2)
    h3[2] = d3.I[2]
    return h3


def test_embedded_2d_deformation(embed):
    d2, d3 = embed
    a = d2.rand(70, -2, 2)
    h2 = f32(d2.I + d2.disp(71, amp=3.0, invertible=False))
    h3 = _stack_h(h2, d3)
    for bg, interp in itertools.product(IMAGE_BGS, sorted(INTERP)):
        o2, o3 = d2.new_im(), d3.new_im()
        ca.ApplyH(o2, d2.im(a), d2.fld(h2), BG[bg], INTERP[interp][0])
        ca.ApplyH(o3, d3.im(_stack(a)), d3.fld(h3), BG[bg], INTERP[interp][0])
        same(to_np(o3), _stack(to_np(o2)), "image ApplyH %s %s" % (bg, interp))
    F2 = d2.rand_field(72, -3, 3)
    for bg in FIELD_BGS:
        o2, o3 = d2.new_fld(), d3.new_fld()
        ca.ApplyH(o2, d2.fld(F2), d2.fld(h2), BG[bg])
        ca.ApplyH(o3, d3.fld(_stack(F2)), d3.fld(h3), BG[bg])
        # the identity fallbacks use the z coordinate, which differs
        comps = 2 if bg in ("ID", "PARTIAL_ID") else 3
        same(inp(o3)[:comps], _stack(inp(o2))[:comps], "field ApplyH " + bg)
    g2 = f32(d2.I + d2.disp(73, amp=2.0))
    g3 = _stack_h(g2, d3)
    for bg in HFIELD_BGS:
        o2, o3 = d2.new_fld(), d3.new_fld()
        ca.ComposeHH(o2, d2.fld(g2), d2.fld(h2), BG[bg])
        ca.ComposeHH(o3, d3.fld(g3), d3.fld(h3), BG[bg])
        same(inp(o3)[:2], _stack(inp(o2))[:2], "ComposeHH " + bg)
        close(inp(o3)[2], d3.I[2], "ComposeHH z " + bg, rtol=1e-6)
    for normalize in (False, True):
        o2, o3 = d2.new_im(), d3.new_im()
        ca.Splat(o2, d2.fld(h2), d2.im(a), normalize)
        ca.Splat(o3, d3.fld(h3), d3.im(_stack(a)), normalize)
        # the CPU splat sums per-thread slabs cut along the last axis, so the
        # 2-D and 3-D grids add the same terms in a different order: equal to
        # float32 rounding, not bit for bit
        close(to_np(o3), _stack(to_np(o2)), "Splat normalize=%s" % normalize, rtol=1e-6)


def test_embedded_2d_differences(embed):
    d2, d3 = embed
    a = d2.rand(74, -2, 2)
    for diff, bc in itertools.product(DIFF, ("CLAMP", "APPROX")):
        o2, o3 = d2.new_fld(), d3.new_fld()
        ca.Gradient(o2, d2.im(a), DIFF[diff], BC[bc])
        ca.Gradient(o3, d3.im(_stack(a)), DIFF[diff], BC[bc])
        same(inp(o3), _stack(inp(o2)), "Gradient %s %s" % (diff, bc))
    F = d2.rand_field(75)
    F[2] = 0
    o2, o3 = d2.new_im(), d3.new_im()
    ca.Divergence(o2, d2.fld(F), ca.DIFF_CENTRAL, ca.BC_CLAMP)
    ca.Divergence(o3, d3.fld(_stack(F)), ca.DIFF_CENTRAL, ca.BC_CLAMP)
    same(to_np(o3), _stack(to_np(o2)), "Divergence")
    h2 = f32(d2.I + d2.disp(76, amp=2.0))
    h3 = _stack_h(h2, d3)
    for diff, (fn, zscale) in itertools.product(DIFF, ((ca.JacDetH, 1.0 / d3.spv[2]), (ca.JacDetHVoxel, 1.0))):
        o2, o3 = d2.new_im(), d3.new_im()
        fn(o2, d2.fld(h2), DIFF[diff], ca.BC_APPROX)
        fn(o3, d3.fld(h3), DIFF[diff], ca.BC_APPROX)
        # d h_z / d z = 1 voxel (1 / sz per unit of spacing, JacDetH) except
        # where a one-sided scheme has no neighbour (forward at the last
        # plane, backward at the first: 0, as BC_CLAMP)
        planes = {"FORWARD": slice(0, -1), "BACKWARD": slice(1, None), "CENTRAL": slice(None)}[diff]
        close(to_np(o3)[:, :, planes], zscale * _stack(to_np(o2))[:, :, planes],
              "%s %s" % (fn.__name__, diff), rtol=1e-6)
        if diff != "CENTRAL":
            edge = -1 if diff == "FORWARD" else 0
            assert not to_np(o3)[:, :, edge].any()


# ---------------------------------------------------------------------------
# Jacobians and their determinants

def _affine(dom):
    if dom.flat:
        A = np.array([[1.2, 0.35, 0.0], [-0.2, 0.85, 0.0], [0.0, 0.0, 1.0]])
        b = np.array([1.5, -2.0, 0.0])
    else:
        A = np.array([[1.2, 0.3, -0.1], [0.05, 0.9, 0.2], [-0.3, 0.1, 1.1]])
        b = np.array([2.0, -1.0, 0.5])
    h = np.einsum("ij,j...->i...", A, dom.I) + b.reshape(3, 1, 1, 1)
    if dom.flat:
        h[2] = 0.0
    return A, f32(h)


def _voxel_volume(dom):
    """What the legacy JacDetH divides by: sx sy sz, or sx sy in 2-D."""
    return float(np.prod(dom.spv[:2] if dom.flat else dom.spv))


def test_jacdeth_affine(dom):
    """JacDetH of an affine H-field (voxel coordinates) is the affine
    determinant (2x2 in 2-D) over the voxel volume, JacDetHVoxel the
    determinant: everywhere with central BC_APPROX (one-sided edges are exact
    for an affine map), away from the edges for every other scheme."""
    A, h = _affine(dom)
    det = np.linalg.det(A[:2, :2] if dom.flat else A)
    vol = _voxel_volume(dom)
    tol = 2e-5 * np.abs(h).max()
    for (diff, bc), (fn, want) in itertools.product(itertools.product(DIFF, BC),
                                                     ((ca.JacDetH, det / vol), (ca.JacDetHVoxel, det))):
        out = dom.new_im()
        fn(out, dom.fld(h), DIFF[diff], BC[bc])
        got = to_np(out)
        if diff == "CENTRAL" and bc == "APPROX":
            sl = (slice(None),) * 3
        else:
            edge = {"FORWARD": slice(0, -1), "BACKWARD": slice(1, None), "CENTRAL": slice(1, -1)}[diff]
            sl = tuple(edge if n > 1 else slice(None) for n in dom.shape)
        close(got[sl], np.full(got[sl].shape, want), "%s affine %s %s" % (fn.__name__, diff, bc),
              atol=tol * want / det)
        if bc == "CLAMP" and diff == "CENTRAL":
            assert np.abs(got - want).max() > 0.1 * want, "clamped edges are half differences"
    for fn, want in ((ca.JacDetH, det / vol), (ca.JacDetHVoxel, det)):
        out = dom.new_im()
        fn(out, dom.fld(h))
        close(to_np(out), np.full(dom.shape, want), "%s affine default (BC_APPROX)" % fn.__name__,
              atol=tol * want / det)


def test_jacdeth_identity_anisotropic(dom):
    """The identity: 1 / voxelVol with JacDetH (the legacy units), exactly 1
    with JacDetHVoxel (voxel units), on any spacing."""
    h = identity_field(dom)
    vol = _voxel_volume(dom)
    for diff, bc in itertools.product(DIFF, BC):
        out, vox = dom.new_im(), dom.new_im()
        ca.JacDetH(out, h, DIFF[diff], BC[bc])
        ca.JacDetHVoxel(vox, h, DIFF[diff], BC[bc])
        got, gv = to_np(out), to_np(vox)
        m = dom.interior(1)
        if bc == "APPROX" and diff == "CENTRAL":
            m = (slice(None),) * 3
        close(got[m], np.full(got[m].shape, 1.0 / vol), "JacDetH(Id) %s %s" % (diff, bc), rtol=1e-6)
        same(gv[m], np.ones(gv[m].shape, np.float32), "JacDetHVoxel(Id) %s %s" % (diff, bc))


@pytest.mark.parametrize("diff", sorted(DIFF))
@pytest.mark.parametrize("bc", sorted(BC))
def test_jacobian_and_jacdeth_vs_reference(dom, diff, bc):
    h = dom.hfield(80, amp=2.0)
    X, Y, Z = dom.new_fld(), dom.new_fld(), dom.new_fld()
    ca.Jacobian(X, Y, Z, dom.fld(h), DIFF[diff], BC[bc])
    J = ref.jacobian(h, diff, bc, dom.spv)  # physical spacing
    for r, R in enumerate((X, Y, Z)):
        close(inp(R), J[r], "Jacobian row %d %s %s" % (r, diff, bc))
    det, vox = dom.new_im(), dom.new_im()
    ca.JacDetH(det, dom.fld(h), DIFF[diff], BC[bc])
    ca.JacDetHVoxel(vox, dom.fld(h), DIFF[diff], BC[bc])
    Jv = ref.jacobian(h, diff, bc)  # voxel units
    want = J[0, 0] * J[1, 1] - J[0, 1] * J[1, 0] if dom.flat else ref.det3(J)
    close(to_np(det), want, "JacDetH %s %s" % (diff, bc))
    want = Jv[0, 0] * Jv[1, 1] - Jv[0, 1] * Jv[1, 0] if dom.flat else ref.det3(Jv)
    close(to_np(vox), want, "JacDetHVoxel %s %s" % (diff, bc))
    if diff == "CENTRAL" and bc == "APPROX":
        X2, Y2, Z2 = dom.new_fld(), dom.new_fld(), dom.new_fld()
        ca.Jacobian(X2, Y2, Z2, dom.fld(h))
        same(np.stack([inp(X2), inp(Y2), inp(Z2)]), np.stack([inp(X), inp(Y), inp(Z)]), "Jacobian defaults")
        d2 = dom.new_im()
        ca.JacDetH(d2, dom.fld(h))
        same(to_np(d2), to_np(det), "JacDetH defaults")


def test_jacdet_from_gradient_fields(dom):
    rows = [dom.rand_field(81 + r) for r in range(3)]
    J = np.array(rows)  # J[r, c] = rows[r][c]
    objs = [dom.fld(R) for R in rows]
    out = dom.new_im()
    ca.JacDetH(out, *objs)
    want = J[0, 0] * J[1, 1] - J[0, 1] * J[1, 0] if dom.flat else ref.det3(J)
    close(to_np(out), want, "JacDetH(X, Y, Z)")
    ca.JacDetHVoxel(out, *objs)
    close(to_np(out), _voxel_volume(dom) * want, "JacDetHVoxel(X, Y, Z)")
    eye = np.eye(3).reshape(3, 3, 1, 1, 1)
    ca.JacDetV(out, *objs)
    close(to_np(out), ref.det3(eye + J), "JacDetV = det(I + J)")
    ca.JacDetVInv(out, *objs)
    close(to_np(out), ref.det3(eye - J), "JacDetVInv = det(I - J)")
    # the legacy negated only the diagonal: make sure that is not what we get
    M = eye + J
    for r, c in itertools.product(range(3), range(3)):
        if r != c:
            M[r, c] = J[r, c]
        else:
            M[r, c] = 1 - J[r, c]
    assert np.abs(to_np(out) - ref.det3(M)).max() > 1e-2


# ---------------------------------------------------------------------------
# inverses

def _residual(g, ginv, dom, margin=2):
    """max over the interior of |g o ginv - Id| (voxels)."""
    r = np.abs(ref.interp_field(g, ginv, "PARTIAL_ID") - dom.I).max(axis=0)
    return float(r[dom.interior(margin)].max())


def test_fixed_point_inverse(dom):
    """The residual |g o ginv - Id| falls geometrically with numIter (by at
    least 0.6 per doubling while above float precision), below 1e-4 voxels in
    the interior at 20 iterations; numIter = 0 is InverseZerothOrder."""
    g = dom.hfield(90, amp=3.0, window=True)
    gi = dom.new_fld()
    res = {}
    for n in (0, 1, 2, 4, 8, 16, 20):
        ca.FixedPointInverse(gi, dom.fld(g), n)
        res[n] = _residual(g, inp(gi), dom)
        if n == 0:
            z = dom.new_fld()
            ca.InverseZerothOrder(z, dom.fld(g))
            same(inp(gi), inp(z), "FixedPointInverse(0)")
    assert res[0] > 0.01, res
    for a, b in ((0, 1), (1, 2), (2, 4), (4, 8), (8, 16)):
        if res[a] > 1e-4:
            assert res[b] < 0.6 * res[a], res
    assert res[20] < 1e-4, res
    d1, d2 = dom.new_fld(), dom.new_fld()
    ca.FixedPointInverse(d1, dom.fld(g))
    ca.FixedPointInverse(d2, dom.fld(g), 2)
    same(inp(d1), inp(d2), "FixedPointInverse default numIter = 2")


def _numpy_update_inverse(gi_t, w, dom, n):
    x = gi_t.copy()
    for _ in range(n):
        s = f32(ref.interp_field(w, x, "PARTIAL_ZERO"))
        x = f32(ref.interp_field(gi_t, f32(dom.I - s), "PARTIAL_ID"))
    return x


def test_update_inverse_from_identity(dom):
    """g_t = Id: ginv_{t+1} is the inverse of Id + w to float precision
    after enough iterations (w in voxel units)."""
    w = f32(dom.disp(91, amp=1.0, window=True))
    gi = dom.new_fld()
    sc = dom.new_fld()
    g1 = dom.I + w
    res = []
    for n in (1, 2, 3, 6, 12):
        ca.UpdateInverse(gi, sc, identity_field(dom), dom.fld(w), n)
        res.append(_residual(g1, inp(gi), dom))
        r2 = np.abs(ref.interp_field(inp(gi), g1, "PARTIAL_ID") - dom.I).max(axis=0)[dom.interior(3)].max()
    assert all(b < a for a, b in zip(res[:3], res[1:4])), res
    assert res[-1] < 1e-4, res
    assert r2 < 0.05, r2  # ginv o g = Id up to interpolation error
    d1, d2 = dom.new_fld(), dom.new_fld()
    ca.UpdateInverse(d1, sc, identity_field(dom), dom.fld(w))
    ca.UpdateInverse(d2, sc, identity_field(dom), dom.fld(w), 3)
    same(inp(d1), inp(d2), "UpdateInverse default numIter = 3")


def test_update_inverse(dom):
    """General g_t (inverse from FixedPointInverse): the iteration of
    FOpers.h against NumPy, and what it inverts: with w a displacement on
    the domain of g_t (voxel units), ginv_{t+1} inverts g_t + w (the fixed
    point is exact: residual at the interpolation floor, far below that of
    ginv_t); (Id + w) o g_t = g_t + w o g_t only to first order in w."""
    g = dom.hfield(92, amp=3.0, window=True)
    gi_t = dom.new_fld()
    ca.FixedPointInverse(gi_t, dom.fld(g), 30)
    assert _residual(g, inp(gi_t), dom) < 1e-4
    w = f32(dom.disp(93, amp=0.3, window=True))
    out, sc = dom.new_fld(), dom.new_fld()
    for n in (1, 3, 5):
        ca.UpdateInverse(out, sc, gi_t, dom.fld(w), n)
        close(inp(out), _numpy_update_inverse(inp(gi_t), w, dom, n), "UpdateInverse numIter=%d" % n)
    g1 = g + w
    r_new = _residual(g1, inp(out), dom, 3)
    r_old = _residual(g1, inp(gi_t), dom, 3)
    assert r_new < 0.1 * r_old and r_new < 0.03, (r_new, r_old)
    g1e = g + ref.interp_field(w, g, "PARTIAL_ZERO")  # (Id + w) o g_t
    assert _residual(g1e, inp(out), dom, 3) < 0.5 * _residual(g1e, inp(gi_t), dom, 3)
    # w is in voxel units: the spacing does not enter
    other = grid(*dom.shape, sp=(1.0, 3.0, 0.5), org=(0, 0, 0))
    o2, s2 = ca.Field3D(other, ca.MEM_HOST), ca.Field3D(other, ca.MEM_HOST)
    ca.UpdateInverse(o2, s2, field_from(list(inp(gi_t)), other), field_from(list(w), other), 5)
    same(inp(o2), inp(out), "UpdateInverse independent of spacing")


# ---------------------------------------------------------------------------
# splatting

def test_splat_vs_reference(dom):
    j = dom.rand(100, -2, 2)
    h = dom.hfield(101, amp=3.0, invertible=False)
    out = dom.new_im()
    ca.Splat(out, dom.fld(h), dom.im(j))
    sv, sw = ref.splat(j, h, dom.shape, weights=True)
    close(to_np(out), sv, "Splat")
    nrm = dom.new_im()
    ca.Splat(nrm, dom.fld(h), dom.im(j), True)
    close(to_np(nrm), ref.splat_normalized(j, h, dom.shape), "Splat normalize")
    assert (sw == 0).any(), "test deformation leaves no voxel without weight"
    assert not to_np(nrm)[sw == 0].any(), "normalize: 0 where no weight arrived"
    # the normalised splat of a constant is the constant wherever weight arrived
    c = dom.new_im()
    ca.Splat(c, dom.fld(h), dom.im(np.full(dom.shape, 2.5)), True)
    close(to_np(c)[sw > 1e-3], np.full(int((sw > 1e-3).sum()), 2.5), "weighted mean of a constant", rtol=1e-6)
    d1 = dom.new_im()
    ca.Splat(d1, dom.fld(h), dom.im(j))
    same(to_np(d1), to_np(out), "Splat default normalize=False")


def test_splat_mass_conservation(dom):
    """Points inside the grid: the splat keeps the total; points leaving it:
    exactly the mass landing inside is kept."""
    j = dom.rand(102, 0, 2)
    h = dom.hfield(103, amp=2.0, window=True)
    out = dom.new_im()
    ca.Splat(out, dom.fld(h), dom.im(j))
    assert abs(ca.Sum(out) - j.sum()) <= 1e-6 * j.sum()
    h2 = dom.hfield(104, amp=3.0, invertible=False)
    ca.Splat(out, dom.fld(h2), dom.im(j))
    kept = ref.splat(j, h2, dom.shape).sum()
    assert kept < j.sum() - 1
    assert abs(ca.Sum(out) - kept) <= 1e-6 * j.sum()


@pytest.mark.parametrize("big", [1e6, 1e8, -1e8])
def test_splat_huge_values(dom, big):
    """A huge value next to ordinary ones loses nothing beyond float32
    rounding of the sums (the legacy GPU overflowed in fixed point)."""
    j = dom.rand(105, 0, 1)
    r = dom.rng(106)
    flat = j.reshape(-1)
    idx = r.choice(flat.size, 5, replace=False)
    flat[idx] = big
    h = dom.hfield(107, amp=2.0)
    out = dom.new_im()
    ca.Splat(out, dom.fld(h), dom.im(j))
    want = ref.splat(j, h, dom.shape)
    mag = ref.splat(np.abs(j), h, dom.shape)
    err = np.abs(to_np(out) - want)
    assert (err <= 32 * 2.0 ** -24 * mag + 1e-30).all(), (err.max(), np.argmax(err))
    assert abs(float(np.sum(to_np(out), dtype=np.float64)) - want.sum()) <= 1e-6 * np.abs(j).sum()
    nrm = dom.new_im()
    ca.Splat(nrm, dom.fld(h), dom.im(j), True)
    sv, sw = ref.splat(j, h, dom.shape, weights=True)
    ok = sw > 1e-3
    close(to_np(nrm)[ok], (sv / np.where(sw > 0, sw, 1))[ok], "normalised huge splat", rtol=1e-5,
          atol=32 * 2.0 ** -24 * (mag / np.where(sw > 0, sw, 1))[ok].max())


def test_splat_field_forms(dom):
    F = dom.rand_field(108, -2, 2)
    h = dom.hfield(109, amp=3.0, invertible=False)
    for normalize in (False, True):
        out = dom.new_fld()
        ca.SplatV(out, dom.fld(h), dom.fld(F), normalize)
        for c in range(3):
            want = ref.splat_normalized(F[c], h, dom.shape) if normalize else ref.splat(F[c], h, dom.shape)
            close(inp(out)[c], want, "SplatV normalize=%s [%d]" % (normalize, c))
        # SplatH: the displacement F - x is splatted and x added back
        Hf = f32(dom.I + F)
        out = dom.new_fld()
        ca.SplatH(out, dom.fld(h), dom.fld(Hf), normalize)
        for c in range(3):
            dsp = f32(Hf[c] - dom.I[c])
            want = (ref.splat_normalized(dsp, h, dom.shape) if normalize else ref.splat(dsp, h, dom.shape))
            close(inp(out)[c], want + dom.I[c], "SplatH normalize=%s [%d]" % (normalize, c))
    out = dom.new_fld()
    ca.SplatField(out, dom.fld(F), dom.fld(h))
    for c in range(3):
        im = dom.new_im()
        ca.Splat(im, dom.fld(h), dom.im(F[c]))
        same(inp(out)[c], to_np(im), "SplatField = Splat per component [%d]" % c)


_SPLAT_SCRIPT = r"""
import hashlib, sys
import numpy as np
import PyCA.Core as ca
g = ca.GridInfo(ca.Vec3Di(41, 37, 29), ca.Vec3Df(0.7, 1.3, 2.1), ca.Vec3Df(1, 2, 3))
rng = np.random.default_rng(5)
shape = (41, 37, 29)
I = np.array(np.meshgrid(*[np.arange(s, dtype=np.float64) for s in shape], indexing="ij"))
def fld(a):
    f = ca.Field3D(g, ca.MEM_HOST)
    for v, x in zip(f.asnp(), a):
        v[...] = x
    return f
def im(a):
    o = ca.Image3D(g, ca.MEM_HOST)
    o.asnp()[...] = a
    return o
u = sum(1.5 * np.sin(2 * np.pi * I[e] / shape[e] + e) for e in range(3))
local = fld(I + np.stack([u, -u, 0.5 * u]))
spread = fld(rng.uniform(-2, 45, (3,) + shape))     # points all over the grid
j = im(rng.uniform(-1, 1, shape) * 10.0 ** rng.integers(-3, 4, shape))
X = fld(rng.uniform(-1, 1, (3,) + shape))
def digest():
    h = hashlib.sha256()
    for H in (local, spread):
        for normalize in (False, True):
            o = ca.Image3D(g, ca.MEM_HOST)
            ca.Splat(o, H, j, normalize)
            h.update(o.asnp().tobytes(order="F"))
        o = ca.Field3D(g, ca.MEM_HOST)
        ca.SplatV(o, H, X, True)
        for c in o.asnp():
            h.update(c.tobytes(order="F"))
    o = ca.Field3D(g, ca.MEM_HOST)
    ca.Ad(o, local, X)
    for c in o.asnp():
        h.update(c.tobytes(order="F"))
    return h.hexdigest()
a, b = digest(), digest()
print(a, b)
"""


def _run_splat_script(threads):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(threads)
    r = subprocess.run([sys.executable, "-c", _SPLAT_SCRIPT], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    a, b = r.stdout.split()
    return a, b


_SPLAT_PLANES_SCRIPT = r"""
import numpy as np
import PyCA.Core as ca
shape = (40, 36, 44)
g = ca.GridInfo(ca.Vec3Di(*shape), ca.Vec3Df(1, 1, 1))
rng = np.random.default_rng(8)
I = np.array(np.meshgrid(*[np.arange(s, dtype=np.float32) for s in shape], indexing="ij"))
P = I + rng.uniform(-1.5, 1.5, I.shape).astype(np.float32)
# the first half of the source rows lands on planes 2-3, the second on 37-38:
# with 2 or 3 blocks, the middle planes are reached by none
P[2] = np.where(I[2] < shape[2] // 2, 2.3, 37.6).astype(np.float32)
a = rng.standard_normal(shape).astype(np.float32)
X = rng.standard_normal((3,) + shape).astype(np.float32)
def fld(v, fill=None):
    f = ca.Field3D(g, ca.MEM_HOST)
    for c, x in zip(f.asnp(), v):
        c[...] = x if fill is None else fill
    return f
h, m = fld(P), fld(X)
ref = np.zeros((4,) + shape)
p = P.reshape(3, -1).astype(np.float64)
f0 = np.floor(p)
t = p - f0
vals = np.concatenate([a.reshape(1, -1), X.reshape(3, -1)]).astype(np.float64)
for c in range(8):
    off = np.array([c & 1, (c >> 1) & 1, c >> 2])[:, None]
    idx = (f0 + off).astype(np.int64)
    w = np.prod(np.where(off == 1, t, 1 - t), axis=0)
    ok = np.all((idx >= 0) & (idx < np.array(shape)[:, None]), axis=0)
    for k in range(4):
        np.add.at(ref[k], tuple(idx[:, ok]), w[ok] * vals[k][ok])
out = []
for fill in (np.nan, 0.0):
    o = ca.Image3D(g, ca.MEM_HOST)
    o.asnp()[...] = fill
    src = ca.Image3D(g, ca.MEM_HOST)
    src.asnp()[...] = a
    ca.Splat(o, h, src, False)
    of = fld(X, fill)
    ca.SplatField(of, m, h)
    out.append(np.concatenate([np.array(o.asnp())[None]] + [np.array(c)[None] for c in of.asnp()]))
nan = int(np.isnan(out[0]).sum())
same = out[0].tobytes() == out[1].tobytes()
err = float(np.abs(out[0] - ref).max() / np.abs(ref).max())
print(nan, same, err, float(np.abs(ref[:, :, :, 10:30]).max()))
"""


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_splat_overwrites_every_plane(threads):
    """Splat and SplatField overwrite the whole target (the first block
    accumulates into the target itself, the others' slabs are added, the
    planes no block reaches are zeroed): a NaN-filled target gives the same
    bits as a zeroed one, and both the float64 np.add.at reference; the
    points fall on two bands of planes so that with 2 and 3 threads the
    middle planes are reached by no block."""
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(threads)
    r = subprocess.run([sys.executable, "-c", _SPLAT_PLANES_SCRIPT], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    nan, same, err, middle = r.stdout.split()
    assert nan == "0" and same == "True", r.stdout
    assert float(err) < 1e-5 and float(middle) == 0.0, r.stdout


def test_splat_deterministic_per_thread_count():
    """For a fixed OMP_NUM_THREADS (1, 2, 3) the CPU splat is bit-identical
    run to run (within a process and across processes), for local and for
    spread-out points (the single-block fallback), normalised or not."""
    for threads in (1, 2, 3):
        a1, b1 = _run_splat_script(threads)
        a2, b2 = _run_splat_script(threads)
        assert a1 == b1 == a2 == b2, (threads, a1, b1, a2, b2)


# ---------------------------------------------------------------------------
# finite differences

@pytest.mark.parametrize("bc", sorted(BC))
@pytest.mark.parametrize("diff", sorted(DIFF))
def test_finite_diff(dom, diff, bc):
    a = dom.rand(110, -2, 2)
    prior = dom.rand(111)
    for dim in DIMS:
        want = ref.fdiff(a, dim, diff, bc, dom.spv[dim])
        close(pn.FiniteDiff(a, dim, diff, bc, dom.spv[dim]), want, "PyCA.Numpy", rtol=1e-12)
        what = "FiniteDiff dim %d %s %s" % (dim, diff, bc)
        for accum, op in itertools.product((False, True), (ca.OP_VAL, ca.OP_SQR)):
            out = dom.im(prior)
            ca.FiniteDiff(out, dom.im(a), dim, DIFF[diff], BC[bc], accum, op)
            w = want ** 2 if op == ca.OP_SQR else want
            close(to_np(out), prior + w if accum else w, "%s accum=%s op=%d" % (what, accum, op))
        if dom.shape[dim] == 1:
            out = dom.im(prior)
            ca.FiniteDiff(out, dom.im(a), dim, DIFF[diff], BC[bc])
            assert not to_np(out).any(), "flat axis: 0"
    o1, o2 = dom.new_im(), dom.new_im()
    ca.FiniteDiff(o1, dom.im(a), ca.DIM_Y)
    ca.FiniteDiff(o2, dom.im(a), ca.DIM_Y, ca.DIFF_CENTRAL, ca.BC_CLAMP, False, ca.OP_VAL)
    same(to_np(o1), to_np(o2), "FiniteDiff defaults")


@pytest.mark.parametrize("bc", sorted(BC))
@pytest.mark.parametrize("diff", sorted(DIFF))
def test_gradient_family(dom, diff, bc):
    a = dom.rand(112, -2, 2)
    F = dom.rand_field(113)
    want = ref.gradient(a, diff, bc, dom.spv)
    for name, call in (
            ("Gradient", lambda o: ca.Gradient(o, dom.im(a), DIFF[diff], BC[bc])),
            ("Gradient2", lambda o: ca.Gradient2(o, dom.im(a), DIFF[diff], BC[bc]))):
        out = dom.new_fld()
        call(out)
        close(inp(out), want, "%s %s %s" % (name, diff, bc))
    # the raw-array form: the gradient of another field's x component
    src = dom.fld(np.stack([a, F[1], F[2]]))
    out = dom.new_fld()
    ca.Gradient(out, src.x, DIFF[diff], BC[bc])
    close(inp(out), want, "Gradient(f, g.x) %s %s" % (diff, bc))
    ca.Gradient(out, src.z, DIFF[diff], BC[bc])
    close(inp(out), ref.gradient(F[2], diff, bc, dom.spv), "Gradient(f, g.z)")
    mag = dom.new_im()
    ca.GradientMag(mag, dom.im(a), DIFF[diff], BC[bc])
    close(to_np(mag), np.sqrt((want ** 2).sum(axis=0)), "GradientMag %s %s" % (diff, bc))
    div = dom.new_im()
    ca.Divergence(div, dom.fld(F), DIFF[diff], BC[bc])
    close(to_np(div), sum(ref.fdiff(F[d], d, diff, bc, dom.spv[d]) for d in range(3)),
          "Divergence %s %s" % (diff, bc))


def test_gradient_defaults_and_forward_forms(dom):
    a = dom.rand(114, -2, 2)
    F = dom.rand_field(115)
    o1, o2 = dom.new_fld(), dom.new_fld()
    ca.Gradient(o1, dom.im(a))
    ca.Gradient(o2, dom.im(a), ca.DIFF_CENTRAL, ca.BC_CLAMP)
    same(inp(o1), inp(o2), "Gradient defaults")
    m1, m2 = dom.new_im(), dom.new_im()
    ca.GradientMag(m1, dom.im(a))
    ca.GradientMag(m2, dom.im(a), ca.DIFF_CENTRAL, ca.BC_CLAMP)
    same(to_np(m1), to_np(m2), "GradientMag defaults")
    for bc in BC:
        out = dom.new_fld()
        ca.GradFor(out, dom.im(a), BC[bc])
        close(inp(out), ref.gradient(a, "FORWARD", bc, dom.spv), "GradFor " + bc)
        d = dom.new_im()
        ca.DivBack(d, dom.fld(F), BC[bc])
        close(to_np(d), sum(ref.fdiff(F[k], k, "BACKWARD", bc, dom.spv[k]) for k in range(3)), "DivBack " + bc)
    out, d = dom.new_fld(), dom.new_im()
    ca.GradFor(out, dom.im(a))
    close(inp(out), ref.gradient(a, "FORWARD", "CLAMP", dom.spv), "GradFor default")
    ca.DivBack(d, dom.fld(F))
    close(to_np(d), sum(ref.fdiff(F[k], k, "BACKWARD", "CLAMP", dom.spv[k]) for k in range(3)), "DivBack default")
    ca.GradForMag(d, dom.im(a))
    close(to_np(d), np.sqrt((ref.gradient(a, "FORWARD", "CLAMP", dom.spv) ** 2).sum(axis=0)), "GradForMag")


def test_gradient_vs_numpy_gradient(dom):
    a = dom.rand(116, -2, 2)
    out = dom.new_fld()
    ca.Gradient(out, dom.im(a))
    got = inp(out)
    for d in dom.axes:
        w = np.gradient(a, dom.spv[d], axis=d)
        inner = tuple(slice(1, -1) if e == d else slice(None) for e in range(3))
        close(got[d][inner], w[inner], "Gradient vs numpy.gradient axis %d" % d)
    ca.Gradient(out, dom.im(a), ca.DIFF_CENTRAL, ca.BC_APPROX)
    for d in dom.axes:
        close(inp(out)[d], np.gradient(a, dom.spv[d], axis=d, edge_order=1), "BC_APPROX = numpy.gradient")


@pytest.mark.parametrize("bc", ["APPROX", "CLAMP"])
@pytest.mark.parametrize("diff", sorted(DIFF))
def test_gradient_mask(dom, diff, bc):
    """GradientMask's rule (IFOpers.h, PyCA.Numpy.GradMask): neighbours
    outside the mask count as the centre value, 0 outside the mask; values
    outside the mask never matter; an all-ones mask is the plain gradient."""
    a = dom.rand(117, -2, 2)
    r = dom.rng(118)
    mask = (r.uniform(size=dom.shape) > 0.3).astype(np.float32) * r.choice([1.0, -2.0], dom.shape)
    out = dom.new_fld()
    ca.GradientMask(out, dom.im(a), dom.im(mask), DIFF[diff], BC[bc])
    g = pn.GradMask(a, mask, diff, bc, dom.spv)  # components last (legacy)
    if dom.flat:  # an (X, Y, 1) array: the x and y derivatives only (the legacy's Grad)
        g = np.concatenate([g, np.zeros_like(g[..., :1])], axis=-1)[:, :, None, :]
    want = np.moveaxis(g, -1, 0)
    close(inp(out), want, "GradientMask %s %s" % (diff, bc))
    assert not inp(out)[:, mask == 0].any()
    b = np.where(mask != 0, a, r.uniform(-100, 100, dom.shape))
    o2 = dom.new_fld()
    ca.GradientMask(o2, dom.im(b), dom.im(mask), DIFF[diff], BC[bc])
    same(inp(o2), inp(out), "values outside the mask do not matter")
    ca.GradientMask(o2, dom.im(a), dom.im(np.ones(dom.shape)), DIFF[diff], BC[bc])
    plain = dom.new_fld()
    ca.Gradient(plain, dom.im(a), DIFF[diff], BC[bc])
    close(inp(o2), inp(plain), "all-ones mask", rtol=1e-6)
    # hand check of the rule at one voxel (central, neighbours x-1 outside, x+1 inside)
    if diff == "CENTRAL" and not dom.flat:
        m = np.ones(dom.shape, np.float32)
        m[4, 5, 6] = 0
        ca.GradientMask(out, dom.im(a), dom.im(m), DIFF[diff], BC[bc])
        got = inp(out)[0][5, 5, 6]
        if bc == "CLAMP":
            want = (a[6, 5, 6] - a[5, 5, 6]) / (2 * dom.spv[0])
        else:
            want = (a[6, 5, 6] - a[5, 5, 6]) / dom.spv[0]
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6)


def test_gradient_mask_defaults(dom):
    a, m = dom.rand(119), (dom.rand(120) > 0).astype(np.float32)
    o1, o2 = dom.new_fld(), dom.new_fld()
    ca.GradientMask(o1, dom.im(a), dom.im(m))
    ca.GradientMask(o2, dom.im(a), dom.im(m), ca.DIFF_CENTRAL, ca.BC_CLAMP)
    same(inp(o1), inp(o2), "GradientMask defaults")


def test_upwind_diff(dom):
    """Backward difference where speed > 0, forward elsewhere (speed <= 0),
    BC_CLAMP, physical spacing."""
    a = dom.rand(121, -2, 2)
    speed = dom.rand(122)
    speed[dom.rng(123).uniform(size=dom.shape) < 0.1] = 0.0
    for dim in DIMS:
        out = dom.new_im()
        ca.UpwindDiff(out, dom.im(a), dom.im(speed), dim)
        want = np.where(speed > 0, ref.fdiff(a, dim, "BACKWARD", "CLAMP", dom.spv[dim]),
                        ref.fdiff(a, dim, "FORWARD", "CLAMP", dom.spv[dim]))
        close(to_np(out), want, "UpwindDiff dim %d" % dim)


def _upwind_grad_mag_ref(a, speed, dom):
    """speed * |grad a| by Osher-Sethian upwinding for a_t = speed |grad a|
    (the legacy convention, which the golden cases confirm): with D- / D+
    the backward / forward differences (at an edge the missing one is
    replaced by the other; 0 along a flat axis),
      speed >= 0: sqrt(sum min(D-, 0)^2 + max(D+, 0)^2)
      speed <  0: sqrt(sum max(D-, 0)^2 + min(D+, 0)^2)."""
    s = 0.0
    for d in range(3):
        n = a.shape[d]
        if n == 1:
            continue
        fw = ref.fdiff(a, d, "FORWARD", "CLAMP", dom.spv[d])
        bw = ref.fdiff(a, d, "BACKWARD", "CLAMP", dom.spv[d])
        fw, bw = np.moveaxis(fw, d, 0).copy(), np.moveaxis(bw, d, 0).copy()
        fw[-1], bw[0] = bw[-1], fw[0]
        fw, bw = np.moveaxis(fw, 0, d), np.moveaxis(bw, 0, d)
        pos = np.minimum(bw, 0) ** 2 + np.maximum(fw, 0) ** 2
        neg = np.maximum(bw, 0) ** 2 + np.minimum(fw, 0) ** 2
        s = s + np.where(speed < 0, neg, pos)
    return np.sqrt(s) * speed


def test_upwind_grad_mag(dom):
    a = dom.rand(124, -2, 2)
    speed = dom.rand(125, -2, 2)
    speed[dom.rng(126).uniform(size=dom.shape) < 0.1] = 0.0
    out = dom.new_im()
    ca.UpwindGradMag(out, dom.im(a), dom.im(speed))
    close(to_np(out), _upwind_grad_mag_ref(a, speed, dom), "UpwindGradMag")
    # a monotone ramp along x: the upwind side is the forward difference for speed > 0
    ramp = f32(dom.I[0] ** 2 * 0.1)
    ca.UpwindGradMag(out, dom.im(ramp), dom.im(np.ones(dom.shape)))
    fw = ref.fdiff(ramp, 0, "FORWARD", "CLAMP", dom.spv[0])
    close(to_np(out)[:-1], fw[:-1], "UpwindGradMag ramp, speed 1")
    ca.UpwindGradMag(out, dom.im(ramp), dom.im(-np.ones(dom.shape)))
    bw = ref.fdiff(ramp, 0, "BACKWARD", "CLAMP", dom.spv[0])
    close(to_np(out)[1:], -bw[1:], "UpwindGradMag ramp, speed -1")


# ---------------------------------------------------------------------------
# Lie-algebra operators (central differences, BC_CLAMP, voxel units)

def _D(F):
    return ref.jacobian(F, "CENTRAL", "CLAMP")  # D[r, c] = d F_r / d x_c


LIE = {
    "JacobianXY": lambda X, Y: np.einsum("ij...,j...->i...", _D(X), Y),
    "JacobianXtY": lambda X, Y: np.einsum("ji...,j...->i...", _D(X), Y),
    "AdInf": lambda X, Y: (np.einsum("ij...,j...->i...", _D(X), Y) - np.einsum("ij...,j...->i...", _D(Y), X)),
    "DivergenceTensor": lambda X, Y: np.stack([sum(ref.fdiff(X[i] * Y[j], j) for j in range(3))
                                               for i in range(3)]),
    "CoAdInf": lambda X, m: (np.einsum("ji...,j...->i...", _D(X), m)
                             + np.stack([sum(ref.fdiff(m[i] * X[j], j) for j in range(3)) for i in range(3)])),
}


@pytest.mark.parametrize("name", sorted(LIE))
def test_lie_operators(dom, name):
    X, Y = dom.rand_field(130, -2, 2), dom.rand_field(131, -2, 2)
    out = dom.new_fld()
    getattr(ca, name)(out, dom.fld(X), dom.fld(Y))
    close(inp(out), LIE[name](X, Y), name)
    o2 = dom.new_fld()
    getattr(ca, name)(o2, dom.fld(X), dom.fld(Y), None, False)
    same(inp(o2), inp(out), name + " with st, onDev")


@pytest.mark.parametrize("bg", VFIELD_BGS)
def test_coad_ad_vs_reference(dom, bg):
    g = dom.hfield(132, amp=2.0)
    m, X = dom.rand_field(133), dom.rand_field(134)
    out = dom.new_fld()
    ca.CoAd(out, dom.fld(g), dom.fld(m), BG[bg])
    close(inp(out), ref.coad(g, m, bg), "CoAd " + bg)
    out = dom.new_fld()
    ca.Ad(out, dom.fld(g), dom.fld(X), BG[bg])
    close(inp(out), ref.ad(g, X), "Ad " + bg)


def test_coad_ad_defaults(dom):
    g, m = dom.hfield(135), dom.rand_field(136)
    for name in ("CoAd", "Ad"):
        o1, o2 = dom.new_fld(), dom.new_fld()
        getattr(ca, name)(o1, dom.fld(g), dom.fld(m))
        getattr(ca, name)(o2, dom.fld(g), dom.fld(m), BG["PARTIAL_ZERO"])
        same(inp(o1), inp(o2), name + " default bg")


# ---------------------------------------------------------------------------
# field utilities

def test_field_norms(dom):
    F, G = dom.rand_field(140, -2, 2), dom.rand_field(141, -2, 2)
    out = dom.new_im()
    ca.Magnitude(out, dom.fld(F))
    close(to_np(out), np.sqrt((F ** 2).sum(axis=0)), "Magnitude", rtol=1e-6)
    ca.SqrMagnitude(out, dom.fld(F))
    close(to_np(out), (F ** 2).sum(axis=0), "SqrMagnitude", rtol=1e-6)
    ca.ComponentDotProd(out, dom.fld(F), dom.fld(G))
    close(to_np(out), (F * G).sum(axis=0), "ComponentDotProd", rtol=1e-6)


def test_normalize_safe(dom):
    F = dom.rand_field(142, -2, 2)
    eps = 0.625
    flat = F.reshape(3, -1)
    # exact edge cases (representable lengths): |v| == eps -> 0, just above -> unit
    flat[:, 0] = (0.375, 0.5, 0.0)              # length 0.625 == eps
    flat[:, 1] = (0.0, 0.0, -0.625)             # length eps
    flat[:, 2] = (0.0, 0.0, -0.62500006)        # just above eps (float32)
    flat[:, 3] = (0.0, 0.0, 0.0)
    flat[:, 4] = (1e-3, -1e-3, 0.0)
    F = flat.reshape(F.shape)
    n = np.sqrt((F ** 2).sum(axis=0))
    want = np.where(n > eps, F / np.where(n > 0, n, 1), 0.0)
    out = dom.new_fld()
    ca.NormalizeSafe(out, dom.fld(F), eps)
    close(inp(out), want, "NormalizeSafe", rtol=1e-6)
    got = inp(out).reshape(3, -1)
    assert not got[:, :2].any() and not got[:, 3:5].any()
    close(got[:, 2], [0.0, 0.0, -1.0], "just above eps: unit", rtol=1e-6)
    fi = dom.fld(F)
    ca.NormalizeSafe_I(fi, eps)
    same(inp(fi), inp(out), "NormalizeSafe_I")


def test_reproject_to_unit_vec(dom):
    F = dom.rand_field(143, -1.5, 1.5)
    flat = F.reshape(3, -1)
    flat[:, 0] = (1.0, 0.0, 0.0)       # length 1: unchanged
    flat[:, 1] = (0.75, 0.0, 1.0)      # length 1.25: -> (0.6, 0, 0.8)
    F = flat.reshape(F.shape)
    n = np.sqrt((F ** 2).sum(axis=0))
    f = dom.fld(F)
    ca.ReprojectToUnitVec(f)
    got = inp(f)
    same(got[:, n <= 1], F[:, n <= 1], "short vectors unchanged")
    close(got, np.where(n > 1, F / n, F), "ReprojectToUnitVec", rtol=1e-6)
    close(got.reshape(3, -1)[:, 1], [0.6, 0.0, 0.8], "3-4-5", rtol=1e-6)
    assert (n > 1).any() and (n <= 1).any()


@pytest.mark.parametrize("kind", ["image", "field"])
def test_subvol_setsubvol(dom, kind):
    r = dom.rng(144)
    a = dom.rand(145) if kind == "image" else dom.rand_field(145)
    shape = dom.shape
    sub_sizes = ((7, 8, 1) if dom.flat else (7, 8, 9))
    starts = [(2, 3, 0) if dom.flat else (2, 3, 4),                 # inside
              (-3, 27, 0) if dom.flat else (-3, 15, 20),            # partly outside
              (100, 0, 0)]                                           # all outside
    make = (lambda x, g: image_from(x, g)) if kind == "image" else (lambda x, g: field_from(list(x), g))
    new = (lambda g: ca.Image3D(g, ca.MEM_HOST)) if kind == "image" else (lambda g: ca.Field3D(g, ca.MEM_HOST))
    get = to_np if kind == "image" else inp
    lead = () if kind == "image" else (slice(None),)
    for st in starts:
        gs = grid(*sub_sizes, sp=(0.5, 0.5, 0.5), org=(9, 9, 9))
        out = new(gs)
        ca.SetMem(out, 7.0)
        ca.SubVol(out, make(a, dom.g), ca.Vec3Di(*st))
        want = np.zeros(((3,) if kind == "field" else ()) + sub_sizes)
        for x, y, z in itertools.product(*[range(s) for s in sub_sizes]):
            p = (x + st[0], y + st[1], z + st[2])
            if all(0 <= p[e] < shape[e] for e in range(3)):
                want[lead + (x, y, z)] = a[lead + p]
        same(get(out), want.astype(np.float32), "SubVol %s start %s" % (kind, st))
        # paste a patch back, partly outside: only the inside part lands
        patch = (r.uniform(-1, 1, sub_sizes) if kind == "image" else r.uniform(-1, 1, (3,) + sub_sizes))
        patch = f32(patch)
        tgt = make(a, dom.g)
        ca.SetSubVol_I(tgt, make(patch, gs), ca.Vec3Di(*st))
        want = a.copy()
        for x, y, z in itertools.product(*[range(s) for s in sub_sizes]):
            p = (x + st[0], y + st[1], z + st[2])
            if all(0 <= p[e] < shape[e] for e in range(3)):
                want[lead + p] = patch[lead + (x, y, z)]
        same(get(tgt), want.astype(np.float32), "SetSubVol_I %s start %s" % (kind, st))


def test_shift_coordinate(dom):
    a = dom.rand(146)
    sx, sy, sz = dom.shape
    for dirn, shape, axes in ((True, (sz, sx, sy), (2, 0, 1)), (False, (sy, sz, sx), (1, 2, 0))):
        out = ca.Image3D(grid(*shape), ca.MEM_HOST)
        ca.ShiftCoordinate(out, dom.im(a), dirn)
        same(to_np(out), np.transpose(a, axes).astype(np.float32), "ShiftCoordinate dir=%s" % dirn)
        # the two directions are inverse cycles
        back = ca.Image3D(dom.g, ca.MEM_HOST)
        ca.ShiftCoordinate(back, out, not dirn)
        same(to_np(back), a.astype(np.float32), "ShiftCoordinate round trip")
    bad = ca.Image3D(grid(*dom.shape), ca.MEM_HOST)
    if dom.shape[0] != dom.shape[2]:
        with pytest.raises(RuntimeError) as ei:
            ca.ShiftCoordinate(bad, dom.im(a), True)
        msg = str(ei.value)
        assert msg.startswith("PyCA::Opers::ShiftCoordinate(") and "Inputs have different Size" in msg, msg


def _correlate_clamp(a, k):
    r = [s // 2 for s in k.shape]
    pad = np.pad(a, [(ri, ri) for ri in r], mode="edge")
    out = np.zeros(a.shape)
    for i, j, l in itertools.product(*[range(s) for s in k.shape]):
        out += k[i, j, l] * pad[i:i + a.shape[0], j:j + a.shape[1], l:l + a.shape[2]]
    return out


def test_convolve(dom):
    a = dom.rand(147, -2, 2)
    r = dom.rng(148)
    shapes = [(3, 5, 1), (1, 1, 1), (5, 3, 1)] + ([] if dom.flat else [(3, 3, 3), (1, 3, 5)])
    for ks in shapes:
        k = f32(r.uniform(-1, 1, ks))
        out = dom.new_im()
        ca.Convolve(out, dom.im(a), image_from(k))
        close(to_np(out), _correlate_clamp(a, k), "Convolve kernel %s" % (ks,))
    # a correlation: an asymmetric kernel is not flipped
    k = np.zeros((3, 1, 1))
    k[2, 0, 0] = 1.0  # picks a[x + 1]
    out = dom.new_im()
    ca.Convolve(out, dom.im(a), image_from(k))
    same(to_np(out), _shift_ref(a, (1, 0, 0), "CLAMP").astype(np.float32), "Convolve is a correlation")
    for ks in ((2, 1, 1), (3, 4, 1), (1, 1, 2)):
        with pytest.raises(RuntimeError) as ei:
            ca.Convolve(out, dom.im(a), image_from(np.ones(ks)))
        msg = str(ei.value)
        assert msg.startswith("PyCA::Opers::Convolve(") and \
            "Only odd-sized kernels allowed in convolution" in msg, msg


# ---------------------------------------------------------------------------
# a grid above the CPU launcher's single-thread limit (32768 voxels): the
# OpenMP row split and the multi-block splat against the references

BIG = dict(size=(41, 37, 29), sp=(0.7, 1.3, 2.1), org=(0.0, 0.5, -1.0))


def test_multithreaded_grid():
    d = Dom("big", BIG)
    a, F, m = d.rand(180, -2, 2), d.rand_field(181), d.rand_field(182)
    h = d.hfield(183, amp=2.0)
    hout = d.hfield(184, amp=3.0, invertible=False)
    for it, order in ((ca.INTERP_LINEAR, 1), (ca.INTERP_CUBIC, 3), (ca.INTERP_NN, 0)):
        out = d.new_im()
        ca.ApplyH(out, d.im(a), d.fld(hout), BG["ZERO"], it)
        close(to_np(out), ref.interp_image(a, hout, order, "ZERO"), "ApplyH big %d" % order)
    out = d.new_fld()
    ca.ApplyH(out, d.fld(F), d.fld(hout), BG["PARTIAL_ID"])
    close(inp(out), ref.interp_field(F, hout, "PARTIAL_ID"), "field ApplyH big")
    ca.ComposeHH(out, d.fld(h), d.fld(hout))
    close(inp(out), ref.interp_field(h, hout, "PARTIAL_ID"), "ComposeHH big")
    ca.CoAd(out, d.fld(h), d.fld(m))
    close(inp(out), ref.coad(h, m), "CoAd big")
    ca.Ad(out, d.fld(h), d.fld(m))
    close(inp(out), ref.ad(h, m), "Ad big")
    for normalize in (False, True):
        im = d.new_im()
        ca.Splat(im, d.fld(hout), d.im(a), normalize)
        want = ref.splat_normalized(a, hout, d.shape) if normalize else ref.splat(a, hout, d.shape)
        close(to_np(im), want, "Splat big normalize=%s" % normalize)
    g = d.new_fld()
    ca.Gradient(g, d.im(a), ca.DIFF_CENTRAL, ca.BC_WRAP)
    close(inp(g), ref.gradient(a, "CENTRAL", "WRAP", d.spv), "Gradient big")
    jd = d.new_im()
    ca.JacDetH(jd, d.fld(h))
    close(to_np(jd), ref.det3(ref.jacobian(h, "CENTRAL", "APPROX", d.spv)), "JacDetH big")
    ca.UpwindGradMag(jd, d.im(a), d.im(a))
    close(to_np(jd), _upwind_grad_mag_ref(a, a, d), "UpwindGradMag big")
    ca.JacobianXY(out, d.fld(F), d.fld(m))
    close(inp(out), LIE["JacobianXY"](F, m), "JacobianXY big")
    go = grid(30, 50, 20, sp=(1.0, 0.9, 3.1), org=(-1.0, 0.0, 2.0))
    rw = ca.Image3D(go, ca.MEM_HOST)
    ca.ResampleWorld(rw, d.im(a), BG["WRAP"])
    close(to_np(rw), ref.interp_image(a, _world_points(go, d.g), 1, "WRAP"), "ResampleWorld big")


# ---------------------------------------------------------------------------
# in-place and aliased calls equal the out-of-place ones (bit for bit)

def _alias_cases(dom):
    """(name, fn(objs) -> result arrays aliased, same out of place)."""
    a, s = dom.rand(150, -2, 2), dom.rand(151)
    h, g = dom.hfield(152, amp=2.0), dom.hfield(153, amp=2.0)
    F, m = dom.rand_field(154), dom.rand_field(155)
    v = f32(dom.disp(156) * dom.sp)
    k = f32(dom.rng(157).uniform(-1, 1, (3, 3, 1)))
    w = f32(dom.disp(158, amp=0.3, window=True))
    I_, Fl = dom.im, dom.fld
    cl, lin = BG["CLAMP"], ca.INTERP_LINEAR

    def img_case(name, fn):
        # fn(out, first_input) where the output aliases first_input
        def run():
            x = I_(a)
            fn(x, x)
            y, z = dom.new_im(), I_(a)
            fn(y, z)
            return to_np(x), to_np(y)
        return name, run

    def fld_case(name, build, fn):
        def run():
            x = Fl(build)
            fn(x, x)
            y, z = dom.new_fld(), Fl(build)
            fn(y, z)
            return inp(x), inp(y)
        return name, run

    cases = [
        img_case("ApplyH(im, im, h)", lambda o, i: ca.ApplyH(o, i, Fl(h), cl, lin)),
        img_case("ApplyH cubic", lambda o, i: ca.ApplyH(o, i, Fl(h), BG["ZERO"], ca.INTERP_CUBIC)),
        img_case("ApplyV(im, im, u)", lambda o, i: ca.ApplyV(o, i, Fl(v), 0.7)),
        img_case("ApplyVInv(im, im, u)", lambda o, i: ca.ApplyVInv(o, i, Fl(v), 0.7)),
        img_case("ComposeTranslation(im, im)", lambda o, i: ca.ComposeTranslation(o, i, ca.Vec3Df(1.5, -0.5, 0))),
        img_case("Splat(im, h, im)", lambda o, i: ca.Splat(o, Fl(h), i)),
        img_case("Splat normalize", lambda o, i: ca.Splat(o, Fl(h), i, True)),
        img_case("UpwindDiff(im, im, speed)", lambda o, i: ca.UpwindDiff(o, i, I_(s), ca.DIM_X)),
        img_case("UpwindDiff(speed, im, speed)", lambda o, i: ca.UpwindDiff(o, I_(s), i, ca.DIM_Y)),
        img_case("UpwindGradMag(im, im, speed)", lambda o, i: ca.UpwindGradMag(o, i, I_(s))),
        img_case("FiniteDiff(im, im)", lambda o, i: ca.FiniteDiff(o, i, ca.DIM_Y, ca.DIFF_CENTRAL, ca.BC_WRAP)),
        img_case("GradientMag(im, im)", lambda o, i: ca.GradientMag(o, i)),
        img_case("Convolve(im, im, k)", lambda o, i: ca.Convolve(o, i, image_from(k))),
        img_case("SubVol(im, im, start)", lambda o, i: ca.SubVol(o, i, ca.Vec3Di(2, -1, 0))),
        img_case("ResampleWorld(im, im)", lambda o, i: ca.ResampleWorld(o, i)),
        fld_case("ApplyH(f, f, h)", F, lambda o, i: ca.ApplyH(o, i, Fl(h), BG["PARTIAL_ZERO"])),
        fld_case("ApplyH(h, f, h)", h, lambda o, i: ca.ApplyH(o, Fl(F), i, BG["ZERO"])),
        fld_case("ComposeHH(h, h, g)", h, lambda o, i: ca.ComposeHH(o, i, Fl(g))),
        fld_case("ComposeHH(g, h, g)", g, lambda o, i: ca.ComposeHH(o, Fl(h), i)),
        fld_case("ComposeVH(v, v, g)", v, lambda o, i: ca.ComposeVH(o, i, Fl(g), 0.5)),
        fld_case("ComposeVH(g, v, g)", g, lambda o, i: ca.ComposeVH(o, Fl(v), i, 0.5)),
        fld_case("ComposeHV(g, g, v)", g, lambda o, i: ca.ComposeHV(o, i, Fl(v))),
        fld_case("ComposeHVInv(v, g, v)", v, lambda o, i: ca.ComposeHVInv(o, Fl(g), i)),
        fld_case("CoAd(m, g, m)", m, lambda o, i: ca.CoAd(o, Fl(g), i)),
        fld_case("CoAd(g, g, m)", g, lambda o, i: ca.CoAd(o, i, Fl(m))),
        fld_case("Ad(X, g, X)", m, lambda o, i: ca.Ad(o, Fl(g), i)),
        fld_case("Ad(g, g, X)", g, lambda o, i: ca.Ad(o, i, Fl(m))),
        fld_case("JacobianXY(X, X, Y)", F, lambda o, i: ca.JacobianXY(o, i, Fl(m))),
        fld_case("JacobianXtY(Y, X, Y)", m, lambda o, i: ca.JacobianXtY(o, Fl(F), i)),
        fld_case("AdInf(X, X, Y)", F, lambda o, i: ca.AdInf(o, i, Fl(m))),
        fld_case("DivergenceTensor(Y, X, Y)", m, lambda o, i: ca.DivergenceTensor(o, Fl(F), i)),
        fld_case("CoAdInf(m, X, m)", m, lambda o, i: ca.CoAdInf(o, Fl(F), i)),
        fld_case("SplatField(f, f, h)", F, lambda o, i: ca.SplatField(o, i, Fl(h))),
        fld_case("SplatV(f, h, f)", F, lambda o, i: ca.SplatV(o, Fl(h), i, True)),
        fld_case("SplatH(h, h, f)", h, lambda o, i: ca.SplatH(o, i, Fl(g), False)),
        fld_case("NormalizeSafe(f, f)", F, lambda o, i: ca.NormalizeSafe(o, i, 0.5)),
        fld_case("HtoV(h, h)", h, lambda o, i: ca.HtoV(o, i)),
        fld_case("VtoH(v, v)", v, lambda o, i: ca.VtoH(o, i, 1.5)),
        fld_case("InverseZerothOrder(h, h)", h, lambda o, i: ca.InverseZerothOrder(o, i)),
        fld_case("FixedPointInverse(g, g)", g, lambda o, i: ca.FixedPointInverse(o, i, 3)),
        fld_case("ComposeTranslation(f, f)", F, lambda o, i: ca.ComposeTranslation(o, i, ca.Vec3Df(0.5, 1.5, 0))),
        fld_case("Resample(f, f) same size", F, lambda o, i: ca.Resample(o, i)),
        fld_case("SubVol(f, f)", F, lambda o, i: ca.SubVol(o, i, ca.Vec3Di(1, 2, 0))),
    ]

    def upd_out():  # UpdateInverse(ginv, scratch, ginv, w): the output is the old inverse
        x = Fl(g)
        ca.UpdateInverse(x, dom.new_fld(), x, Fl(w), 3)
        y = dom.new_fld()
        ca.UpdateInverse(y, dom.new_fld(), Fl(g), Fl(w), 3)
        return inp(x), inp(y)

    def upd_w():  # the scratch is w
        x = Fl(w)
        y = dom.new_fld()
        ca.UpdateInverse(y, x, Fl(g), x, 3)
        z = dom.new_fld()
        ca.UpdateInverse(z, dom.new_fld(), Fl(g), Fl(w), 3)
        return inp(y), inp(z)

    def jac_alias():  # Jacobian(h, Y, Z, h)
        x = Fl(h)
        Y, Z = dom.new_fld(), dom.new_fld()
        ca.Jacobian(x, Y, Z, x)
        X2, Y2, Z2 = dom.new_fld(), dom.new_fld(), dom.new_fld()
        ca.Jacobian(X2, Y2, Z2, Fl(h))
        return np.stack([inp(x), inp(Y), inp(Z)]), np.stack([inp(X2), inp(Y2), inp(Z2)])

    def set_subvol():  # SetSubVol_I(im, im, start): the patch is the target itself
        x = I_(a)
        ca.SetSubVol_I(x, x, ca.Vec3Di(3, 2, 0))
        y = I_(a)
        ca.SetSubVol_I(y, I_(a), ca.Vec3Di(3, 2, 0))
        return to_np(x), to_np(y)

    def fd_accum():  # FiniteDiff(im, im, accum=True): out = a + D(a)^2
        x = I_(a)
        ca.FiniteDiff(x, x, ca.DIM_Y, ca.DIFF_BACKWARD, ca.BC_WRAP, True, ca.OP_SQR)
        y = I_(a)
        ca.FiniteDiff(y, I_(a), ca.DIM_Y, ca.DIFF_BACKWARD, ca.BC_WRAP, True, ca.OP_SQR)
        return to_np(x), to_np(y)

    cases += [("FiniteDiff accum (im, im)", fd_accum), ("UpdateInverse(ginv, s, ginv, w)", upd_out), ("UpdateInverse(g, w, g0, w)", upd_w),
              ("Jacobian(h, Y, Z, h)", jac_alias), ("SetSubVol_I(im, im)", set_subvol)]
    return cases


ALIAS_NAMES = [c[0] for c in _alias_cases(Dom("2d"))]


@pytest.mark.parametrize("name", ALIAS_NAMES)
def test_aliased_calls(dom, name):
    run = dict(_alias_cases(dom))[name]
    x, y = run()
    same(x, y, name)


def test_shift_coordinate_in_place():
    d = Dom("cube", dict(size=(7, 7, 7), sp=(0.5, 1, 2), org=(0, 0, 0)))
    a = d.rand(160)
    for dirn, axes in ((True, (2, 0, 1)), (False, (1, 2, 0))):
        x = d.im(a)
        ca.ShiftCoordinate(x, x, dirn)
        same(to_np(x), np.transpose(a, axes).astype(np.float32), "ShiftCoordinate in place")


def test_gradient_raw_pointer_aliasing(dom):
    """Gradient(f, f.x) would overwrite its input while reading it: refused;
    another field's component is fine (the result equals the image form)."""
    F = dom.rand_field(161)
    f = dom.fld(F)
    before = inp(f)
    with pytest.raises(RuntimeError) as ei:
        ca.Gradient(f, f.y)
    assert str(ei.value).startswith("PyCA::Opers::Gradient(")
    same(inp(f), before, "output untouched")
    o1, o2 = dom.new_fld(), dom.new_fld()
    ca.Gradient(o1, f.y, ca.DIFF_BACKWARD, ca.BC_WRAP)
    ca.Gradient(o2, dom.im(F[1]), ca.DIFF_BACKWARD, ca.BC_WRAP)
    same(inp(o1), inp(o2), "Gradient(o, f.y) = Gradient(o, image)")
    o3 = dom.new_fld()
    ca.Gradient(o3, f.y)
    ca.Gradient(o2, dom.im(F[1]))
    same(inp(o3), inp(o2), "raw form defaults")


# ---------------------------------------------------------------------------
# scratch space from the thread memory manager

def _scratch_runs(dom):
    h, g = dom.hfield(170, amp=2.0), dom.hfield(171, amp=2.0, window=True)
    a, F = dom.rand(172), dom.rand_field(173)
    w = f32(dom.disp(174, amp=0.3, window=True))
    Fl, I_ = dom.fld, dom.im

    def upd():
        o, s = dom.new_fld(), dom.new_fld()
        ca.UpdateInverse(o, s, Fl(g), Fl(w), 3)
        return inp(o)

    def upd_alias():
        x = Fl(g)
        ca.UpdateInverse(x, dom.new_fld(), x, Fl(w), 3)
        return inp(x)

    def fpi():
        o = dom.new_fld()
        ca.FixedPointInverse(o, Fl(g), 4)
        return inp(o)

    def apply_alias():
        x = I_(a)
        ca.ApplyH(x, x, Fl(h))
        return to_np(x)

    def compose_alias():
        x = Fl(h)
        ca.ComposeHH(x, x, Fl(g))
        return inp(x)

    def splat_norm():
        o = dom.new_im()
        ca.Splat(o, Fl(h), I_(a), True)
        return to_np(o)

    def splat_alias():
        x = I_(a)
        ca.Splat(x, Fl(h), x)
        return to_np(x)

    def coad_alias():
        x = Fl(F)
        ca.CoAd(x, Fl(g), x)
        return inp(x)

    return [("UpdateInverse", upd, False), ("UpdateInverse aliased", upd_alias, True),
            ("FixedPointInverse", fpi, True), ("ApplyH aliased", apply_alias, True),
            ("ComposeHH aliased", compose_alias, True), ("Splat normalize", splat_norm, False),
            ("Splat aliased", splat_alias, True), ("CoAd aliased", coad_alias, True)]


def test_scratch_from_thread_memory_manager(dom):
    """With a thread memory manager the operators take their scratch from it
    (aliased calls, FixedPointInverse, UpdateInverse's aliased copy), give
    it all back, and compute the same results as without a manager; a
    manager whose pools are too small is not used."""
    runs = _scratch_runs(dom)
    plain = {name: fn() for name, fn, _ in runs}
    ca.ThreadMemoryManager.init(dom.g, ca.MEM_HOST, 4)
    try:
        mm = ca.ThreadMemoryManager.instance()
        for name, fn, uses in runs:
            mm.resetPeak()
            got = fn()
            assert mm.poolsInUse() == 0, name
            if uses:
                assert mm.peakInUse() > 0, "%s took no pool" % name
            same(got, plain[name], name + " with a manager")
    finally:
        ca.ThreadMemoryManager.destroy()
    small = grid(3, 3, 1)
    ca.ThreadMemoryManager.init(small, ca.MEM_HOST, 2)
    try:
        mm = ca.ThreadMemoryManager.instance()
        for name, fn, _ in runs:
            got = fn()
            assert mm.poolsInUse() == 0 and mm.peakInUse() == 0, name
            same(got, plain[name], name + " with a too small manager")
    finally:
        ca.ThreadMemoryManager.destroy()
