"""CPU (MEM_HOST) against CUDA (MEM_DEVICE) for the deformation, splatting
and differential operators (spec groups E, F, H, V and the rest of D): the
same inputs through both back ends, every operator, with enforced maximum
and mean tolerances per kernel family (all need a CUDA device and skip
without one).

The two back ends run the same per-voxel functors; they differ only where
nvcc contracts a multiply and an add into an FMA (one rounding fewer), in
the order of the GPU splat's atomic additions, and in the sample points an
FMA moves by an ulp. Families (tolerances relative to max(1, max |cpu|)):

* ``exact``: differences (a - b) * w, selections, copies, integer index
  maps, nearest neighbour at points that are data (ApplyH) or exact sums
  (ComposeTranslation): bit-identical;
* ``fma``: a few products summed (norms, divergences, accumulation):
  about an ulp per term;
* ``prod``: longer sums of products (determinants, Lie operators, CoAd,
  convolution): a few ulp of the largest term;
* ``interp``: linear interpolation at identical points; ``cubic``: cubic
  convolution (64 weighted taps) at identical points;
* ``points``: interpolation at points computed as x + k v or r x + o (the
  point itself may move by an ulp, the value by the local slope times it);
* ``splat``: float atomics in any order, and the normalised splat of
  positive data;
* ``iter``: the iterative inverses (FixedPointInverse, UpdateInverse).

Normalised values (NormalizeSafe, ReprojectToUnitVec) and the sample points
of nearest-neighbour interpolation are kept away from their thresholds by
the data (random data has no ties), so no value can switch branch.
"""
import numpy as np
import pytest

import PyCA.Core as ca
from conftest import field_from, gpu_only, grid, image_from, to_np

#: memory type of the second back end (MEM_DEVICE)
DEVICE = ca.MEM_DEVICE

#: above the CPU launcher's single-thread limit, odd sizes (not multiples of the CUDA blocks)
PARITY_GRIDS = {
    "3d": dict(size=(67, 53, 41), sp=(0.7, 1.3, 2.1), org=(1.5, -2.0, 0.25)),
    "2d": dict(size=(257, 131, 1), sp=(1.3, 0.7, 2.1), org=(-0.5, 3.0, 1.0)),
}
SEEDS = {"3d": 5151, "2d": 5252}

#: family -> (max_abs, mean_abs), both relative to max(1, max |cpu|)
TOLERANCES = {
    "exact": (0.0, 0.0),
    "fma": (1e-6, 1e-7),
    "prod": (1e-5, 5e-7),
    "interp": (5e-6, 5e-7),
    "cubic": (2e-5, 2e-6),
    "points": (2e-4, 1e-5),
    "splat": (2e-5, 1e-6),
    "iter": (5e-6, 5e-7),
}

BG = {n: getattr(ca, "BACKGROUND_STRATEGY_" + n)
      for n in ("PARTIAL_ID", "ID", "PARTIAL_ZERO", "ZERO", "CLAMP", "WRAP")}
IMAGE_BGS = ["CLAMP", "WRAP", "ZERO", "PARTIAL_ZERO"]
FIELD_BGS = IMAGE_BGS + ["ID", "PARTIAL_ID"]
HFIELD_BGS = ["CLAMP", "ID", "PARTIAL_ID"]
DIFFS = {"FWD": ca.DIFF_FORWARD, "BWD": ca.DIFF_BACKWARD, "CEN": ca.DIFF_CENTRAL}
BCS = {"APPROX": ca.BC_APPROX, "WRAP": ca.BC_WRAP, "CLAMP": ca.BC_CLAMP}


def compare(cpu, gpu, fam, what):
    """Enforces the family's max and mean absolute tolerances."""
    c = np.concatenate([np.ravel(x) for x in cpu]).astype(np.float64)
    g = np.concatenate([np.ravel(x) for x in gpu]).astype(np.float64)
    assert c.shape == g.shape, what
    assert np.array_equal(np.isnan(c), np.isnan(g)), "%s: NaN at different voxels" % what
    assert not np.isnan(c).any(), "%s: NaN in the result" % what
    max_abs, mean_abs = TOLERANCES[fam]
    d = np.abs(g - c)
    scale = max(1.0, float(np.abs(c).max()) if c.size else 1.0)
    if fam == "exact":
        bad = np.flatnonzero(d != 0)
        assert bad.size == 0, "%s: %d of %d values differ, first at %d: cpu %r gpu %r" % (
            what, bad.size, c.size, bad[0], c[bad[0]], g[bad[0]])
        return
    worst = int(np.argmax(d)) if d.size else 0
    stats = {"max_abs": d.max() / scale if d.size else 0.0, "mean_abs": d.mean() / scale if d.size else 0.0}
    lim = {"max_abs": max_abs, "mean_abs": mean_abs}
    over = {k: v for k, v in stats.items() if v > lim[k]}
    assert not over, "%s (%s): %s exceed %s (worst voxel %d: cpu %r gpu %r)" % (
        what, fam, over, {k: lim[k] for k in over}, worst, c[worst], g[worst])


class Data:
    """The inputs of one grid, as NumPy arrays, and builders of PyCA objects
    holding them in a given memory type."""

    def __init__(self, tag):
        p = PARITY_GRIDS[tag]
        self.tag = tag
        self.shape = tuple(p["size"])
        self.g = grid(*p["size"], sp=p["sp"], org=p["org"])
        self.sp = np.array(p["sp"]).reshape(3, 1, 1, 1)
        r = np.random.default_rng(SEEDS[tag])
        s = self.shape
        I = np.array(np.meshgrid(*[np.arange(n, dtype=np.float64) for n in s], indexing="ij"))
        axes = [e for e in range(3) if s[e] > 1]

        def disp(amp, k):
            u = np.zeros((3,) + s)
            for d in axes:
                for j, e in enumerate(axes):
                    u[d] += amp / len(axes) * np.sin(np.pi * (k + j + d + 1) * I[e] / s[e] + k + d)
            return u

        f = lambda a: np.asarray(a, np.float32)
        self.arr = {
            "a": f(r.uniform(-1, 1, s)),
            "b": f(r.uniform(-1, 1, s)),
            "pos": f(r.uniform(0.5, 1.5, s)),            # positive: normalised splats
            "speed": f(r.uniform(-1, 1, s) * (r.uniform(size=s) > 0.1)),
            "mask": f((r.uniform(size=s) > 0.3) * 1.0),
            "F": f(r.uniform(-2, 2, (3,) + s)),
            "G": f(r.uniform(-2, 2, (3,) + s)),
            "m": f(r.uniform(-1, 1, (3,) + s)),
            "h": f(I + disp(2.0, 1)),                     # smooth H-fields, ~2 voxels
            "g": f(I + disp(1.5, 2)),
            "hout": f(I * 1.1 - 2.0 + r.uniform(-1, 1, (3,) + s)),  # reaching outside
            "v": f(disp(1.5, 3) * self.sp),              # V-field (physical)
            "w": f(disp(0.3, 4)),                         # small step (voxels)
            "k3": f(r.uniform(-1, 1, (3, 3, 1) if s[2] == 1 else (3, 3, 3))),
        }
        self.arr["Fbig"] = f(self.arr["F"] * 3.0)         # lengths well above 1
        if s[2] == 1:
            for k in ("h", "g", "hout", "v", "w"):
                self.arr[k][2] = 0.0

    def im(self, key, mem, g=None):
        return image_from(self.arr[key], g or self.g, mem)

    def fld(self, key, mem, g=None):
        return field_from(list(self.arr[key]), g or self.g, mem)

    def new_im(self, mem, g=None, fill=np.nan):
        o = ca.Image3D(g or self.g, mem)
        ca.SetMem(o, float(fill))
        return o

    def new_fld(self, mem, g=None, fill=np.nan):
        o = ca.Field3D(g or self.g, mem)
        ca.SetMem(o, float(fill))
        return o


_DATA = {}


def data(tag):
    if tag not in _DATA:
        _DATA[tag] = Data(tag)
    return _DATA[tag]


def _out(o):
    """Host copies of an output (or several)."""
    if isinstance(o, (list, tuple)):
        return [x for y in o for x in _out(y)]
    v = to_np(o)
    return list(v) if isinstance(v, list) else [v]


# ---------------------------------------------------------------------------
# the cases: (id, family, run(d, mem) -> output objects)

CASES = []


def case(cid, fam):
    def deco(fn):
        CASES.append((cid, fam, fn))
        return fn
    return deco


def _image_deform_cases():
    interps = {"NN": ca.INTERP_NN, "LIN": ca.INTERP_LINEAR, "CUB": ca.INTERP_CUBIC}
    for bg in IMAGE_BGS:
        for iname, it in interps.items():
            fam_h = {"NN": "exact", "LIN": "interp", "CUB": "cubic"}[iname]

            def apply_h(d, mem, bg=bg, it=it):
                o = d.new_im(mem)
                ca.ApplyH(o, d.im("a", mem), d.fld("hout", mem), BG[bg], it)
                return o
            case("ApplyH-im-%s-%s" % (bg, iname), fam_h)(apply_h)

            def comp_t(d, mem, bg=bg, it=it):
                o = d.new_im(mem)
                ca.ComposeTranslation(o, d.im("a", mem), ca.Vec3Df(2.25, -1.75, 0.5 if d.shape[2] > 1 else 0.0),
                                      BG[bg], it)
                return o
            case("ComposeTranslation-im-%s-%s" % (bg, iname), fam_h)(comp_t)
            if iname == "NN":
                continue  # the points below are computed (an FMA may move them across a tie)

            def apply_v(d, mem, bg=bg, it=it):
                o1, o2 = d.new_im(mem), d.new_im(mem)
                ca.ApplyV(o1, d.im("a", mem), d.fld("v", mem), 1.3, BG[bg], it)
                ca.ApplyVInv(o2, d.im("a", mem), d.fld("v", mem), 0.7, BG[bg], it)
                return [o1, o2]
            case("ApplyV-ApplyVInv-im-%s-%s" % (bg, iname), "points")(apply_v)

            def resample(d, mem, bg=bg, it=it):
                outs = []
                for so in ([max(1, (n * 2) // 3) for n in d.shape], [max(1, (n * 3) // 2) for n in d.shape]):
                    so = [1 if n == 1 else m for n, m in zip(d.shape, so)]
                    for offset in (True, False):
                        o = d.new_im(mem, grid(*so))
                        ca.Resample(o, d.im("a", mem), BG[bg], it, offset)
                        outs.append(o)
                return outs
            case("Resample-im-%s-%s" % (bg, iname), "points")(resample)

            def resample_world(d, mem, bg=bg, it=it):
                go = grid(40, 37, 29, sp=(1.1, 1.9, 3.0), org=(-1.0, 0.5, 2.0)) if d.shape[2] > 1 else \
                    grid(150, 101, 1, sp=(2.0, 0.9, 2.1), org=(1.0, 4.0, 1.0))
                o = d.new_im(mem, go)
                ca.ResampleWorld(o, d.im("a", mem), BG[bg], it)
                return o
            case("ResampleWorld-%s-%s" % (bg, iname), "points")(resample_world)


_image_deform_cases()


def _field_deform_cases():
    for bg in FIELD_BGS:
        def apply_h(d, mem, bg=bg):
            o = d.new_fld(mem)
            ca.ApplyH(o, d.fld("F", mem), d.fld("hout", mem), BG[bg])
            return o
        case("ApplyH-fld-%s" % bg, "interp")(apply_h)

        def apply_v(d, mem, bg=bg):
            o1, o2 = d.new_fld(mem), d.new_fld(mem)
            ca.ApplyV(o1, d.fld("F", mem), d.fld("v", mem), BG[bg], 1.3)
            ca.ApplyVInv(o2, d.fld("F", mem), d.fld("v", mem), BG[bg], 0.7)
            return [o1, o2]
        case("ApplyV-ApplyVInv-fld-%s" % bg, "points")(apply_v)

        def translations(d, mem, bg=bg):
            t = ca.Vec3Df(-3.5, 1.25, 0.75 if d.shape[2] > 1 else 0.0)
            outs = []
            for name in ("ComposeTranslation", "ComposeHTranslation", "ComposeVTranslation"):
                o = d.new_fld(mem)
                getattr(ca, name)(o, d.fld("F", mem), t, BG[bg])
                outs.append(o)
            return outs
        case("ComposeTranslation-fld-%s" % bg, "interp")(translations)

        def resample(d, mem, bg=bg):
            outs = []
            so = [max(1, (n * 2) // 3) for n in d.shape]
            for name in ("Resample", "ResampleH", "ResampleV"):
                for rescale in (False, True):
                    o = d.new_fld(mem, grid(*so))
                    getattr(ca, name)(o, d.fld("h", mem), BG[bg], rescale)
                    outs.append(o)
            return outs
        case("Resample-fld-%s" % bg, "points")(resample)
    for bg in HFIELD_BGS:
        def compose_hh(d, mem, bg=bg):
            o = d.new_fld(mem)
            ca.ComposeHH(o, d.fld("g", mem), d.fld("hout", mem), BG[bg])
            return o
        case("ComposeHH-%s" % bg, "interp")(compose_hh)

        def compose_hv(d, mem, bg=bg):
            o1, o2 = d.new_fld(mem), d.new_fld(mem)
            ca.ComposeHV(o1, d.fld("g", mem), d.fld("v", mem), 0.8, BG[bg])
            ca.ComposeHVInv(o2, d.fld("g", mem), d.fld("v", mem), 1.6, BG[bg])
            return [o1, o2]
        case("ComposeHV-HVInv-%s" % bg, "points")(compose_hv)
    for bg in IMAGE_BGS:
        def compose_vh(d, mem, bg=bg):
            o1, o2 = d.new_fld(mem), d.new_fld(mem)
            ca.ComposeVH(o1, d.fld("v", mem), d.fld("hout", mem), 0.8, BG[bg])
            ca.ComposeVInvH(o2, d.fld("v", mem), d.fld("hout", mem), 1.6, BG[bg])
            return [o1, o2]
        case("ComposeVH-VInvH-%s" % bg, "points")(compose_vh)

        def coad(d, mem, bg=bg):
            o = d.new_fld(mem)
            ca.CoAd(o, d.fld("g", mem), d.fld("m", mem), BG[bg])
            return o
        case("CoAd-%s" % bg, "prod")(coad)


_field_deform_cases()


@case("Ad", "splat")
def _ad(d, mem):
    o = d.new_fld(mem)
    ca.Ad(o, d.fld("h", mem), d.fld("m", mem))
    return o


@case("Splat", "splat")
def _splat(d, mem):
    o1, o2 = d.new_im(mem), d.new_im(mem)
    ca.Splat(o1, d.fld("hout", mem), d.im("a", mem))
    ca.Splat(o2, d.fld("h", mem), d.im("a", mem), False)
    return [o1, o2]


@case("Splat-normalize", "splat")
def _splat_norm(d, mem):
    o1, o2 = d.new_im(mem), d.new_im(mem)
    ca.Splat(o1, d.fld("hout", mem), d.im("pos", mem), True)
    ca.Splat(o2, d.fld("h", mem), d.im("pos", mem), True)
    return [o1, o2]


@case("SplatField-SplatV", "splat")
def _splat_fields(d, mem):
    o1, o2 = d.new_fld(mem), d.new_fld(mem)
    ca.SplatField(o1, d.fld("F", mem), d.fld("hout", mem))
    ca.SplatV(o2, d.fld("hout", mem), d.fld("F", mem), False)
    return [o1, o2]


@case("SplatV-SplatH-normalize", "splat")
def _splat_norm_fields(d, mem):
    o1, o2, o3 = d.new_fld(mem), d.new_fld(mem), d.new_fld(mem)
    pos = d.fld("F", mem)
    ca.AddC_I(pos, 3.0)  # positive components
    ca.SplatV(o1, d.fld("h", mem), pos, True)
    ca.SplatH(o2, d.fld("h", mem), d.fld("g", mem), True)
    ca.SplatH(o3, d.fld("hout", mem), d.fld("g", mem), False)
    return [o1, o2, o3]


@case("SplatWorld", "splat")
def _splat_world(d, mem):
    go = grid(40, 37, 29, sp=(1.1, 1.9, 3.0), org=(-1.0, 0.5, 2.0)) if d.shape[2] > 1 else \
        grid(150, 101, 1, sp=(2.0, 0.9, 2.1), org=(1.0, 4.0, 1.0))
    o1, o2, w = d.new_im(mem, go, 0.0), d.new_im(mem, go, 0.5), d.new_im(mem, go, 0.0)
    ca.SplatWorld(o1, d.im("a", mem))
    ca.SplatWorld(o2, d.im("a", mem), w, BG["ZERO"])
    return [o1, o2, w]


def _diff_cases():
    for dn, diff in DIFFS.items():
        for bn, bc in BCS.items():
            def fd(d, mem, diff=diff, bc=bc):
                outs = []
                for dim in (ca.DIM_X, ca.DIM_Y, ca.DIM_Z):
                    for op in (ca.OP_VAL, ca.OP_SQR):
                        o = d.new_im(mem)
                        ca.FiniteDiff(o, d.im("a", mem), dim, diff, bc, False, op)
                        outs.append(o)
                return outs
            case("FiniteDiff-%s-%s" % (dn, bn), "exact")(fd)

            def fd_acc(d, mem, diff=diff, bc=bc):
                outs = []
                for dim in (ca.DIM_X, ca.DIM_Y, ca.DIM_Z):
                    for op in (ca.OP_VAL, ca.OP_SQR):
                        o = d.im("b", mem)
                        ca.FiniteDiff(o, d.im("a", mem), dim, diff, bc, True, op)
                        outs.append(o)
                return outs
            case("FiniteDiff-accum-%s-%s" % (dn, bn), "fma")(fd_acc)

            def grads(d, mem, diff=diff, bc=bc):
                o1, o2, o3 = d.new_fld(mem), d.new_fld(mem), d.new_fld(mem)
                ca.Gradient(o1, d.im("a", mem), diff, bc)
                ca.Gradient2(o2, d.im("a", mem), diff, bc)
                src = d.fld("F", mem)
                ca.Gradient(o3, src.y, diff, bc)
                outs = [o1, o2, o3]
                X, Y, Z = d.new_fld(mem), d.new_fld(mem), d.new_fld(mem)
                ca.Jacobian(X, Y, Z, d.fld("h", mem), diff, bc)
                outs += [X, Y, Z]
                if bc != ca.BC_WRAP:
                    o4 = d.new_fld(mem)
                    ca.GradientMask(o4, d.im("a", mem), d.im("mask", mem), diff, bc)
                    outs.append(o4)
                return outs
            case("Gradient-%s-%s" % (dn, bn), "exact")(grads)

            def sums(d, mem, diff=diff, bc=bc):
                o1, o2 = d.new_im(mem), d.new_im(mem)
                ca.GradientMag(o1, d.im("a", mem), diff, bc)
                ca.Divergence(o2, d.fld("F", mem), diff, bc)
                return [o1, o2]
            case("GradientMag-Divergence-%s-%s" % (dn, bn), "fma")(sums)

            def jacdet(d, mem, diff=diff, bc=bc):
                o, v = d.new_im(mem), d.new_im(mem)
                ca.JacDetH(o, d.fld("h", mem), diff, bc)
                ca.JacDetHVoxel(v, d.fld("h", mem), diff, bc)
                return [o, v]
            case("JacDetH-%s-%s" % (dn, bn), "prod")(jacdet)
    for bn, bc in BCS.items():
        def forward(d, mem, bc=bc):
            o1, o2 = d.new_fld(mem), d.new_im(mem)
            ca.GradFor(o1, d.im("a", mem), bc)
            ca.DivBack(o2, d.fld("F", mem), bc)
            return [o1, o2]
        case("GradFor-DivBack-%s" % bn, "fma")(forward)


_diff_cases()


@case("UpwindDiff", "exact")
def _upwind(d, mem):
    outs = []
    for dim in (ca.DIM_X, ca.DIM_Y, ca.DIM_Z):
        o = d.new_im(mem)
        ca.UpwindDiff(o, d.im("a", mem), d.im("speed", mem), dim)
        outs.append(o)
    return outs


@case("UpwindGradMag-GradForMag", "fma")
def _upwind_mag(d, mem):
    o1, o2 = d.new_im(mem), d.new_im(mem)
    ca.UpwindGradMag(o1, d.im("a", mem), d.im("speed", mem))
    ca.GradForMag(o2, d.im("a", mem))
    return [o1, o2]


@case("JacDet-from-gradients", "prod")
def _jacdets(d, mem):
    outs = []
    for name in ("JacDetH", "JacDetHVoxel", "JacDetV", "JacDetVInv"):
        o = d.new_im(mem)
        getattr(ca, name)(o, d.fld("F", mem), d.fld("G", mem), d.fld("m", mem))
        outs.append(o)
    return outs


@case("Magnitude-SqrMagnitude-ComponentDotProd", "fma")
def _norms(d, mem):
    o1, o2, o3 = d.new_im(mem), d.new_im(mem), d.new_im(mem)
    ca.Magnitude(o1, d.fld("F", mem))
    ca.SqrMagnitude(o2, d.fld("F", mem))
    ca.ComponentDotProd(o3, d.fld("F", mem), d.fld("G", mem))
    return [o1, o2, o3]


@case("NormalizeSafe-ReprojectToUnitVec", "fma")
def _normalize(d, mem):
    o1 = d.new_fld(mem)
    ca.NormalizeSafe(o1, d.fld("F", mem), 0.25)
    o2 = d.fld("F", mem)
    ca.NormalizeSafe_I(o2, 0.5)
    o3 = d.fld("Fbig", mem)
    ca.ReprojectToUnitVec(o3)
    return [o1, o2, o3]


@case("Lie-operators", "prod")
def _lie(d, mem):
    outs = []
    for name in ("AdInf", "CoAdInf", "DivergenceTensor", "JacobianXY", "JacobianXtY"):
        o = d.new_fld(mem)
        getattr(ca, name)(o, d.fld("F", mem), d.fld("G", mem))
        outs.append(o)
    return outs


@case("SetToIdentity-SetToZero-HtoV-InverseZerothOrder", "exact")
def _hhelpers(d, mem):
    o1, o2, o3, o4 = d.new_fld(mem), d.fld("F", mem), d.new_fld(mem), d.new_fld(mem)
    ca.SetToIdentity(o1)
    ca.SetToZero(o2)
    ca.HtoV(o3, d.fld("h", mem))
    ca.InverseZerothOrder(o4, d.fld("h", mem))
    o5 = d.fld("g", mem)
    ca.HtoV_I(o5)
    o6 = d.fld("g", mem)
    ca.InverseZerothOrder_I(o6)
    return [o1, o2, o3, o4, o5, o6]


@case("VtoH", "fma")
def _vtoh(d, mem):
    o1, o2 = d.new_fld(mem), d.fld("v", mem)
    ca.VtoH(o1, d.fld("v", mem), 0.7)
    ca.VtoH_I(o2)
    return [o1, o2]


@case("FixedPointInverse", "iter")
def _fpi(d, mem):
    outs = []
    for n in (0, 2, 10):
        o = d.new_fld(mem)
        ca.FixedPointInverse(o, d.fld("g", mem), n)
        outs.append(o)
    return outs


@case("UpdateInverse", "iter")
def _upd(d, mem):
    outs = []
    for n in (1, 3, 6):
        o, s = d.new_fld(mem), d.new_fld(mem)
        ca.UpdateInverse(o, s, d.fld("g", mem), d.fld("w", mem), n)
        outs.append(o)
    return outs


@case("SubVol-SetSubVol_I", "exact")
def _subvol(d, mem):
    gs = grid(20, 17, 1 if d.shape[2] == 1 else 13)
    outs = []
    for st in (ca.Vec3Di(3, 4, 0), ca.Vec3Di(-5, d.shape[1] - 9, 0 if d.shape[2] == 1 else d.shape[2] - 6)):
        o1, o2 = d.new_im(mem, gs), d.new_fld(mem, gs)
        ca.SubVol(o1, d.im("a", mem), st)
        ca.SubVol(o2, d.fld("F", mem), st)
        t1, t2 = d.im("b", mem), d.fld("G", mem)
        ca.SetSubVol_I(t1, o1, st)
        ca.SetSubVol_I(t2, o2, st)
        outs += [o1, o2, t1, t2]
    return outs


@case("ShiftCoordinate", "exact")
def _shift(d, mem):
    sx, sy, sz = d.shape
    o1, o2 = d.new_im(mem, grid(sz, sx, sy)), d.new_im(mem, grid(sy, sz, sx))
    ca.ShiftCoordinate(o1, d.im("a", mem), True)
    ca.ShiftCoordinate(o2, d.im("a", mem), False)
    return [o1, o2]


@case("Convolve", "prod")
def _convolve(d, mem):
    o = d.new_im(mem)
    k = image_from(d.arr["k3"], mem=mem)
    ca.Convolve(o, d.im("a", mem), k)
    return o


@case("aliased", "prod")
def _aliased(d, mem):
    """In-place calls on the device take scratch copies as on the host."""
    x = d.im("a", mem)
    ca.ApplyH(x, x, d.fld("h", mem))
    y = d.fld("h", mem)
    ca.ComposeHH(y, y, d.fld("g", mem))
    z = d.fld("m", mem)
    ca.CoAd(z, d.fld("g", mem), z)
    return [x, y, z]


@case("aliased-splat", "splat")
def _aliased_splat(d, mem):
    x = d.im("a", mem)
    ca.Splat(x, d.fld("h", mem), x)
    return x


# ---------------------------------------------------------------------------

def test_every_operator_has_a_case():
    """Every operator of the groups covered here runs in some case."""
    import inspect
    src = inspect.getsource(inspect.getmodule(test_every_operator_has_a_case))
    names = ("ApplyH ApplyV ApplyVInv ComposeTranslation Splat FiniteDiff Gradient Gradient2 GradientMask "
             "GradFor GradForMag GradientMag UpwindDiff UpwindGradMag Divergence DivBack Magnitude "
             "SqrMagnitude ComponentDotProd JacDetH JacDetHVoxel JacDetV JacDetVInv ComposeHH ComposeVH ComposeVInvH "
             "ComposeHV ComposeHVInv Jacobian SplatField NormalizeSafe NormalizeSafe_I ReprojectToUnitVec "
             "FixedPointInverse UpdateInverse Ad AdInf CoAd CoAdInf DivergenceTensor JacobianXY JacobianXtY "
             "SetToIdentity HtoV HtoV_I ComposeHTranslation ResampleH InverseZerothOrder InverseZerothOrder_I "
             "SplatH SetToZero VtoH VtoH_I ComposeVTranslation SplatV ResampleV ShiftCoordinate SubVol "
             "SetSubVol_I Resample ResampleWorld SplatWorld Convolve").split()
    body = src[src.index("# the cases"):src.index("def test_every_operator_has_a_case")]
    missing = [n for n in names if ("ca.%s(" % n) not in body and ('"%s"' % n) not in body]
    assert not missing, missing
    assert len({c[0] for c in CASES}) == len(CASES)
    assert all(c[1] in TOLERANCES for c in CASES)


@gpu_only
@pytest.mark.parametrize("tag", sorted(PARITY_GRIDS))
@pytest.mark.parametrize("c", CASES, ids=lambda c: c[0])
def test_deform_parity(c, tag):
    cid, fam, run = c
    d = data(tag)
    host = _out(run(d, ca.MEM_HOST))
    dev_objs = run(d, DEVICE)
    for o in (dev_objs if isinstance(dev_objs, list) else [dev_objs]):
        assert o.memType() == DEVICE
    ca.CheckCUDAError(__file__, 0)
    compare(host, _out(dev_objs), fam, "%s %s" % (cid, tag))


@gpu_only
def test_splat_parity_huge_values():
    """Float atomics do not overflow (the legacy GPU used fixed point): a
    value of 1e8 splats like on the CPU, to float rounding of the sums."""
    d = data("3d")
    a = d.arr["pos"].copy()
    a.reshape(-1)[::997] = 1e8
    outs = []
    for mem in (ca.MEM_HOST, DEVICE):
        o = d.new_im(mem)
        ca.Splat(o, d.fld("h", mem), image_from(a, d.g, mem))
        outs.append(_out(o))
    compare(outs[0], outs[1], "splat", "Splat 1e8")


@gpu_only
def test_device_scratch_is_returned():
    """GPU operators needing scratch (Splat normalize, aliased calls,
    FixedPointInverse) take it from a device memory manager and give it back."""
    d = data("2d")
    #: run -> family of the comparison with and without a manager (atomics
    #: make the splats differ in the last bits from run to run)
    runs = {_splat_norm: "splat", _aliased: "exact", _aliased_splat: "splat", _fpi: "exact"}
    with_mm = {}
    ca.ThreadMemoryManager.init(d.g, DEVICE, 6)
    try:
        mm = ca.ThreadMemoryManager.instance()
        for run in runs:
            mm.resetPeak()
            with_mm[run] = _out(run(d, DEVICE))
            assert mm.poolsInUse() == 0, run.__name__
            assert mm.peakInUse() > 0, run.__name__
    finally:
        ca.ThreadMemoryManager.destroy()
    for run, fam in runs.items():
        compare(with_mm[run], _out(run(d, DEVICE)), fam, "scratch " + run.__name__)
