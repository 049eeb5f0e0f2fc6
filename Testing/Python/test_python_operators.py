"""Python operators of Image3D and Field3D (Code/SWIG/type_opers.i) against
NumPy: binary, reflected, in-place and unary forms for every supported
operand-type combination, on a 3-D and a 2-D odd grid with anisotropic
spacing, for every usable memory type; plus result types, identity, grid and
memory-type errors, and unsupported operands (TypeError, never a crash)."""
import operator

import numpy as np
import pytest

import PyCA.Core as ca
from conftest import field_from, gpu_only, grid, image_from, to_np, usable_mem_types

GRIDS = {
    "3d": dict(size=(17, 19, 23), sp=(0.7, 1.3, 2.1), org=(1.0, -2.0, 0.5)),
    "2d": dict(size=(31, 33, 1), sp=(0.7, 1.3, 2.1), org=(0.0, 0.0, 0.0)),
}
SEEDS = {"3d": 21, "2d": 22}

#: Number operands: Python int and float, NumPy float32 and float64 (never 0:
#: they are also divisors).
NUMBERS = {"int": 3, "float": -1.5, "f32": np.float32(0.75), "f64": np.float64(-2.25)}

#: Vec3D operands of fields (nonzero components: they are also divisors).
VECS = {"vec": lambda: ca.Vec3Df(1.5, -0.5, 2.25), "veci": lambda: ca.Vec3Di(2, -3, 1)}

#: name, Python operator, in-place operator, NumPy reference.
BINARY = [
    ("add", operator.add, operator.iadd, np.add),
    ("sub", operator.sub, operator.isub, np.subtract),
    ("mul", operator.mul, operator.imul, np.multiply),
    ("div", operator.truediv, operator.itruediv, np.divide),
]

#: (left, right) operand kinds of the supported binary forms; "num" and the
#: Vec3D kinds expand over NUMBERS and VECS.
COMBOS = [
    ("im", "im"), ("im", "num"), ("num", "im"),                     # Image3D
    ("fld", "fld"), ("fld", "im"), ("fld", "vec"), ("fld", "veci"),  # Field3D
    ("fld", "num"),
    ("im", "fld"), ("vec", "fld"), ("veci", "fld"), ("num", "fld"),  # reflected
]
#: (self, operand) kinds of the supported in-place forms.
INPLACE = [("im", "im"), ("im", "num"),
           ("fld", "fld"), ("fld", "im"), ("fld", "vec"), ("fld", "veci"), ("fld", "num")]

BAD_OPERANDS = {"None": None, "str": "abc", "list": [1.0, 2.0, 3.0], "tuple": (1.0, 2.0, 3.0),
                "object": object(), "complex": 1 + 2j, "ndarray": np.ones(3, np.float32)}


def mem_id(m):
    return {ca.MEM_HOST: "host", ca.MEM_HOST_PINNED: "pinned", ca.MEM_DEVICE: "device"}[m]


def expand(kind):
    """The concrete operand names of a kind."""
    if kind == "num":
        return list(NUMBERS)
    return [kind]


def combo_params(combos):
    out = []
    for l, r in combos:
        for ln in expand(l):
            for rn in expand(r):
                out.append((ln, rn))
    return out


class Data:
    """Seeded random operands on one grid and memory type. Left operands get
    values in [-1, 1]; right operands (divisors) |x| in [0.5, 2]."""

    def __init__(self, tag, mem):
        p = GRIDS[tag]
        self.tag, self.mem, self.shape = tag, mem, p["size"]
        self.g = grid(*p["size"], sp=p["sp"], org=p["org"])
        rng = np.random.default_rng(SEEDS[tag])
        left = lambda: rng.uniform(-1, 1, self.shape).astype(np.float32)
        right = lambda: (rng.uniform(0.5, 2, self.shape) * rng.choice([-1, 1], self.shape)).astype(np.float32)
        self.arrays = {("im", "l"): left(), ("im", "r"): right(),
                       ("fld", "l"): np.stack([left() for _ in range(3)], -1),
                       ("fld", "r"): np.stack([right() for _ in range(3)], -1)}

    def operand(self, name, side):
        """(PyCA operand, NumPy value) for an operand name on side 'l' or 'r'."""
        if name in NUMBERS:
            return NUMBERS[name], np.float32(NUMBERS[name])
        if name in VECS:
            v = VECS[name]()
            return v, np.float32([v.x, v.y, v.z])
        a = self.arrays[(name, side)]
        if name == "im":
            return image_from(a, self.g, self.mem), a
        return field_from([a[..., d] for d in range(3)], self.g, self.mem), a


@pytest.fixture(params=[(t, m) for t in GRIDS for m in usable_mem_types],
                ids=lambda p: "%s-%s" % (p[0], mem_id(p[1])))
def data(request):
    return Data(*request.param)


def as_np(obj):
    """Image3D -> (X, Y, Z); Field3D -> (X, Y, Z, 3)."""
    r = to_np(obj)
    return np.stack(r, -1) if isinstance(obj, ca.Field3D) else r


def np_operand(value, name, other_name):
    """An image combined with a field broadcasts over the components."""
    if name == "im" and other_name == "fld":
        return value[..., None]
    return value


def close(got, want, rtol=2e-6):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)


def same_grid(a, b):
    return (tuple(a.size()) == tuple(b.size()) and tuple(a.spacing()) == tuple(b.spacing())
            and tuple(a.origin()) == tuple(b.origin()))


def check_new_result(r, like, operands, want_type):
    """r is a new, unmanaged want_type with like's grid and memory type."""
    assert type(r) is want_type
    assert all(r is not o for o in operands)
    assert same_grid(r.grid(), like.grid())
    assert r.memType() == like.memType()


# ---- binary and reflected forms --------------------------------------------------

@pytest.mark.parametrize("name,op,iop,npop", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("lname,rname", combo_params(COMBOS),
                         ids=["%s-%s" % c for c in combo_params(COMBOS)])
def test_binary(data, name, op, iop, npop, lname, rname):
    a, na = data.operand(lname, "l")
    b, nb = data.operand(rname, "r")
    before = [as_np(x) for x in (a, b) if isinstance(x, (ca.Image3D, ca.Field3D))]
    r = op(a, b)
    # result: a Field3D if either operand is one; grid/memory from the left array
    arrays = [x for x in (a, b) if isinstance(x, (ca.Image3D, ca.Field3D))]
    want_type = ca.Field3D if any(isinstance(x, ca.Field3D) for x in arrays) else ca.Image3D
    check_new_result(r, arrays[0], (a, b), want_type)
    want = npop(np_operand(na, lname, rname), np_operand(nb, rname, lname)).astype(np.float32)
    close(as_np(r), want)
    # the operands are unchanged
    after = [as_np(x) for x in arrays]
    for x, y in zip(before, after):
        np.testing.assert_array_equal(x, y)


def test_div_alias():
    for cls in (ca.Image3D, ca.Field3D):
        assert cls.__div__ is cls.__truediv__
        assert cls.__rdiv__ is cls.__rtruediv__
        assert cls.__idiv__ is cls.__itruediv__


def test_div_alias_computes(data):
    a, na = data.operand("im", "l")
    b, nb = data.operand("im", "r")
    close(as_np(a.__div__(b)), na / nb)
    close(as_np(a.__rdiv__(2.0)), np.float32(2.0) / na)


# ---- in-place forms ----------------------------------------------------------------

def buffers(x):
    return (x.rawptr(),) if isinstance(x, ca.Image3D) else (x.rawptr_x(), x.rawptr_y(), x.rawptr_z())


@pytest.mark.parametrize("name,op,iop,npop", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("lname,rname", combo_params(INPLACE),
                         ids=["%s-%s" % c for c in combo_params(INPLACE)])
def test_inplace(data, name, op, iop, npop, lname, rname):
    a, na = data.operand(lname, "l")
    b, nb = data.operand(rname, "r")
    ident, bufs, typ = id(a), buffers(a), type(a)
    r = iop(a, b)
    assert r is a and id(r) == ident and type(r) is typ
    assert buffers(r) == bufs, "an in-place operator reallocated"
    want = npop(na, np_operand(nb, rname, lname)).astype(np.float32)
    close(as_np(a), want)


def test_inplace_statement_keeps_identity(data):
    a, na = data.operand("im", "l")
    f, nf = data.operand("fld", "l")
    keep_a, keep_f = a, f
    a += 2
    a -= np.float32(0.5)
    a *= 3.0
    a /= np.float64(4.0)
    f += ca.Vec3Df(1, 2, 3)
    f *= keep_a
    f /= 2
    f -= 1.0
    assert a is keep_a and f is keep_f
    wa = (((na + np.float32(2)) - np.float32(0.5)) * np.float32(3)) / np.float32(4)
    close(as_np(a), wa)
    wf = ((((nf + np.float32([1, 2, 3])) * wa[..., None]) / np.float32(2)) - np.float32(1))
    close(as_np(f), wf)


@pytest.fixture
def count_allocations(monkeypatch):
    """Counts Image3D/Field3D constructions (Managed ones excluded)."""
    counts = {"n": 0}
    for cls in (ca.Image3D, ca.Field3D):
        orig = cls.__init__

        def init(self, *args, _orig=orig, **kw):
            counts["n"] += 1
            _orig(self, *args, **kw)
        monkeypatch.setattr(cls, "__init__", init)
    return counts


def test_allocation_counts(data, count_allocations):
    """In-place forms allocate nothing; every binary form exactly one object."""
    a, _ = data.operand("im", "l")
    b, _ = data.operand("im", "r")
    f, _ = data.operand("fld", "l")
    h, _ = data.operand("fld", "r")
    v = ca.Vec3Df(1, 2, 3)
    count_allocations["n"] = 0
    for _, _, iop, _ in BINARY:
        iop(a, b), iop(a, 2.0), iop(f, h), iop(f, b), iop(f, v), iop(f, 2)
    a **= 1.0
    assert count_allocations["n"] == 0
    forms = [lambda: a + b, lambda: 2 - a, lambda: 2 / a, lambda: a ** 2, lambda: 2.0 ** a,
             lambda: -a, lambda: +a, lambda: f * b, lambda: b * f, lambda: b - f, lambda: b / f,
             lambda: v - f, lambda: 1.0 / f, lambda: v / f, lambda: -f, lambda: +f, lambda: f * h]
    for form in forms:
        count_allocations["n"] = 0
        form()
        assert count_allocations["n"] == 1


# ---- powers ----------------------------------------------------------------------

POW_EXPONENTS = {"int2": 2, "int3": 3, "float": 0.5, "neg": -1.5, "f32": np.float32(2.5),
                 "f64": np.float64(-0.25)}


@pytest.mark.parametrize("ename", list(POW_EXPONENTS))
def test_pow(data, ename):
    c = POW_EXPONENTS[ename]
    integral = float(c).is_integer()
    # non-integral exponents need a positive base (as in NumPy: nan otherwise)
    src = data.arrays[("im", "l")] if integral else np.abs(data.arrays[("im", "r")])
    a = image_from(src, data.g, data.mem)
    r = a ** c
    check_new_result(r, a, (a,), ca.Image3D)
    want = np.power(src, np.float32(c))
    close(as_np(r), want, rtol=1e-5)
    ident = a
    a **= c
    assert a is ident
    close(as_np(a), want, rtol=1e-5)


@pytest.mark.parametrize("base", [2, 0.5, np.float32(3.7), np.float64(1.0)], ids=["int", "float", "f32", "f64"])
def test_reflected_pow(data, base):
    """number ** Image3D = exp(im * ln(number)) for a positive number."""
    a, na = data.operand("im", "l")
    r = base ** a
    check_new_result(r, a, (a,), ca.Image3D)
    close(as_np(r), np.power(np.float32(base), na), rtol=1e-5)


@pytest.mark.parametrize("base", [0, -2.0])
def test_reflected_pow_needs_positive_base(base):
    a = image_from(np.ones((3, 4, 5)))
    with pytest.raises(ValueError, match="positive base"):
        base ** a


def test_pow_unsupported():
    a = image_from(np.ones((3, 4, 5)))
    f = field_from([np.ones((3, 4, 5))] * 3)
    for x, y in [(a, a), (f, 2), (2, f), (a, ca.Vec3Df(1, 2, 3)), (f, f)]:
        with pytest.raises(TypeError):
            x ** y
    with pytest.raises(TypeError):
        pow(a, 2, 3)
    with pytest.raises(TypeError):
        a **= a


# ---- unary forms -----------------------------------------------------------------

@pytest.mark.parametrize("kind", ["im", "fld"])
def test_unary(data, kind):
    a, na = data.operand(kind, "l")
    want_type = ca.Image3D if kind == "im" else ca.Field3D
    r = -a
    check_new_result(r, a, (a,), want_type)
    np.testing.assert_array_equal(as_np(r), -na)
    p = +a
    check_new_result(p, a, (a,), want_type)
    np.testing.assert_array_equal(as_np(p), na)
    np.testing.assert_array_equal(as_np(a), na)


# ---- managed operands -------------------------------------------------------------

def test_managed_operands(data):
    a, na = data.operand("im", "l")
    f, nf = data.operand("fld", "l")
    ma = ca.ManagedImage3D(data.g, data.mem)
    ca.Copy(ma, a)
    mf = ca.ManagedField3D(data.g, data.mem)
    ca.Copy(mf, f)
    results = [(ma + ma, 2 * na, ca.Image3D), (2.0 - ma, 2 - na, ca.Image3D),
               (-ma, -na, ca.Image3D), (+ma, na, ca.Image3D),
               (mf * ma, nf * na[..., None], ca.Field3D), (ma * mf, nf * na[..., None], ca.Field3D),
               (mf - f, nf - nf, ca.Field3D), (-mf, -nf, ca.Field3D)]
    for r, want, typ in results:
        assert type(r) is typ
        close(as_np(r), want)
    keep = ma
    ma *= 2
    ma += a
    assert ma is keep and type(ma) is ca.ManagedImage3D
    close(as_np(ma), 3 * na)
    keepf = mf
    mf /= ma
    assert mf is keepf and type(mf) is ca.ManagedField3D
    close(as_np(mf), nf / (3 * na)[..., None])


# ---- errors ----------------------------------------------------------------------

def other_grid(g, how):
    s, sp, o = tuple(g.size()), tuple(g.spacing()), tuple(g.origin())
    if how == "size":
        return grid(s[0] + 1, s[1], s[2], sp=sp, org=o)
    if how == "spacing":
        return grid(*s, sp=(sp[0], sp[1] * 2, sp[2]), org=o)
    return grid(*s, sp=sp, org=(o[0] + 1, o[1], o[2]))


MISMATCH_FORMS = {
    "im+im": (("im", "im"), operator.add), "im/im": (("im", "im"), operator.truediv),
    "fld-fld": (("fld", "fld"), operator.sub), "fld*fld": (("fld", "fld"), operator.mul),
    "fld*im": (("fld", "im"), operator.mul), "fld+im": (("fld", "im"), operator.add),
    "im*fld": (("im", "fld"), operator.mul), "im-fld": (("im", "fld"), operator.sub),
    "im/fld": (("im", "fld"), operator.truediv),
    "im+=im": (("im", "im"), operator.iadd), "fld-=fld": (("fld", "fld"), operator.isub),
    "fld*=im": (("fld", "im"), operator.imul), "fld/=im": (("fld", "im"), operator.itruediv),
}


@pytest.mark.parametrize("how", ["size", "spacing", "origin"])
@pytest.mark.parametrize("form", list(MISMATCH_FORMS))
def test_mismatched_grids(form, how):
    (lk, rk), op = MISMATCH_FORMS[form]
    d = Data("3d", ca.MEM_HOST)
    a, na = d.operand(lk, "l")
    b, _ = d.operand(rk, "r")
    if how == "size":
        b.resize(other_grid(b.grid(), how))
    else:
        b.setGrid(other_grid(b.grid(), how))
    with pytest.raises(RuntimeError, match="Input grids are not equal"):
        op(a, b)
    np.testing.assert_array_equal(as_np(a), na)   # an in-place form wrote nothing


OPS_ALL = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "**": operator.pow, "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul,
    "/=": operator.itruediv, "**=": operator.ipow,
}


@pytest.mark.parametrize("bad", list(BAD_OPERANDS))
@pytest.mark.parametrize("sym", list(OPS_ALL))
@pytest.mark.parametrize("kind", ["im", "fld"])
def test_unsupported_operands(kind, sym, bad):
    d = Data("2d", ca.MEM_HOST)
    a, na = d.operand(kind, "l")
    x = BAD_OPERANDS[bad]
    op = OPS_ALL[sym]
    with pytest.raises(TypeError):
        op(a, x)
    if not sym.endswith("="):
        with pytest.raises(TypeError):
            op(x, a)
    np.testing.assert_array_equal(as_np(a), na)


def test_unsupported_type_pairs():
    d = Data("2d", ca.MEM_HOST)
    a, na = d.operand("im", "l")
    f, nf = d.operand("fld", "l")
    v = ca.Vec3Df(1, 2, 3)
    for x, y in [(a, v), (v, a), (a, ca.Vec3Di(1, 2, 3)), (a, ca.GridInfo()), (f, ca.GridInfo())]:
        for op in (operator.add, operator.sub, operator.mul, operator.truediv):
            with pytest.raises(TypeError):
                op(x, y)
    for op in (operator.floordiv, operator.mod, operator.matmul):
        with pytest.raises(TypeError):
            op(a, 2)
        with pytest.raises(TypeError):
            op(f, f)
    # an in-place operator on an image never rebinds it to a Field3D
    for iop in (operator.iadd, operator.isub, operator.imul, operator.itruediv):
        with pytest.raises(TypeError):
            iop(a, f)
    np.testing.assert_array_equal(as_np(a), na)
    np.testing.assert_array_equal(as_np(f), nf)


def test_no_comparisons_added():
    """__eq__ stays identity (no elementwise comparison operators)."""
    a = image_from(np.ones((3, 4, 5)))
    b = a.copy()
    assert a == a and not (a == b) and a != b
    with pytest.raises(TypeError):
        a < b


def test_numpy_scalar_on_the_left():
    """NumPy scalars defer to the reflected operators (no object arrays)."""
    na = np.linspace(0.5, 2, 60, dtype=np.float32).reshape(3, 4, 5)
    a = image_from(na)
    f = field_from([na, 2 * na, 3 * na])
    for c in (np.float32(2.5), np.float64(-1.25), np.int64(3), np.int32(-2)):
        for r, want in [(c * a, np.float32(c) * na), (c - a, np.float32(c) - na),
                        (c / a, np.float32(c) / na), (c + a, np.float32(c) + na)]:
            assert type(r) is ca.Image3D
            close(as_np(r), want)
        r = c * f
        assert type(r) is ca.Field3D
        close(as_np(r), np.float32(c) * np.stack([na, 2 * na, 3 * na], -1))
    with pytest.raises(TypeError):
        np.ones(3) + a


# ---- device memory ---------------------------------------------------------------

@gpu_only
def test_device_results_stay_on_device():
    d = Data("3d", ca.MEM_DEVICE)
    a, na = d.operand("im", "l")
    f, nf = d.operand("fld", "l")
    for r in (a + a, 2 - a, 2 / a, a ** 2, -a, +a, f * a, a - f, a / f, 1 / f, -f):
        assert r.memType() == ca.MEM_DEVICE
    close(as_np(a / f), na[..., None] / nf, rtol=1e-5)


@pytest.mark.parametrize("form", sorted(MISMATCH_FORMS))
def test_mixed_memory_types_empty_operands(form):
    """The same refusal on every machine: empty operands need no allocation,
    so a host and a device operand exist without a GPU."""
    (lk, rk), op = MISMATCH_FORMS[form]
    make = {"im": ca.Image3D, "fld": ca.Field3D}
    a, b = make[lk](ca.MEM_HOST), make[rk](ca.MEM_DEVICE)
    with pytest.raises(RuntimeError, match="memory types are not compatible"):
        op(a, b)
    a, b = make[lk](ca.MEM_DEVICE), make[rk](ca.MEM_HOST)
    with pytest.raises(RuntimeError, match="memory types are not compatible"):
        op(a, b)


@gpu_only
@pytest.mark.parametrize("form", ["im+im", "fld*im", "im*fld", "im-fld", "fld-=fld", "im+=im"])
def test_mixed_memory_types(form):
    (lk, rk), op = MISMATCH_FORMS[form]
    a, _ = Data("2d", ca.MEM_HOST).operand(lk, "l")
    b, _ = Data("2d", ca.MEM_DEVICE).operand(rk, "r")
    with pytest.raises(RuntimeError, match="memory types are not compatible"):
        op(a, b)
    with pytest.raises(RuntimeError, match="memory types are not compatible"):
        op(b, a)
