"""Bad input to the deformation, splatting and differential operators
(spec groups E, F, H, V and the rest of D) never crashes and gives the
legacy error: a RuntimeError whose text starts with the C++ declaration of
the overload called ("PyCA::Opers::Name(...):"), then "PyCAException : From
FILE:LINE : <legacy message>" (spec 4); TypeError for wrong types and None.

Covered: mismatched grids (size, spacing, origin, at every array position;
the output is left untouched), memory types (GPU only), wrong types, the
background strategies each family refuses, unknown interpolation, DimT,
DiffT, BoundaryCondT and OpT values, GradientMask with BC_WRAP, grids
enlarged through a live reference (im.size().x = 1000), zero-size grids.
"""
import re

import numpy as np
import pytest

import PyCA.Core as ca
from conftest import gpu_only, grid, image_from, to_np

G3 = dict(size=(9, 8, 7), sp=(0.7, 1.3, 2.1), org=(1.5, -2.0, 0.25))
G2 = dict(size=(11, 10, 1), sp=(1.3, 0.7, 2.1), org=(-0.5, 3.0, 1.0))
BG = {n: getattr(ca, "BACKGROUND_STRATEGY_" + n)
      for n in ("PARTIAL_ID", "ID", "PARTIAL_ZERO", "ZERO", "CLAMP", "WRAP", "VAL")}
V = ca.Vec3Df(0.5, -0.25, 0.0)

#: (operator, array kinds of its arguments in order, trailing non-array
#: arguments): every array argument must be on the output's grid
GRID_OPS = [
    ("ApplyH", "IIF", ()), ("ApplyH", "FFF", (BG["CLAMP"],)),
    ("ApplyV", "IIF", ()), ("ApplyV", "FFF", (BG["CLAMP"], 1.0)),
    ("ApplyVInv", "IIF", ()), ("ApplyVInv", "FFF", (BG["CLAMP"],)),
    ("ComposeTranslation", "II", (V,)), ("ComposeTranslation", "FF", (V,)),
    ("Splat", "IFI", ()), ("Splat", "IFI", (True,)),
    ("FiniteDiff", "II", (ca.DIM_X,)),
    ("Gradient", "FI", ()), ("Gradient2", "FI", ()), ("GradientMask", "FII", ()),
    ("GradFor", "FI", ()), ("GradForMag", "II", ()), ("GradientMag", "II", ()),
    ("UpwindDiff", "III", (ca.DIM_Y,)), ("UpwindGradMag", "III", ()),
    ("Divergence", "IF", ()), ("DivBack", "IF", ()),
    ("Magnitude", "IF", ()), ("SqrMagnitude", "IF", ()), ("ComponentDotProd", "IFF", ()),
    ("JacDetH", "IF", ()), ("JacDetH", "IFFF", ()), ("JacDetV", "IFFF", ()), ("JacDetVInv", "IFFF", ()),
    ("JacDetHVoxel", "IF", ()), ("JacDetHVoxel", "IFFF", ()),
    ("ComposeHH", "FFF", ()), ("ComposeVH", "FFF", ()), ("ComposeVInvH", "FFF", ()),
    ("ComposeHV", "FFF", ()), ("ComposeHVInv", "FFF", ()),
    ("Jacobian", "FFFF", ()), ("SplatField", "FFF", ()), ("NormalizeSafe", "FF", (0.1,)),
    ("FixedPointInverse", "FF", ()), ("UpdateInverse", "FFFF", ()),
    ("Ad", "FFF", ()), ("AdInf", "FFF", ()), ("CoAd", "FFF", ()), ("CoAdInf", "FFF", ()),
    ("DivergenceTensor", "FFF", ()), ("JacobianXY", "FFF", ()), ("JacobianXtY", "FFF", ()),
    ("HtoV", "FF", ()), ("ComposeHTranslation", "FF", (V,)), ("InverseZerothOrder", "FF", ()),
    ("SplatH", "FFF", (False,)), ("VtoH", "FF", ()), ("ComposeVTranslation", "FF", (V,)),
    ("SplatV", "FFF", (True,)),
]
#: the overloads of these names that exist (kinds of the array arguments)
KNOWN = {}
for _n, _k, _ in GRID_OPS:
    KNOWN.setdefault(_n, set()).add(_k)


def _row_id(row):
    return "%s-%s%s" % (row[0], row[1], "".join("-" + type(a).__name__ for a in row[2]))


def _grid(p):
    return grid(*p["size"], sp=p["sp"], org=p["org"])


def _obj(kind, g, mem=ca.MEM_HOST, seed=0):
    """An image or field with random values (an H-field-like range)."""
    rng = np.random.default_rng(seed)
    if kind == "I":
        im = ca.Image3D(g, ca.MEM_HOST)
        im.asnp()[...] = rng.uniform(-1, 1, im.asnp().shape)
        im.toType(mem)
        return im
    f = ca.Field3D(g, ca.MEM_HOST)
    for c in f.asnp():
        c[...] = rng.uniform(-1, 3, c.shape)
    f.toType(mem)
    return f


def _snapshot(o):
    return [np.array(v) for v in to_np(o)] if isinstance(o, ca.Field3D) else [to_np(o)]


def _decl_kinds(first_line):
    """Image/field kinds of the parameters of a declaration line."""
    params = first_line[first_line.index("(") + 1:first_line.rindex(")")].split(",")
    return "".join("I" if "Image3D" in p else "F" if "Field3D" in p else "" for p in params)


def check_msg(msg, name, text, kinds=None):
    assert msg.startswith("PyCA::Opers::%s(" % name), msg
    first, _, rest = msg.partition("\n")
    assert first.endswith("):"), msg
    if kinds is not None:
        assert _decl_kinds(first) == kinds, "the message names another overload: " + first
    assert re.match(r"^PyCAException : From .+:\d+ : %s$" % re.escape(text), rest), msg


def _other_grid(p, how):
    q = dict(p)
    if how == "size":
        q["size"] = (p["size"][0] + 1,) + tuple(p["size"][1:])
    elif how == "spacing":
        q["sp"] = (p["sp"][0], p["sp"][1] * 1.001, p["sp"][2])
    else:
        q["org"] = (p["org"][0], p["org"][1], p["org"][2] + 0.01)
    return _grid(q)


@pytest.mark.parametrize("gp", [G3, G2], ids=["3d", "2d"])
@pytest.mark.parametrize("row", GRID_OPS, ids=_row_id)
def test_grid_mismatch(row, gp):
    name, kinds, extra = row
    fn = getattr(ca, name)
    g = _grid(gp)
    hows = ("size", "spacing", "origin")
    for pos in range(len(kinds)):
        for how in hows:
            objs = [_obj(k, _other_grid(gp, how) if i == pos else g, seed=i) for i, k in enumerate(kinds)]
            before = [_snapshot(o) for o in objs]
            with pytest.raises(RuntimeError) as ei:
                fn(*objs, *extra)
            check_msg(str(ei.value), name, "Input grids are not equal", kinds)
            for b, o in zip(before, objs):
                assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(b, _snapshot(o))), \
                    "%s: argument written despite the error (%s at %d)" % (name, how, pos)


def test_splat_world_weight_grid():
    """SplatWorld's output and weights share a grid (its input may differ)."""
    gi, go = _grid(G3), _grid(G2)
    with pytest.raises(RuntimeError) as ei:
        ca.SplatWorld(ca.Image3D(go, ca.MEM_HOST), ca.Image3D(gi, ca.MEM_HOST), ca.Image3D(gi, ca.MEM_HOST))
    check_msg(str(ei.value), "SplatWorld", "Input grids are not equal", "III")


def test_shift_coordinate_size():
    a = _obj("I", _grid(G3))
    for dirn in (True, False):
        with pytest.raises(RuntimeError) as ei:
            ca.ShiftCoordinate(ca.Image3D(_grid(G3), ca.MEM_HOST), a, dirn)
        check_msg(str(ei.value), "ShiftCoordinate", "Inputs have different Size", "II")


@gpu_only
@pytest.mark.parametrize("row", GRID_OPS, ids=_row_id)
def test_memtype_mismatch(row):
    name, kinds, extra = row
    fn = getattr(ca, name)
    g = _grid(G3)
    for odd in (ca.MEM_DEVICE, ca.MEM_HOST_PINNED):
        for pos in range(len(kinds)):
            objs = [_obj(k, g, odd if i == pos else ca.MEM_HOST, seed=i) for i, k in enumerate(kinds)]
            with pytest.raises(RuntimeError) as ei:
                fn(*objs, *extra)
            check_msg(str(ei.value), name, "memory types are not compatible", kinds)


@gpu_only
def test_memtype_mismatch_unchecked_grids():
    """The operators without a grid check still check memory types."""
    h, d = ca.MEM_HOST, ca.MEM_DEVICE
    g3, g2 = _grid(G3), _grid(G2)
    cases = [("Resample", lambda: ca.Resample(_obj("I", g2, h), _obj("I", g3, d))),
             ("Resample", lambda: ca.Resample(_obj("F", g2, d), _obj("F", g3, h))),
             ("ResampleWorld", lambda: ca.ResampleWorld(_obj("I", g2, h), _obj("I", g3, d))),
             ("SplatWorld", lambda: ca.SplatWorld(_obj("I", g2, d), _obj("I", g3, h))),
             ("SubVol", lambda: ca.SubVol(_obj("I", g2, h), _obj("I", g3, d), ca.Vec3Di(0, 0, 0))),
             ("SetSubVol_I", lambda: ca.SetSubVol_I(_obj("F", g2, d), _obj("F", g3, h), ca.Vec3Di(0, 0, 0))),
             ("Convolve", lambda: ca.Convolve(_obj("I", g3, h), _obj("I", g3, h),
                                              image_from(np.ones((3, 1, 1)), mem=d))),
             ("ShiftCoordinate", lambda: ca.ShiftCoordinate(_obj("I", grid(7, 9, 8), d), _obj("I", g3, h), True))]
    for name, call in cases:
        with pytest.raises(RuntimeError) as ei:
            call()
        check_msg(str(ei.value), name, "memory types are not compatible")


def _empty(kind, mem):
    return ca.Image3D(mem) if kind == "I" else ca.Field3D(mem)


@pytest.mark.parametrize("row", GRID_OPS, ids=_row_id)
def test_memtype_mismatch_empty_operands(row):
    """The mismatch checks on every machine, GPU or not: empty images and
    fields need no allocation in any memory type, so one empty device (or
    pinned) operand among empty host ones raises the mismatch error."""
    name, kinds, extra = row
    fn = getattr(ca, name)
    for odd in (ca.MEM_DEVICE, ca.MEM_HOST_PINNED):
        for pos in range(len(kinds)):
            objs = [_empty(k, odd if i == pos else ca.MEM_HOST) for i, k in enumerate(kinds)]
            with pytest.raises(RuntimeError) as ei:
                fn(*objs, *extra)
            check_msg(str(ei.value), name, "memory types are not compatible", kinds)
    fn(*[_empty(k, ca.MEM_HOST) for k in kinds], *extra)  # matching operands pass the checks


def test_memtype_mismatch_unchecked_grids_empty_operands():
    """The operators without a grid check still check memory types (empty
    operands: runs without a GPU)."""
    h, d = ca.MEM_HOST, ca.MEM_DEVICE
    I, F = (lambda m: ca.Image3D(m)), (lambda m: ca.Field3D(m))
    cases = [("Resample", lambda: ca.Resample(I(h), I(d))),
             ("Resample", lambda: ca.Resample(F(d), F(h))),
             ("ResampleWorld", lambda: ca.ResampleWorld(I(h), I(d))),
             ("SplatWorld", lambda: ca.SplatWorld(I(d), I(h))),
             ("SubVol", lambda: ca.SubVol(I(h), I(d), ca.Vec3Di(0, 0, 0))),
             ("SetSubVol_I", lambda: ca.SetSubVol_I(F(d), F(h), ca.Vec3Di(0, 0, 0))),
             ("Convolve", lambda: ca.Convolve(I(h), I(h), I(d))),
             ("ShiftCoordinate", lambda: ca.ShiftCoordinate(I(d), I(h), True))]
    for name, call in cases:
        with pytest.raises(RuntimeError) as ei:
            call()
        check_msg(str(ei.value), name, "memory types are not compatible")


@pytest.mark.parametrize("row", GRID_OPS, ids=_row_id)
def test_wrong_types(row):
    name, kinds, extra = row
    fn = getattr(ca, name)
    g = _grid(G2)
    for pos in range(len(kinds)):
        for bad in (None, "x", 1.5, np.zeros((11, 10, 1), np.float32)):
            objs = [_obj(k, g, seed=i) for i, k in enumerate(kinds)]
            objs[pos] = bad
            with pytest.raises(TypeError):
                fn(*objs, *extra)
        swapped = kinds[:pos] + ("F" if kinds[pos] == "I" else "I") + kinds[pos + 1:]
        if swapped not in KNOWN[name]:
            objs = [_obj(k, g, seed=i) for i, k in enumerate(swapped)]
            with pytest.raises(TypeError):
                fn(*objs, *extra)


def test_wrong_types_other_ops():
    g = _grid(G2)
    im, f = _obj("I", g), _obj("F", g)
    for call in (lambda: ca.Gradient(_obj("F", g), None), lambda: ca.Gradient(_obj("F", g), "x"),
                 lambda: ca.Gradient(None, f.x), lambda: ca.Resample(im, f), lambda: ca.Resample(f, None),
                 lambda: ca.ResampleWorld(im, f), lambda: ca.SplatWorld(im, f),
                 lambda: ca.SubVol(im, f, ca.Vec3Di(0, 0, 0)), lambda: ca.SubVol(im, im, ca.Vec3Df(0, 0, 0)),
                 lambda: ca.SetSubVol_I(f, im, ca.Vec3Di(0, 0, 0)), lambda: ca.ShiftCoordinate(f, f, True),
                 lambda: ca.Convolve(im, im, f), lambda: ca.SetToIdentity(im), lambda: ca.SetToZero(None),
                 lambda: ca.HtoV_I(im), lambda: ca.VtoH_I(None), lambda: ca.ReprojectToUnitVec(im),
                 lambda: ca.NormalizeSafe_I(im, 0.1), lambda: ca.InverseZerothOrder_I(im),
                 lambda: ca.ComposeTranslation(im, im, (1, 2, 3)), lambda: ca.ComposeHH(f, f, f, "CLAMP"),
                 lambda: ca.ApplyH(im, im, f, ca.BACKGROUND_STRATEGY_CLAMP, None)):
        with pytest.raises(TypeError):
            call()


# ---------------------------------------------------------------------------
# background strategies and interpolation

IMAGE_MSG = "Unknown/unimplemented background strategy"
RESAMPLE_MSG = "Unknown background strategy"
FIELD_MSG = "Unknown/unsupported background strategy"
NOT_ENUMS = [7, -1, 100]


def _image_bg_calls(g):
    i = lambda: _obj("I", g)
    f = lambda: _obj("F", g)
    return [("ApplyH", lambda bg: ca.ApplyH(i(), i(), f(), bg)),
            ("ApplyV", lambda bg: ca.ApplyV(i(), i(), f(), 1.0, bg)),
            ("ApplyVInv", lambda bg: ca.ApplyVInv(i(), i(), f(), 0.5, bg, ca.INTERP_NN)),
            ("ComposeTranslation", lambda bg: ca.ComposeTranslation(i(), i(), V, bg, ca.INTERP_CUBIC))]


def _resample_bg_calls(g):
    g2 = _grid(G2)
    return [("Resample", lambda bg: ca.Resample(_obj("I", g2), _obj("I", g), bg)),
            ("Resample", lambda bg: ca.Resample(_obj("I", g), _obj("I", g), bg, ca.INTERP_LINEAR, False)),
            ("ResampleWorld", lambda bg: ca.ResampleWorld(_obj("I", g2), _obj("I", g), bg)),
            ("SplatWorld", lambda bg: ca.SplatWorld(_obj("I", g2), _obj("I", g), bg)),
            ("SplatWorld", lambda bg: ca.SplatWorld(_obj("I", g2), _obj("I", g), _obj("I", g2), bg))]


def _hfield_bg_calls(g):
    f = lambda: _obj("F", g)
    return [("ComposeHH", lambda bg: ca.ComposeHH(f(), f(), f(), bg)),
            ("ComposeHV", lambda bg: ca.ComposeHV(f(), f(), f(), 1.0, bg)),
            ("ComposeHVInv", lambda bg: ca.ComposeHVInv(f(), f(), f(), 2.0, bg))]


def _vfield_bg_calls(g):
    f = lambda: _obj("F", g)
    return [("ComposeVH", lambda bg: ca.ComposeVH(f(), f(), f(), 1.0, bg)),
            ("ComposeVInvH", lambda bg: ca.ComposeVInvH(f(), f(), f(), 1.0, bg)),
            ("Ad", lambda bg: ca.Ad(f(), f(), f(), bg)),
            ("CoAd", lambda bg: ca.CoAd(f(), f(), f(), bg))]


def _field_bg_calls(g):
    f = lambda: _obj("F", g)
    g2 = _grid(G2)
    return [("ApplyH", lambda bg: ca.ApplyH(f(), f(), f(), bg)),
            ("ApplyV", lambda bg: ca.ApplyV(f(), f(), f(), bg)),
            ("ApplyVInv", lambda bg: ca.ApplyVInv(f(), f(), f(), bg, 1.0)),
            ("ComposeTranslation", lambda bg: ca.ComposeTranslation(f(), f(), V, bg)),
            ("ComposeHTranslation", lambda bg: ca.ComposeHTranslation(f(), f(), V, bg)),
            ("ComposeVTranslation", lambda bg: ca.ComposeVTranslation(f(), f(), V, bg)),
            ("Resample", lambda bg: ca.Resample(_obj("F", g2), f(), bg)),
            ("ResampleH", lambda bg: ca.ResampleH(_obj("F", g2), f(), bg)),
            ("ResampleV", lambda bg: ca.ResampleV(_obj("F", g2), f(), bg, True))]


#: family -> (calls, refused strategies, accepted strategies, message)
FAMILIES = {
    "image": (_image_bg_calls, ["ID", "PARTIAL_ID", "VAL"], ["CLAMP", "WRAP", "ZERO", "PARTIAL_ZERO"], IMAGE_MSG),
    "resample": (_resample_bg_calls, ["ID", "PARTIAL_ID", "VAL"], ["CLAMP", "WRAP", "ZERO", "PARTIAL_ZERO"],
                 RESAMPLE_MSG),
    "hfield": (_hfield_bg_calls, ["ZERO", "PARTIAL_ZERO", "WRAP", "VAL"], ["CLAMP", "ID", "PARTIAL_ID"], FIELD_MSG),
    "vfield": (_vfield_bg_calls, ["ID", "PARTIAL_ID", "VAL"], ["CLAMP", "WRAP", "ZERO", "PARTIAL_ZERO"], FIELD_MSG),
    "field": (_field_bg_calls, ["VAL"], ["CLAMP", "WRAP", "ZERO", "PARTIAL_ZERO", "ID", "PARTIAL_ID"], FIELD_MSG),
}


@pytest.mark.parametrize("gp", [G3, G2], ids=["3d", "2d"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_background_strategies(family, gp):
    calls, refused, accepted, msg = FAMILIES[family]
    for name, call in calls(_grid(gp)):
        for bg in [BG[b] for b in refused] + NOT_ENUMS:
            with pytest.raises(RuntimeError) as ei:
                call(bg)
            check_msg(str(ei.value), name, msg)
        for b in accepted:
            call(BG[b])


def test_unknown_interpolation():
    g, g2 = _grid(G3), _grid(G2)
    i, f = (lambda: _obj("I", g)), (lambda: _obj("F", g))
    calls = [("ApplyH", lambda it: ca.ApplyH(i(), i(), f(), BG["CLAMP"], it)),
             ("ApplyV", lambda it: ca.ApplyV(i(), i(), f(), 1.0, BG["ZERO"], it)),
             ("ApplyVInv", lambda it: ca.ApplyVInv(i(), i(), f(), 1.0, BG["WRAP"], it)),
             ("ComposeTranslation", lambda it: ca.ComposeTranslation(i(), i(), V, BG["CLAMP"], it)),
             ("Resample", lambda it: ca.Resample(_obj("I", g2), i(), BG["CLAMP"], it)),
             ("Resample", lambda it: ca.Resample(i(), i(), BG["CLAMP"], it)),
             ("ResampleWorld", lambda it: ca.ResampleWorld(_obj("I", g2), i(), BG["CLAMP"], it))]
    for name, call in calls:
        for it in (3, -1, 42):
            with pytest.raises(RuntimeError) as ei:
                call(it)
            check_msg(str(ei.value), name, "Unknown interpolation strategy")
        for it in (ca.INTERP_NN, ca.INTERP_LINEAR, ca.INTERP_CUBIC):
            call(it)


# ---------------------------------------------------------------------------
# finite-difference enums

def _diff_calls(g):
    i, f = (lambda: _obj("I", g)), (lambda: _obj("F", g))
    return [
        ("FiniteDiff", lambda diff, bc: ca.FiniteDiff(i(), i(), ca.DIM_Z, diff, bc)),
        ("Gradient", lambda diff, bc: ca.Gradient(f(), i(), diff, bc)),
        ("Gradient", lambda diff, bc: ca.Gradient(f(), _KEEP_FIELD.x, diff, bc)),
        ("Gradient2", lambda diff, bc: ca.Gradient2(f(), i(), diff, bc)),
        ("GradientMask", lambda diff, bc: ca.GradientMask(f(), i(), i(), diff, bc)),
        ("GradientMag", lambda diff, bc: ca.GradientMag(i(), i(), diff, bc)),
        ("Divergence", lambda diff, bc: ca.Divergence(i(), f(), diff, bc)),
        ("JacDetH", lambda diff, bc: ca.JacDetH(i(), f(), diff, bc)),
        ("JacDetHVoxel", lambda diff, bc: ca.JacDetHVoxel(i(), f(), diff, bc)),
        ("Jacobian", lambda diff, bc: ca.Jacobian(f(), f(), f(), f(), diff, bc)),
    ]


_KEEP_FIELD = _obj("F", _grid(G3))


def test_bad_diff_and_bc():
    g = _grid(G3)  # the raw-array form reads _KEEP_FIELD.x on this grid
    for name, call in _diff_calls(g):
        for diff in (3, -1):
            with pytest.raises(RuntimeError) as ei:
                call(diff, ca.BC_CLAMP)
            check_msg(str(ei.value), name, "unknown DiffT")
        for bc in (3, -1, 9):
            with pytest.raises(RuntimeError) as ei:
                call(ca.DIFF_FORWARD, bc)
            check_msg(str(ei.value), name, "unknown BoundaryCondT")
    i, f = (lambda: _obj("I", g)), (lambda: _obj("F", g))
    for name, call in (("GradFor", lambda bc: ca.GradFor(f(), i(), bc)),
                       ("DivBack", lambda bc: ca.DivBack(i(), f(), bc))):
        for bc in (3, -1):
            with pytest.raises(RuntimeError) as ei:
                call(bc)
            check_msg(str(ei.value), name, "unknown BoundaryCondT")


def test_bad_dim_and_op():
    g = _grid(G2)
    i = lambda: _obj("I", g)
    for dim in (3, -1, 17):
        with pytest.raises(RuntimeError) as ei:
            ca.FiniteDiff(i(), i(), dim)
        check_msg(str(ei.value), "FiniteDiff", "unknown DimT")
        with pytest.raises(RuntimeError) as ei:
            ca.UpwindDiff(i(), i(), i(), dim)
        check_msg(str(ei.value), "UpwindDiff", "unknown DimT")
    for op in (2, -1):
        with pytest.raises(RuntimeError) as ei:
            ca.FiniteDiff(i(), i(), ca.DIM_X, ca.DIFF_CENTRAL, ca.BC_CLAMP, False, op)
        check_msg(str(ei.value), "FiniteDiff", "Unimplemented math operation for specified type")


def test_gradient_mask_wrap():
    g = _grid(G3)
    out = _obj("F", g)
    before = _snapshot(out)
    for diff in (ca.DIFF_FORWARD, ca.DIFF_BACKWARD, ca.DIFF_CENTRAL):
        with pytest.raises(RuntimeError) as ei:
            ca.GradientMask(out, _obj("I", g), _obj("I", g), diff, ca.BC_WRAP)
        check_msg(str(ei.value), "GradientMask", "BC_WRAP boundary condition unimplemented for masked gradient",
                  "FII")
    assert all(np.array_equal(x, y) for x, y in zip(before, _snapshot(out)))


def test_gradient_raw_pointer_errors():
    g = _grid(G3)
    f = _obj("F", g)
    for comp in (f.x, f.y, f.z):
        with pytest.raises(RuntimeError) as ei:
            ca.Gradient(f, comp)
        check_msg(str(ei.value), "Gradient", "Gradient: the input array is a component of the output")


# ---------------------------------------------------------------------------
# grids enlarged through live references

def _enlarge(o, axis="x"):
    s = o.size()
    setattr(s, axis, 1000)
    assert getattr(o.size(), axis) == 1000  # the live reference changed the object


ENLARGED_MSGS = ("grid too large for current image", "Grid is larger than pre-allocated memory",
                 "Input grids are not equal")


@pytest.mark.parametrize("row", GRID_OPS, ids=_row_id)
def test_enlarged_through_live_reference(row):
    """Every array enlarged the same way (equal grids, capacity exceeded), or
    only one (grid mismatch): an error, never a read or write past the buffer."""
    name, kinds, extra = row
    fn = getattr(ca, name)
    g = _grid(G3)
    for axis in ("x", "y"):
        objs = [_obj(k, g, seed=i) for i, k in enumerate(kinds)]
        for o in objs:
            _enlarge(o, axis)
        with pytest.raises(RuntimeError) as ei:
            fn(*objs, *extra)
        msg = str(ei.value)
        assert msg.startswith("PyCA::Opers::%s(" % name), msg
        assert any(m in msg for m in ENLARGED_MSGS[:2]), msg
        for pos in range(len(kinds)):
            objs = [_obj(k, g, seed=i) for i, k in enumerate(kinds)]
            _enlarge(objs[pos], axis)
            with pytest.raises(RuntimeError) as ei:
                fn(*objs, *extra)
            assert any(m in str(ei.value) for m in ENLARGED_MSGS), str(ei.value)


def test_enlarged_unchecked_grid_ops():
    """The operators whose arguments may have different grids check each
    array's capacity."""
    g3, g2 = _grid(G3), _grid(G2)
    k = lambda: image_from(np.ones((3, 1, 1)))
    cases = [
        ("Resample", "II", lambda a, b: ca.Resample(a, b)),
        ("Resample", "FF", lambda a, b: ca.Resample(a, b)),
        ("ResampleH", "FF", lambda a, b: ca.ResampleH(a, b)),
        ("ResampleV", "FF", lambda a, b: ca.ResampleV(a, b)),
        ("ResampleWorld", "II", lambda a, b: ca.ResampleWorld(a, b)),
        ("SplatWorld", "II", lambda a, b: ca.SplatWorld(a, b)),
        ("SubVol", "II", lambda a, b: ca.SubVol(a, b, ca.Vec3Di(1, 0, 0))),
        ("SubVol", "FF", lambda a, b: ca.SubVol(a, b, ca.Vec3Di(1, 0, 0))),
        ("SetSubVol_I", "II", lambda a, b: ca.SetSubVol_I(a, b, ca.Vec3Di(1, 0, 0))),
        ("SetSubVol_I", "FF", lambda a, b: ca.SetSubVol_I(a, b, ca.Vec3Di(1, 0, 0))),
        ("Convolve", "II", lambda a, b: ca.Convolve(a, b, k())),
    ]
    for name, kinds, call in cases:
        for pos in (0, 1):
            a, b = _obj(kinds[0], g2), _obj(kinds[1], g3 if name != "Convolve" else g2)
            _enlarge((a, b)[pos])
            with pytest.raises(RuntimeError) as ei:
                call(a, b)
            msg = str(ei.value)
            assert msg.startswith("PyCA::Opers::%s(" % name), msg
            assert any(m in msg for m in ENLARGED_MSGS), msg
    # the kernel of Convolve and the weights of SplatWorld
    a, b, kk = _obj("I", g2), _obj("I", g2), k()
    _enlarge(kk, "y")
    with pytest.raises(RuntimeError):
        ca.Convolve(a, b, kk)
    w = _obj("I", g2)
    _enlarge(w)
    with pytest.raises(RuntimeError):
        ca.SplatWorld(_obj("I", g2), _obj("I", g3), w)
    # ShiftCoordinate: the input enlarged, the output of the permuted (enlarged) size
    a = _obj("I", g3)
    _enlarge(a)
    s = a.size()
    out = ca.Image3D(grid(s.z, s.x, s.y), ca.MEM_HOST)
    with pytest.raises(RuntimeError) as ei:
        ca.ShiftCoordinate(out, a, True)
    assert "grid too large for current image" in str(ei.value)
    # the raw-array Gradient: the output's capacity is checked
    f, o = _obj("F", g3), _obj("F", g3)
    _enlarge(o)
    with pytest.raises(RuntimeError) as ei:
        ca.Gradient(o, f.x)
    assert "Grid is larger than pre-allocated memory" in str(ei.value)


# ---------------------------------------------------------------------------
# zero-size grids

@pytest.mark.parametrize("size", [(0, 0, 0), (0, 5, 4), (6, 0, 1)])
@pytest.mark.parametrize("row", GRID_OPS, ids=_row_id)
def test_zero_size(row, size):
    """Nothing to do: no error, no crash."""
    name, kinds, extra = row
    g = grid(*size)
    objs = [ca.Image3D(g, ca.MEM_HOST) if k == "I" else ca.Field3D(g, ca.MEM_HOST) for k in kinds]
    getattr(ca, name)(*objs, *extra)


def test_zero_size_other_ops():
    """Resampling an empty image or field onto a non-empty grid gives 0 (no
    voxel to sample; the legacy read out of bounds); splatting nothing adds
    nothing; a sub-volume of nothing is 0."""
    z, g = grid(0, 0, 0), grid(4, 3, 2)
    im0, f0 = ca.Image3D(z, ca.MEM_HOST), ca.Field3D(z, ca.MEM_HOST)
    out = ca.Image3D(g, ca.MEM_HOST)
    for call in (lambda: ca.Resample(out, im0), lambda: ca.Resample(out, im0, BG["WRAP"], ca.INTERP_CUBIC),
                 lambda: ca.Resample(out, im0, BG["ZERO"], ca.INTERP_NN, False),
                 lambda: ca.Resample(out, ca.Image3D(grid(0, 3, 2), ca.MEM_HOST)),
                 lambda: ca.ResampleWorld(out, im0), lambda: ca.ResampleWorld(out, im0, BG["WRAP"]),
                 lambda: ca.SubVol(out, im0, ca.Vec3Di(0, 0, 0))):
        ca.SetMem(out, 5.0)
        call()
        assert not to_np(out).any()
    fo = ca.Field3D(g, ca.MEM_HOST)
    for name in ("Resample", "ResampleH", "ResampleV"):
        for bg in ("CLAMP", "WRAP", "PARTIAL_ID"):
            ca.SetMem(fo, 5.0)
            getattr(ca, name)(fo, f0, BG[bg], True)
            assert not np.any(to_np(fo)), name
    # the strategy and interpolation checks still apply to an empty input
    with pytest.raises(RuntimeError) as ei:
        ca.ResampleWorld(out, im0, BG["ID"])
    check_msg(str(ei.value), "ResampleWorld", RESAMPLE_MSG)
    with pytest.raises(RuntimeError) as ei:
        ca.ResampleWorld(out, im0, BG["CLAMP"], 5)
    check_msg(str(ei.value), "ResampleWorld", "Unknown interpolation strategy")
    with pytest.raises(RuntimeError) as ei:
        ca.Resample(fo, f0, BG["VAL"])
    check_msg(str(ei.value), "Resample", FIELD_MSG)
    for weights in (False, True):
        ca.SetMem(out, 5.0)
        if weights:
            w = ca.Image3D(g, ca.MEM_HOST)
            ca.SetMem(w, 1.0)
            ca.SplatWorld(out, im0, w)
            assert (to_np(w) == 1.0).all()
        else:
            ca.SplatWorld(out, im0)
        assert (to_np(out) == 5.0).all()
    # empty outputs of non-empty inputs
    a = image_from(np.ones((4, 3, 2)))
    for call in (lambda: ca.Resample(im0, a), lambda: ca.ResampleWorld(im0, a), lambda: ca.SplatWorld(im0, a),
                 lambda: ca.SubVol(im0, a, ca.Vec3Di(1, 1, 0)), lambda: ca.SetSubVol_I(im0, a, ca.Vec3Di(0, 0, 0)),
                 lambda: ca.SetSubVol_I(a, im0, ca.Vec3Di(0, 0, 0)),
                 lambda: ca.Resample(f0, ca.Field3D(g, ca.MEM_HOST)),
                 lambda: ca.ShiftCoordinate(im0, im0, False)):
        call()
    assert (to_np(a) == 1.0).all()
    # a kernel without voxels is even-sized
    with pytest.raises(RuntimeError) as ei:
        ca.Convolve(out, image_from(np.ones((4, 3, 2))), im0)
    check_msg(str(ei.value), "Convolve", "Only odd-sized kernels allowed in convolution")


# ---------------------------------------------------------------------------
# non-finite and huge sample points (interp.h: taken as lying far outside the
# grid, NaN as -2^24), so no input makes an index overflow

def test_non_finite_points():
    g = _grid(G3)
    n = np.prod(G3["size"])
    rng = np.random.default_rng(3)
    a = rng.uniform(1, 2, G3["size"]).astype(np.float32)
    h = _obj("F", g)
    ca.SetToIdentity(h)
    bad = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 3e9, -3e9, 2.0 ** 31], np.float32)
    hv = [np.array(c) for c in h.asnp()]
    idx = rng.choice(n, (3, 40), replace=False)
    for c in range(3):
        hv[c].reshape(-1, order="F")[idx[c]] = np.resize(bad, 40)
        h.asnp()[c][...] = hv[c]
    touched = np.zeros(n, bool)
    touched[idx.ravel()] = True
    touched = touched.reshape(G3["size"], order="F")
    im = image_from(a, g)
    for bg in ("ZERO", "PARTIAL_ZERO", "CLAMP", "WRAP"):
        for it in (ca.INTERP_NN, ca.INTERP_LINEAR, ca.INTERP_CUBIC):
            out = _obj("I", g)
            ca.ApplyH(out, im, h, BG[bg], it)
            got = to_np(out)
            assert np.isfinite(got).all(), (bg, it)
            assert np.array_equal(got[~touched], a[~touched]), (bg, it)
            if bg in ("ZERO", "PARTIAL_ZERO"):
                assert not got[touched].any(), (bg, it)
            elif bg == "CLAMP" and it == ca.INTERP_NN:
                assert set(np.unique(got[touched])) <= set(np.unique(a)), bg
    F = _obj("F", g, seed=4)
    Fv = np.stack(to_np(F))
    for bg in ("ZERO", "PARTIAL_ZERO", "CLAMP", "WRAP", "ID", "PARTIAL_ID"):
        out = _obj("F", g)
        ca.ApplyH(out, F, h, BG[bg])
        got = np.stack(to_np(out))
        assert np.isfinite(got).all(), bg
        assert np.array_equal(got[:, ~touched], Fv[:, ~touched]), bg
        if bg in ("ZERO", "PARTIAL_ZERO"):
            assert not got[:, touched].any(), bg
        elif bg in ("ID", "PARTIAL_ID"):
            # the identity fallback: the sanitised point (|p| <= 2^24, NaN as -2^24)
            assert np.abs(got).max() <= 2.0 ** 24, bg
        else:
            assert np.abs(got).max() <= np.abs(Fv).max(), bg
    out = _obj("I", g)
    ca.Splat(out, h, im)
    got = to_np(out)
    assert np.isfinite(got).all()
    # the mass of the far-away points is dropped; the rest is the identity splat
    assert float(got.sum(dtype=np.float64)) == pytest.approx(float(a[~touched].sum(dtype=np.float64)), rel=1e-6)
    for normalize in (False, True):
        ca.Splat(out, h, im, normalize)
        assert np.isfinite(to_np(out)).all()
    f = _obj("F", g)
    for call in (lambda: ca.ComposeHH(f, F, h), lambda: ca.ComposeVH(f, F, h), lambda: ca.CoAd(f, h, F),
                 lambda: ca.Ad(f, h, F), lambda: ca.SplatV(f, h, F, True), lambda: ca.FixedPointInverse(f, h, 2),
                 lambda: ca.UpdateInverse(f, _obj("F", g), h, F, 2)):
        call()  # no crash; the values involve the non-finite data
