"""Pointwise operators (spec 2.9/2.10 groups A, B, C and the pointwise part
of D) against NumPy, table driven.

Every overload of Appendix A is one row of OVERLOADS: its name, its signature
and a NumPy reference evaluated in float64 on the same float32 inputs.
Signature tokens: the output first (``I`` Image3D, ``F`` Field3D), then the
arguments in call order (``I``, ``F``, ``f`` float, ``v`` Vec3Df). For ``_I``
names the output is also the first operand of the reference. Field outputs
are checked per component: Image3D operands broadcast over the components,
Vec3Df constants apply per component. Each row also gives the input domain
of each array operand (letters of DOMAINS, in reference order) and its
tolerance. The table is checked against Appendix A of the spec and against
the legacy golden outputs (both skip when the files are missing).

Per row: the values, the masked overload where Appendix A has one (the
output keeps a sentinel outside the mask), in place == out of place, output
aliasing an input, trailing st / onDev, int and NumPy constants, pooled
(managed, non-contiguous) operands, degenerate grids, mismatched grids (the
message names the C++ overload called), wrong types, and (GPU only)
mismatched memory types. Values on a 3-D, a 2-D and a larger (multi-thread)
grid with anisotropic spacing and a non-zero origin, for every usable memory
type.
"""
import json
import os
import re

import numpy as np
import pytest

import PyCA.Core as ca
from conftest import field_from, golden_dir_path, gpu_only, grid, image_from, to_np
from conftest import usable_mem_types

GRIDS = {
    "3d": dict(size=(17, 19, 23), sp=(0.7, 1.3, 2.1), org=(1.5, -2.0, 0.25)),
    "2d": dict(size=(31, 33, 1), sp=(1.3, 0.7, 2.1), org=(-0.5, 3.0, 1.0)),
    # above the CPU launcher's single-thread limit (32768 voxels): several OpenMP blocks
    "big": dict(size=(41, 37, 29), sp=(0.7, 1.3, 2.1), org=(0.0, 0.5, -1.0)),
}
SEEDS = {"3d": 101, "2d": 202, "big": 303}
ERR_GRIDS = ["3d", "2d"]

#: the special values of the golden "x" inputs: halves, signed zeros, tiny values
SPECIAL = np.float32([-2.5, -1.5, -1, -0.5, -0.0, 0.0, 0.5, 1, 1.5, 2.5, 0.49999997, -0.49999997,
                      1e-8, -1e-8, 3.7, -3.7, 0.50000006, -0.50000006])


def _signed(rng, shape, lo, hi):
    return rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


def _special(rng, shape):
    a = rng.uniform(-3, 3, shape).ravel()
    a[::2] = np.resize(SPECIAL, a[::2].shape)
    return a.reshape(shape)


#: input domains, one letter each
DOMAINS = {
    "s": lambda r, s: r.uniform(-1.5, 1.5, s),          # symmetric
    "w": lambda r, s: r.uniform(-3.0, 3.0, s),          # wide (Exp, Atan)
    "p": lambda r, s: r.uniform(0.25, 2.5, s),          # positive (Log, Sqrt, PowC)
    "u": lambda r, s: r.uniform(-0.95, 0.95, s),        # inside (-1, 1) (Asin, Acos)
    "n": lambda r, s: _signed(r, s, 0.25, 2.0),         # away from 0 (divisors)
    "t": lambda r, s: r.uniform(-1.3, 1.3, s),          # away from the poles of tan / sec
    "k": lambda r, s: _signed(r, s, 0.2, 1.3),          # away from 0 and pi/2 (Csc, Cot)
    "q": lambda r, s: r.integers(-4, 5, s) * 0.5,       # multiples of 0.5: ties (comparisons)
    "x": _special,                                      # halves, +-0, tiny (Round, Sgn, Step)
}


def draw(rng, dom, shape):
    return DOMAINS[dom](rng, shape).astype(np.float32)


def f32(c):
    """The value a float constant has once passed to C++ (float)."""
    return float(np.float32(c))


# ---------------------------------------------------------------------------
# the table

DEF_TOL = (1e-5, 1e-6)
EXACT = (0.0, 0.0)
FLOATS = (0.7, -1.3, 0.45)
VECS = ((0.5, -1.25, 2.0), (1.5, 0.25, -0.75), (-3.0, 0.0, 1.0))


class Row:
    def __init__(self, name, sig, ref, dom=None, consts=None, tol=DEF_TOL, mask=False,
                 ondev=None, tag=""):
        self.name, self.tokens, self.ref = name, sig.split(), ref
        self.inplace = name.endswith("_I")
        self.out = self.tokens[0]
        self.args = self.tokens[1:]
        arrays = (["_"] if self.inplace else []) + [t for t in self.args if t in "IF"]
        self.dom = dom or "s" * len(arrays)
        assert len(self.dom) == len(arrays), (name, sig, dom)
        nf = sum(t == "f" for t in self.args)
        nv = sum(t == "v" for t in self.args)
        self.consts = list(consts) if consts is not None else [None] * (nf + nv)
        fi = vi = 0
        for i, t in enumerate(t for t in self.args if t in "fv"):
            if self.consts[i] is None:
                if t == "f":
                    self.consts[i], fi = FLOATS[fi % 3], fi + 1
                else:
                    self.consts[i], vi = VECS[vi % 3], vi + 1
        self.tol = tol
        self.mask = mask
        self.ondev = (nf + nv > 0) if ondev is None else ondev
        self.id = "%s-%s%s" % (name, "".join(self.tokens), tag)

    def __repr__(self):
        return self.id


OVERLOADS = []


def R(*a, **k):
    OVERLOADS.append(Row(*a, **k))


def _round(a):
    return np.sign(a) * np.floor(np.abs(a) + 0.5)


# ---- group A: 23 unary image ops, Op and Op_I, each maskable
UNARY = [
    # name, reference, domain, tolerance
    ("Abs", np.abs, "x", EXACT),
    ("Cube", lambda a: a ** 3, "x", DEF_TOL),
    ("Exp", np.exp, "w", DEF_TOL),
    ("Log", np.log, "p", DEF_TOL),
    ("Neg", np.negative, "x", EXACT),
    ("Ramp", lambda a: np.maximum(a, 0), "x", EXACT),
    ("Sgn", np.sign, "x", EXACT),
    ("Step", lambda a: np.where(a > 0, 1.0, np.where(a < 0, 0.0, 0.5)), "x", EXACT),
    ("Sqr", np.square, "x", DEF_TOL),
    ("Sqrt", np.sqrt, "p", DEF_TOL),
    ("Inv", lambda a: 1 / a, "n", DEF_TOL),
    ("Ceil", np.ceil, "x", EXACT),
    ("Floor", np.floor, "x", EXACT),
    ("Round", _round, "x", EXACT),       # half away from zero (C roundf)
    ("Sin", np.sin, "w", DEF_TOL),
    ("Asin", np.arcsin, "u", DEF_TOL),
    ("Cos", np.cos, "w", DEF_TOL),
    ("Acos", np.arccos, "u", DEF_TOL),
    ("Tan", np.tan, "t", DEF_TOL),
    ("Atan", np.arctan, "w", DEF_TOL),
    ("Csc", lambda a: 1 / np.sin(a), "k", DEF_TOL),
    ("Sec", lambda a: 1 / np.cos(a), "t", DEF_TOL),
    ("Cot", lambda a: 1 / np.tan(a), "k", DEF_TOL),
]
for _n, _f, _d, _t in UNARY:
    R(_n, "I I", _f, _d, tol=_t, mask=True)
    R(_n + "_I", "I", _f, _d, tol=_t, mask=True)


# ---- group B: 13 binary ops x {Op, Op_I, OpC, OpC_I}
def _cmp(op):
    return lambda a, b: op(a, b).astype(np.float64)


BINARY = [
    # name, reference, domain of a, domain of b, constant, tolerance
    ("Add", np.add, "s", "s", 0.37, DEF_TOL),
    ("Sub", np.subtract, "s", "s", 0.37, DEF_TOL),
    ("Mul", np.multiply, "s", "s", -1.7, DEF_TOL),
    ("Div", np.divide, "s", "n", 1.3, DEF_TOL),
    ("Max", np.maximum, "q", "s", 0.1, EXACT),
    ("Min", np.minimum, "q", "s", 0.1, EXACT),
    ("Atan2", np.arctan2, "s", "n", -0.6, DEF_TOL),   # atan2(a, b)
    ("GT", _cmp(np.greater), "q", "q", 0.5, EXACT),
    ("GTE", _cmp(np.greater_equal), "q", "q", 0.5, EXACT),
    ("EQ", _cmp(np.equal), "q", "q", 0.5, EXACT),
    ("NEQ", _cmp(np.not_equal), "q", "q", 0.5, EXACT),
    ("LT", _cmp(np.less), "q", "q", 0.5, EXACT),
    ("LTE", _cmp(np.less_equal), "q", "q", 0.5, EXACT),
]
VEC_C = {"Add": (0.5, -1.25, 2.0), "Sub": (0.5, -1.25, 2.0), "Mul": (0.5, -1.25, 2.0),
         "Div": (0.5, -1.25, 2.0), "Max": (0.5, -1.25, 2.0), "Min": (0.5, -1.25, 2.0)}
for _n, _f, _da, _db, _c, _t in BINARY:
    R(_n, "I I I", _f, _da + _db, tol=_t, mask=True)
    R(_n + "_I", "I I", _f, _da + _db, tol=_t, mask=True)
    R(_n, "I I f", _f, _da, consts=[_c], tol=_t, mask=True)     # constant under the plain name
    R(_n + "_I", "I f", _f, _da, consts=[_c], tol=_t, mask=True)
    R(_n + "C", "I I f", _f, _da, consts=[_c], tol=_t, mask=True)
    R(_n + "C_I", "I f", _f, _da, consts=[_c], tol=_t, mask=True)
    if _n in ("Add", "Sub", "Mul", "Div", "Max", "Min"):
        R(_n, "F F F", _f, _da + _db, tol=_t)
        R(_n + "_I", "F F", _f, _da + _db, tol=_t)
        R(_n + "C", "F F v", _f, _da, consts=[VEC_C[_n]], tol=_t)
        R(_n + "C", "F F f", _f, _da, consts=[_c], tol=_t)
        R(_n + "C_I", "F v", _f, _da, consts=[VEC_C[_n]], tol=_t)
        R(_n + "C_I", "F f", _f, _da, consts=[_c], tol=_t)
    if _n in ("Add", "Sub", "Mul", "Div"):
        R(_n, "F F I", _f, _da + _db, tol=_t)                  # the image broadcasts
        R(_n + "_I", "F I", _f, _da + _db, tol=_t)

# ---- group C: fused ops (argument order as in Appendix A)
FT = (1e-5, 3e-6)   # two or three roundings with cancellation
for _c in (2.5, -1.5, 0.5, 3.0):
    R("PowC", "I I f", np.power, "p", consts=[_c], tag="-c%g" % _c)
    R("PowC_I", "I f", np.power, "p", consts=[_c], tag="-c%g" % _c)
for _c in (2.0, 3.0):  # C powf: a negative base with an integral exponent is defined
    R("PowC", "I I f", np.power, "n", consts=[_c], tag="-neg-c%g" % _c)
for _n, _f, _d in [
        ("AbsDiff", lambda a, b: np.abs(a - b), "ss"),
        ("SqrDiff", lambda a, b: (a - b) ** 2, "ss")]:
    R(_n, "I I I", _f, _d, tol=FT)
    R(_n + "_I", "I I", _f, _d, tol=FT)
for _n, _f, _d in [
        ("MulMul", lambda a, b, c: a * b * c, "sss"),
        ("MulAdd", lambda a, b, c: a * b + c, "sss"),
        ("MulSub", lambda a, b, c: a * b - c, "sss"),
        ("AddMul", lambda a, b, c: (a + b) * c, "sss"),
        ("AddDiv", lambda a, b, c: (a + b) / c, "ssn"),
        ("SubMul", lambda a, b, c: (a - b) * c, "sss"),
        ("SubDiv", lambda a, b, c: (a - b) / c, "ssn")]:
    R(_n, "I I I I", _f, _d, tol=FT)
    R(_n + "_I", "I I I", _f, _d, tol=FT)
for _n, _f in [
        ("Add_AddMulC", lambda a, b, c, k: a + (b + c) * k),
        ("Add_SubMulC", lambda a, b, c, k: a + (b - c) * k),
        ("Sub_AddMulC", lambda a, b, c, k: a - (b + c) * k),
        ("Sub_SubMulC", lambda a, b, c, k: a - (b - c) * k)]:
    R(_n, "I I I I f", _f, tol=FT)
    R(_n + "_I", "I I I f", _f, tol=FT)

_f = lambda a, b, c, k: a + b * c * k  # noqa: E731
R("Add_MulMulC", "I I I I f", _f, tol=FT)
R("Add_MulMulC", "F F F I f", _f, tol=FT)
R("Add_MulMulC", "F F F F f", _f, tol=FT)
R("Add_MulMulC_I", "I I I f", _f, tol=FT)
R("Add_MulMulC_I", "F F I f", _f, tol=FT)
R("Add_MulMulC_I", "F F F f", _f, tol=FT)
_f = lambda a, b, c, k: a - b * c * k  # noqa: E731
R("Sub_MulMulC", "I I I I f", _f, tol=FT)
R("Sub_MulMulC", "F F F F f", _f, tol=FT)
R("Sub_MulMulC_I", "I I I f", _f, tol=FT)
R("Sub_MulMulC_I", "F F F f", _f, tol=FT)

for _n, _f in [("Add_Mul", lambda a, b, c: a + b * c), ("Sub_Mul", lambda a, b, c: a - b * c)]:
    R(_n, "I I I I", _f, tol=FT)
    R(_n, "F F F I", _f, tol=FT)
    R(_n + "_I", "I I I", _f, tol=FT)
    R(_n + "_I", "F F I", _f, tol=FT)

for _n, _f in [("AddMulC", lambda a, b, c: (a + b) * c), ("SubMulC", lambda a, b, c: (a - b) * c),
               ("Add_MulC", lambda a, b, c: a + b * c)]:
    R(_n, "I I I f", _f, tol=FT)
    R(_n, "F F F f", _f, tol=FT)
    R(_n + "_I", "I I f", _f, tol=FT)
    R(_n + "_I", "F F f", _f, tol=FT)

_f = lambda a, b, c: a * b * c  # noqa: E731
R("MulMulC", "I I I f", _f, tol=FT)
R("MulMulC", "F F I f", _f, tol=FT)
R("MulMulC", "F F F f", _f, tol=FT)
R("MulMulC_I", "I I f", _f, tol=FT)
R("MulMulC_I", "F I f", _f, tol=FT)
R("MulMulC_I", "F F f", _f, tol=FT)

for _n, _f in [("MulCAdd", lambda a, c, b: a * c + b), ("MulCSub", lambda a, c, b: a * c - b)]:
    R(_n, "I I f I", _f, tol=FT)
    R(_n, "F F f F", _f, tol=FT)
    R(_n + "_I", "I f I", _f, tol=FT)
    R(_n + "_I", "F f F", _f, tol=FT)

for _n, _f in [("MulCAddC", lambda a, p, q: a * p + q), ("AddCMulC", lambda a, p, q: (a + p) * q)]:
    R(_n, "I I f f", _f, tol=FT)
    R(_n, "F F v v", _f, tol=FT)
    R(_n + "_I", "I f f", _f, tol=FT)
    R(_n + "_I", "F v v", _f, tol=FT)

_f = lambda a, ca_, b, cb: a * ca_ + b * cb  # noqa: E731
R("MulC_Add_MulC", "I I f I f", _f, tol=FT)
R("MulC_Add_MulC", "F F f F f", _f, tol=FT)
R("MulC_Add_MulC_I", "I f I f", _f, tol=FT)
R("MulC_Add_MulC_I", "F f F f", _f, tol=FT)

_f = lambda a, p, q, r: (a + p) * q + r  # noqa: E731
R("AddCMulCAddC", "I I f f f", _f, tol=FT)
R("AddCMulCAddC", "F F f f f", _f, tol=FT)
R("AddCMulCAddC", "F F v v v", _f, tol=FT)
R("AddCMulCAddC_I", "I f f f", _f, tol=FT)
R("AddCMulCAddC_I", "F f f f", _f, tol=FT)
R("AddCMulCAddC_I", "F v v v", _f, tol=FT)


# ---- group D (pointwise part)
def _shrink(a, c):
    return np.maximum(a - c, 0) + np.minimum(a + c, 0)


def _softabs(a, eps):
    return np.where(np.abs(a) > eps, np.abs(a) - eps / 2, a * a / (2 * eps))


def _softsgn(a, eps):
    return np.clip(a / eps, -1, 1)


R("Copy", "I I", lambda a: a, tol=EXACT, mask=True)
R("Copy", "F F", lambda a: a, tol=EXACT)
R("SetMem", "I f", lambda c: c, consts=[2.75], tol=EXACT, mask=True)
R("SetMem", "F f", lambda c: c, consts=[-0.5], tol=EXACT, mask=True)
R("SetMem", "F v", lambda c: c, consts=[(1.5, -2.0, 0.25)], tol=EXACT, mask=True)
for _n, _f in [("Shrink", _shrink), ("SoftAbs", _softabs), ("SoftSgn", _softsgn)]:
    R(_n, "I I f", _f, consts=[0.3], ondev=False)
    R(_n + "_I", "I f", _f, consts=[0.3], ondev=False)

ROWS = {r.id: r for r in OVERLOADS}
assert len(ROWS) == len(OVERLOADS), "duplicate row ids"
MASKED = [r for r in OVERLOADS if r.mask]
FIELD_SHRINK_EPS = 0.3


# ---------------------------------------------------------------------------
# building the arguments and the reference

def mem_id(m):
    return {ca.MEM_HOST: "host", ca.MEM_HOST_PINNED: "pinned", ca.MEM_DEVICE: "device"}[m]


class Case:
    """Random data on one grid (GRIDS[tag], or ``params``) in one memory type."""

    def __init__(self, tag, mem, params=None, seed=None):
        p = params if params is not None else GRIDS[tag]
        self.tag, self.shape, self.mem = tag, tuple(p["size"]), mem
        self.g = grid(*p["size"], sp=p["sp"], org=p["org"])
        self.rng = np.random.default_rng(SEEDS[tag] if seed is None else seed)

    def array(self, kind, dom):
        if kind == "I":
            return draw(self.rng, dom, self.shape)
        return [draw(self.rng, dom, self.shape) for _ in range(3)]

    def mask(self):
        m = (self.rng.uniform(size=self.shape) < 0.55).astype(np.float32)
        # any non-zero value selects the voxel
        m[m == 1] = self.rng.choice(np.float32([1, 1, 1, 0.5, -2]), size=int(m.sum()))
        return m

    def sentinel(self, kind):
        return self.array(kind, "s") + np.float32(5.0) if kind == "I" else \
            [x + np.float32(5.0) for x in self.array(kind, "s")]

    managed = False

    def obj(self, kind, arr, g=None, mem=None):
        g = g if g is not None else self.g
        mem = mem if mem is not None else self.mem
        if self.managed:  # pooled buffers: the field components are not contiguous
            o = ca.ManagedImage3D(g, ca.MEM_HOST) if kind == "I" else ca.ManagedField3D(g, ca.MEM_HOST)
            if kind == "I":
                o.asnp()[...] = arr
            else:
                assert not o.isContinuous()
                for v, a in zip(o.asnp(), arr):
                    v[...] = a
            return o
        return image_from(arr, g, mem) if kind == "I" else field_from(arr, g, mem)


@pytest.fixture(params=[(t, m) for t in GRIDS for m in usable_mem_types],
                ids=lambda p: "%s-%s" % (p[0], mem_id(p[1])))
def case(request):
    return Case(*request.param)


class Call:
    """The arrays and PyCA arguments of one call of a row."""

    def __init__(self, row, case, masked=False):
        self.row, self.case = row, case
        doms = iter(row.dom)
        consts = iter(row.consts)
        if row.inplace:
            self.out_init = case.array(row.out, next(doms))
        else:
            self.out_init = case.sentinel(row.out)
        self.values = [self.out_init] if row.inplace else []   # reference operands
        self.kinds = [row.out] if row.inplace else []
        self.arg_np = []    # (kind, value) per call argument after the output
        for t in row.args:
            if t in "IF":
                v = case.array(t, next(doms))
            else:
                v = next(consts)
            self.values.append(v)
            self.kinds.append(t)
            self.arg_np.append((t, v))
        self.mask = case.mask() if masked else None

    def build(self, odd=None, odd_grid=None, odd_mem=None, mem=None):
        """PyCA arguments: (out, args...), arrays in ``mem`` (default: the
        case's). ``odd`` = index (0 = output) of an array argument allocated
        on ``odd_grid`` / ``odd_mem``."""
        c = self.case
        items = [(self.row.out, self.out_init)] + self.arg_np
        if self.mask is not None:
            items.append(("I", self.mask))
        objs = []
        for i, (t, v) in enumerate(items):
            if t in "IF":
                if i == odd:
                    objs.append(c.obj(t, v if odd_grid is None else _reshape(v, odd_grid),
                                      odd_grid, odd_mem))
                else:
                    objs.append(c.obj(t, v, None, mem))
            elif t == "v":
                objs.append(ca.Vec3Df(*v))
            else:
                objs.append(v)
        return objs

    def tokens_with_mask(self):
        return [self.row.out] + list(self.row.args) + (["I"] if self.mask is not None else [])

    def array_positions(self):
        return [i for i, t in enumerate(self.tokens_with_mask()) if t in "IF"]

    def expected(self):
        """float64 reference: an array (image) or a list of three (field)."""
        row = self.row

        def comp(k):
            vals = []
            for t, v in zip(self.kinds, self.values):
                if t == "F":
                    vals.append(v[k].astype(np.float64))
                elif t == "I":
                    vals.append(v.astype(np.float64))
                elif t == "v":
                    vals.append(f32(v[k]))
                else:
                    vals.append(f32(v))
            r = row.ref(*vals)
            return np.broadcast_to(np.asarray(r, np.float64), self.case.shape)

        if row.out == "I":
            want = comp(0)
            if self.mask is not None:
                want = np.where(self.mask != 0, want, self.out_init)
            return want
        wants = [comp(k) for k in range(3)]
        if self.mask is not None:
            wants = [np.where(self.mask != 0, w, o) for w, o in zip(wants, self.out_init)]
        return wants


def _reshape(v, g):
    """Data for an argument on another grid (same values where they fit)."""
    s = (g.size().x, g.size().y, g.size().z)

    def one(a):
        out = np.zeros(s, np.float32)
        n = tuple(min(x, y) for x, y in zip(s, a.shape))
        out[:n[0], :n[1], :n[2]] = a[:n[0], :n[1], :n[2]]
        return out
    return one(v) if isinstance(v, np.ndarray) else [one(x) for x in v]


def check(got_obj, want, tol, what=""):
    rtol, atol = tol
    gots = [to_np(got_obj)] if isinstance(got_obj, ca.Image3D) else to_np(got_obj)
    wants = [want] if isinstance(got_obj, ca.Image3D) else want
    for k, (g, w) in enumerate(zip(gots, wants)):
        assert g.dtype == np.float32
        if rtol == 0 and atol == 0:
            bad = g.astype(np.float64) != w
        else:
            bad = ~(np.abs(g - w) <= atol + rtol * np.abs(w))
        if np.isnan(w).any() or np.isnan(g).any():
            bad |= np.isnan(w) != np.isnan(g)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            pytest.fail("%s component %d: %d of %d voxels differ; first at %s: got %r, expected %r"
                        % (what, k, int(bad.sum()), bad.size, idx, float(g[idx]), float(w[idx])),
                        pytrace=False)


def _fn(row):
    name = row if isinstance(row, str) else row.name
    fn = getattr(ca, name, None)
    if fn is None:
        pytest.fail("PyCA.Core lacks %s" % name, pytrace=False)
    return fn


def _inputs_untouched(call, objs):
    """Arrays passed as inputs still hold their data."""
    for (t, v), o in zip(call.arg_np, objs[1:]):
        if t == "I":
            assert np.array_equal(to_np(o), v), "an input image was modified"
        elif t == "F":
            assert all(np.array_equal(a, b) for a, b in zip(to_np(o), v)), "an input field was modified"


# ---------------------------------------------------------------------------
# values

@pytest.mark.parametrize("row", OVERLOADS, ids=repr)
def test_values(row, case):
    fn = _fn(row)
    call = Call(row, case)
    objs = call.build()
    ret = fn(*objs)
    assert ret is None
    check(objs[0], call.expected(), row.tol, row.id)
    _inputs_untouched(call, objs)
    if row.tol == EXACT and row.name[:2] in ("GT", "EQ", "NE", "LT"):
        assert set(np.unique(to_np(objs[0]))) <= {0.0, 1.0}


@pytest.mark.parametrize("row", MASKED, ids=repr)
def test_masked(row, case):
    fn = _fn(row)
    call = Call(row, case, masked=True)
    objs = call.build()
    fn(*objs)
    check(objs[0], call.expected(), row.tol, row.id + " masked")
    _inputs_untouched(call, objs[:-1])
    assert np.array_equal(to_np(objs[-1]), call.mask)


def _out_of_place_twin(row):
    """For an _I row, the row computing the same thing into a separate output."""
    if not row.inplace:
        return None
    for r in OVERLOADS:
        if r.name == row.name[:-2] and r.tokens == [row.out] + row.tokens and r.consts == row.consts:
            return r
    return None


INPLACE = [(r, _out_of_place_twin(r)) for r in OVERLOADS if _out_of_place_twin(r) is not None]


def test_every_inplace_row_has_a_twin():
    missing = [r.id for r in OVERLOADS if r.inplace and _out_of_place_twin(r) is None]
    assert not missing, missing


INPLACE_CASES = [(r, t, m) for r, t in INPLACE for m in ([False, True] if r.mask and t.mask else [False])]


@pytest.mark.parametrize("pair", INPLACE_CASES, ids=lambda p: p[0].id + ("-mask" if p[2] else ""))
def test_inplace_equals_out_of_place(pair, case):
    row, twin, masked = pair
    fn_i, fn = _fn(row), _fn(twin)
    call = Call(row, case, masked=masked)
    objs = call.build()
    fn_i(*objs)
    # the same operands, out of place: (out, io_initial, args..., [mask])
    first = call.case.obj(row.out, call.out_init)
    out = call.case.obj(row.out, call.out_init if masked else call.case.sentinel(row.out))
    fn(out, first, *objs[1:])
    a, b = to_np(objs[0]), to_np(out)
    if row.out == "I":
        a, b = [a], [b]
    for x, y in zip(a, b):
        assert np.array_equal(x, y), "%s differs from %s" % (row.id, twin.id)


ALIASABLE = [(r, i + 1) for r in OVERLOADS if r.name != "Copy"
             for i, t in enumerate(r.args) if t == r.out]


@pytest.mark.parametrize("ra", ALIASABLE, ids=lambda ra: "%s-arg%d" % (ra[0].id, ra[1]))
def test_output_aliases_an_input(ra, case):
    """Op(a, ..., a, ...) is an elementwise update: the result equals the
    out-of-place one (the output object passed again as an input)."""
    row, pos = ra
    fn = _fn(row)
    call = Call(row, case)
    objs = call.build()
    if row.inplace:  # Op_I(a, ..., a, ...): that operand is the output's old value
        objs[pos] = objs[0]
        call.values[pos] = call.out_init
    else:
        objs[0] = objs[pos]
    fn(*objs)
    check(objs[0], call.expected(), row.tol, row.id + " aliased")


@pytest.mark.parametrize("row", OVERLOADS + [("mask", r) for r in MASKED],
                         ids=lambda r: r.id if isinstance(r, Row) else r[1].id + "-mask")
def test_trailing_stream_and_ondev(row, case):
    masked = isinstance(row, tuple)
    row = row[1] if masked else row
    fn = _fn(row)
    call = Call(row, case, masked=masked)
    want = call.expected()
    objs = call.build()
    fn(*(objs + [None]))
    check(objs[0], want, row.tol, row.id + " +st")
    if row.ondev:
        for ondev in (False, True):  # constants always come by value from the host
            objs = call.build()
            fn(*(objs + [None, ondev]))
            check(objs[0], want, row.tol, row.id + " +st+onDev=%s" % ondev)
    elif not row.consts:  # no constant, no onDev
        with pytest.raises(TypeError):
            fn(*(call.build() + [None, False]))


def _int_const(c):
    if isinstance(c, tuple):
        return tuple(_int_const(x) for x in c)
    return int(c) if int(c) != 0 else 2


INT_ROWS = [r for r in OVERLOADS if any(t in "fv" for t in r.args)]


@pytest.mark.parametrize("row", INT_ROWS, ids=repr)
def test_integer_and_numpy_constants(row):
    """Python ints and NumPy scalars are accepted where a float is expected."""
    fn = _fn(row)
    consts = [_int_const(c) for c in row.consts]
    r = Row(row.name, " ".join(row.tokens), row.ref, row.dom, consts=consts, tol=row.tol,
            ondev=row.ondev)
    for conv in (int, np.float32, np.int64):
        call = Call(r, Case("2d", ca.MEM_HOST))
        objs = call.build()
        objs = [ca.Vec3Df(*(conv(x) for x in c)) if isinstance(c, tuple) else conv(o)
                if isinstance(o, (int, float)) and not isinstance(o, bool) else o
                for o, c in zip(objs, [None] + [v for _, v in call.arg_np])]
        fn(*objs)
        check(objs[0], call.expected(), row.tol, "%s with %s constants" % (row.id, conv.__name__))


@pytest.mark.parametrize("rm", [(r, m) for r in OVERLOADS for m in ([False, True] if r.mask else [False])],
                         ids=lambda rm: rm[0].id + ("-mask" if rm[1] else ""))
def test_managed_operands(rm):
    """ManagedImage3D / ManagedField3D (pooled, non-contiguous components) as
    every operand."""
    row, masked = rm
    fn = _fn(row)
    case = Case("3d", ca.MEM_HOST)
    ca.ThreadMemoryManager.init(case.g, ca.MEM_HOST, 4)
    case.managed = True
    call = Call(row, case, masked=masked)
    objs = call.build()
    fn(*objs)
    check(objs[0], call.expected(), row.tol, row.id + " managed")


@pytest.mark.parametrize("size", [(1, 1, 1), (0, 0, 0), (0, 5, 3), (1, 1, 7)], ids=str)
def test_degenerate_grids(size):
    """One voxel, no voxel, a line: every overload runs (and is right)."""
    params = dict(size=size, sp=(0.7, 1.3, 2.1), org=(1.0, 2.0, 3.0))
    for row in OVERLOADS:
        for masked in ([False, True] if row.mask else [False]):
            call = Call(row, Case("3d", ca.MEM_HOST, params=params, seed=9), masked=masked)
            objs = call.build()
            _fn(row)(*objs)
            check(objs[0], call.expected(), row.tol, "%s on %s" % (row.id, size))


def test_concurrent_calls():
    """The GIL is released in C++ calls: threads computing and failing at the
    same time get their own results and their own error messages."""
    import threading
    g, other = grid(40, 30, 20), grid(40, 30, 19)
    errors = []

    def work(k):
        a, b, o = (ca.Image3D(g, ca.MEM_HOST) for _ in range(3))
        x = ca.Image3D(other, ca.MEM_HOST)
        ca.SetMem(a, float(k))
        ca.SetMem(b, 2.0)
        name = ("Sub", "MulMulC", "Max", "AddMulC")[k % 4]
        for _ in range(40):
            ca.MulAdd(o, a, b, b)
            if not np.all(o.asnp() == 2 * k + 2):
                errors.append("wrong value in thread %d" % k)
            try:
                getattr(ca, name)(o, a, x, 2.0) if name in ("MulMulC", "AddMulC") else \
                    getattr(ca, name)(o, a, x)
                errors.append("no error in thread %d" % k)
            except RuntimeError as e:
                if not str(e).startswith("PyCA::Opers::%s(" % name) or \
                        "Input grids are not equal" not in str(e):
                    errors.append(str(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


# ---------------------------------------------------------------------------
# D: component copies, field Shrink

@pytest.mark.parametrize("dim", [0, 1, 2])
def test_copy_field_component(case, dim):
    fa = case.array("F", "s")
    out = case.obj("I", case.sentinel("I"))
    ca.Copy(out, case.obj("F", fa), dim)
    assert np.array_equal(to_np(out), fa[dim])
    f_init, a = case.array("F", "s"), case.array("I", "s")
    f = case.obj("F", f_init)
    ca.Copy(f, case.obj("I", a), dim, None)
    for k, got in enumerate(to_np(f)):
        assert np.array_equal(got, a if k == dim else f_init[k])


def _field_shrink(v, eps):
    v = [x.astype(np.float64) for x in v]
    n = np.sqrt(sum(x * x for x in v))
    s = np.where(n > 0, np.maximum(n - eps, 0) / np.where(n > 0, n, 1), 0.0)
    return [x * s for x in v]


@pytest.mark.parametrize("inplace", [False, True], ids=["out", "I"])
def test_shrink_field(case, inplace):
    v = case.array("F", "u")
    for k in range(3):  # some vectors shorter than eps
        v[k].ravel()[::7] *= np.float32(0.1)
    want = _field_shrink(v, f32(FIELD_SHRINK_EPS))
    if inplace:
        f = case.obj("F", v)
        _fn("Shrink_I")(f, FIELD_SHRINK_EPS)
        got = f
    else:
        got = case.obj("F", case.sentinel("F"))
        _fn("Shrink")(got, case.obj("F", v), FIELD_SHRINK_EPS)
    check(got, want, (1e-5, 1e-6), "field Shrink")
    lengths = np.sqrt(sum(x.astype(np.float64) ** 2 for x in to_np(got)))
    n0 = np.sqrt(sum(x.astype(np.float64) ** 2 for x in v))
    np.testing.assert_allclose(lengths, np.maximum(n0 - f32(FIELD_SHRINK_EPS), 0), atol=2e-6)


def test_shrink_field_zero_vector():
    """A zero vector shrinks to zero (v * max(|v| - eps, 0) / |v| taken as 0
    at |v| = 0, not 0/0)."""
    g = grid(3, 2, 1)
    v = [np.zeros((3, 2, 1), np.float32) for _ in range(3)]
    v[0][1, 1, 0] = 2.0
    f = field_from(v, g)
    out = ca.Field3D(g, ca.MEM_HOST)
    _fn("Shrink")(out, f, 0.5)
    want = [np.zeros((3, 2, 1)) for _ in range(3)]
    want[0][1, 1, 0] = 1.5
    for got, w in zip(to_np(out), want):
        assert np.array_equal(got, w), got
    _fn("Shrink_I")(f, 0.5)
    for got, w in zip(to_np(f), want):
        assert np.array_equal(got, w), got


def test_shrink_softabs_softsgn_branches():
    """Both sides of every threshold, including the thresholds themselves."""
    eps = 0.25
    x = np.float32([-2, -0.5, -0.25, -0.125, -0.0, 0.0, 0.125, 0.25, 0.5, 2, 1e-8, -1e-8])
    arr = np.resize(x, (4, 3, 1)).astype(np.float32)
    g = grid(4, 3, 1, sp=(0.7, 1.3, 2.1), org=(1, 2, 3))
    for name, ref in (("Shrink", _shrink), ("SoftAbs", _softabs), ("SoftSgn", _softsgn)):
        out = ca.Image3D(g, ca.MEM_HOST)
        getattr(ca, name)(out, image_from(arr, g), eps)
        np.testing.assert_allclose(out.asnp(), ref(arr.astype(np.float64), eps), rtol=1e-6,
                                   atol=1e-7, err_msg=name)
        io = image_from(arr, g)
        getattr(ca, name + "_I")(io, eps)
        assert np.array_equal(io.asnp(), out.asnp()), name + "_I"


def test_comparisons_exact_on_ties():
    """Comparisons of equal values and of +0 / -0 give exactly 1.0 or 0.0."""
    g = grid(4, 2, 1)
    a = image_from(np.float32([[1, 0.0], [-0.0, 2], [3, -1], [0.5, 0.5]]).reshape(4, 2, 1), g)
    b = image_from(np.float32([[1, -0.0], [0.0, 2.5], [2, -1], [0.5, 0.25]]).reshape(4, 2, 1), g)
    A, B = a.asnp().astype(np.float64), b.asnp().astype(np.float64)
    out = ca.Image3D(g, ca.MEM_HOST)
    for name, op in (("GT", np.greater), ("GTE", np.greater_equal), ("EQ", np.equal),
                     ("NEQ", np.not_equal), ("LT", np.less), ("LTE", np.less_equal)):
        getattr(ca, name)(out, a, b)
        assert np.array_equal(out.asnp(), op(A, B).astype(np.float32)), name
        getattr(ca, name)(out, a, 0.5)
        assert np.array_equal(out.asnp(), op(A, 0.5).astype(np.float32)), name + " const"


def test_nan_operands():
    """Documented (LegacyDifferences.md): Max/Min return the second operand when
    either is NaN; comparisons with NaN are false except NEQ."""
    g = grid(4, 1, 1)
    nan = np.float32(np.nan)
    a = image_from(np.float32([nan, 1.0, nan, -2.0]).reshape(4, 1, 1), g)
    b = image_from(np.float32([3.0, nan, nan, -1.0]).reshape(4, 1, 1), g)
    out = ca.Image3D(g, ca.MEM_HOST)
    for name in ("Max", "Min"):
        getattr(ca, name)(out, a, b)
        want = np.float32([3.0, nan, nan, -1.0 if name == "Max" else -2.0])
        np.testing.assert_array_equal(out.asnp().ravel(), want, err_msg=name)
        getattr(ca, name)(out, a, 0.5)
        want = np.float32([0.5, 1.0 if name == "Max" else 0.5, 0.5, 0.5 if name == "Max" else -2.0])
        np.testing.assert_array_equal(out.asnp().ravel(), want, err_msg=name + " const")
    for name, want in (("GT", [0, 0, 0, 0]), ("GTE", [0, 0, 0, 0]), ("EQ", [0, 0, 0, 0]),
                       ("NEQ", [1, 1, 1, 1]), ("LT", [0, 0, 0, 1]), ("LTE", [0, 0, 0, 1])):
        getattr(ca, name)(out, a, b)
        np.testing.assert_array_equal(out.asnp().ravel(), np.float32(want), err_msg=name)


def test_step_sgn_round_at_special_values():
    x = SPECIAL.reshape(-1, 1, 1)
    g = grid(x.shape[0], 1, 1)
    out = ca.Image3D(g, ca.MEM_HOST)
    X = x.astype(np.float64)
    want = {"Step": np.where(X > 0, 1.0, np.where(X < 0, 0.0, 0.5)), "Sgn": np.sign(X),
            "Round": _round(X), "Ceil": np.ceil(X), "Floor": np.floor(X), "Ramp": np.maximum(X, 0)}
    for name, w in want.items():
        getattr(ca, name)(out, image_from(x, g))
        assert np.array_equal(out.asnp(), w), (name, out.asnp().ravel(), w.ravel())


# ---------------------------------------------------------------------------
# errors

MISMATCH = {
    "size": lambda p: grid(*(p["size"][0] + 1,) + tuple(p["size"][1:]), sp=p["sp"], org=p["org"]),
    "spacing": lambda p: grid(*p["size"], sp=(p["sp"][0], p["sp"][1] + 0.01, p["sp"][2]), org=p["org"]),
    "origin": lambda p: grid(*p["size"], sp=p["sp"], org=(p["org"][0], p["org"][1], p["org"][2] + 0.5)),
}
KNOWN_SIGS = {}
for _r in OVERLOADS:
    KNOWN_SIGS.setdefault(_r.name, set()).add(tuple(_r.tokens))
    if _r.mask:
        KNOWN_SIGS[_r.name].add(tuple(_r.tokens) + ("I",))
KNOWN_SIGS["Copy"] |= {("I", "F", "d"), ("F", "I", "d")}
KNOWN_SIGS["Shrink"].add(("F", "F", "f"))
KNOWN_SIGS["Shrink_I"].add(("F", "f"))
ERR_ROWS = [(r, m) for r in OVERLOADS for m in ([False, True] if r.mask else [False])]


def _err_id(p):
    return p[0].id + ("-mask" if p[1] else "")


def _decl_tokens(first_line):
    """Signature tokens of a C++ declaration "PyCA::Opers::Op(T1,T2,...):";
    the output must be a non-const reference, array inputs const references."""
    params = first_line[first_line.index("(") + 1:first_line.rindex(")")].split(",")
    toks = []
    for i, p in enumerate(params):
        t = ("I" if "Image3D" in p else "F" if "Field3D" in p else "v" if "Vec3D" in p else
             "f" if "float" in p else "d" if p.strip() == "int" else "?" + p)
        if t in "IF":
            assert ("const" in p) == (i > 0), first_line
        toks.append(t)
    return toks


def _mismatch_positions(call):
    pos = call.array_positions()
    return [p for p in pos] if len(pos) >= 2 else []


def _n_arrays(row, masked):
    return 1 + sum(t in "IF" for t in row.args) + bool(masked)


MULTI_ROWS = [rm for rm in ERR_ROWS if _n_arrays(*rm) >= 2]


@pytest.mark.parametrize("rm", MULTI_ROWS, ids=_err_id)
@pytest.mark.parametrize("tag", ERR_GRIDS)
def test_grid_mismatch(rm, tag):
    row, masked = rm
    fn = _fn(row)
    case = Case(tag, ca.MEM_HOST)
    call = Call(row, case, masked=masked)
    positions = _mismatch_positions(call)
    kinds = sorted(MISMATCH)
    for j, pos in enumerate(positions):
        how = kinds[(j + len(row.id)) % 3]
        other = MISMATCH[how](GRIDS[tag])
        objs = call.build(odd=pos, odd_grid=other)
        before = to_np(objs[0])
        with pytest.raises(RuntimeError) as ei:
            fn(*objs)
        msg = str(ei.value)
        assert msg.startswith("PyCA::Opers::%s(" % row.name), msg
        first, rest = msg.split("\n", 1)
        assert first.endswith("):"), msg
        assert _decl_tokens(first) == call.tokens_with_mask(), \
            "the message names another overload: %s" % first
        assert re.match(r"^PyCAException : From .+:\d+ : Input grids are not equal$", rest), \
            (how, pos, msg)
        after = to_np(objs[0])
        if row.out == "I":
            assert np.array_equal(before, after), "output written despite the error"
        else:
            assert all(np.array_equal(x, y) for x, y in zip(before, after)), \
                "output written despite the error"


@pytest.mark.parametrize("rm", ERR_ROWS, ids=_err_id)
def test_wrong_types(rm):
    row, masked = rm
    fn = _fn(row)
    call = Call(row, Case("2d", ca.MEM_HOST), masked=masked)
    objs = call.build()
    # None is a valid trailing stream, so only before the last argument
    for i in range(min(2, len(objs))):
        for bad in ((None, "x") if i < len(objs) - 1 else ("x",)):
            args = list(objs)
            args[i] = bad
            with pytest.raises(TypeError):
                fn(*args)
    # a Field3D where an Image3D is expected and vice versa, in the output slot
    g = call.case.g
    swapped_out = "F" if row.out == "I" else "I"
    toks = tuple([swapped_out] + row.args + (["I"] if masked else []))
    if toks not in KNOWN_SIGS.get(row.name, set()):
        swapped = ca.Field3D(g, ca.MEM_HOST) if row.out == "I" else ca.Image3D(g, ca.MEM_HOST)
        with pytest.raises(TypeError):
            fn(swapped, *objs[1:])


@gpu_only
@pytest.mark.parametrize("rm", [rm for rm in MULTI_ROWS if not (rm[0].name == "Copy" and not rm[1])],
                         ids=_err_id)
@pytest.mark.parametrize("odd_mem", [ca.MEM_DEVICE, ca.MEM_HOST_PINNED], ids=["device", "pinned"])
def test_memtype_mismatch(rm, odd_mem):
    row, masked = rm
    fn = _fn(row)
    call = Call(row, Case("3d", ca.MEM_HOST), masked=masked)
    for pos in call.array_positions():
        objs = call.build(odd=pos, odd_mem=odd_mem)
        with pytest.raises(RuntimeError) as ei:
            fn(*objs)
        msg = str(ei.value)
        assert msg.startswith("PyCA::Opers::%s(" % row.name), msg
        assert "memory types are not compatible" in msg, msg


@pytest.mark.parametrize("rm", [rm for rm in MULTI_ROWS if not (rm[0].name == "Copy" and not rm[1])],
                         ids=_err_id)
@pytest.mark.parametrize("odd_mem", [ca.MEM_DEVICE, ca.MEM_HOST_PINNED], ids=["device", "pinned"])
def test_memtype_mismatch_empty_operands(rm, odd_mem):
    """The same checks on every machine, GPU or not: empty images and fields
    need no allocation in any memory type, so one empty device (or pinned)
    operand among empty host ones must raise the mismatch error before
    anything runs; all-host empty operands pass the checks."""
    row, masked = rm
    fn = _fn(row)
    call = Call(row, Case("3d", ca.MEM_HOST), masked=masked)
    items = [(row.out, None)] + call.arg_np + ([("I", None)] if masked else [])

    def build(odd):
        objs = []
        for i, (t, v) in enumerate(items):
            mem = odd_mem if i == odd else ca.MEM_HOST
            if t == "I":
                objs.append(ca.Image3D(mem))
            elif t == "F":
                objs.append(ca.Field3D(mem))
            elif t == "v":
                objs.append(ca.Vec3Df(*v))
            else:
                objs.append(v)
        return objs

    try:
        build(0)
    except RuntimeError as e:  # pragma: no cover - depends on the build
        pytest.skip("an empty %s image cannot be constructed here: %s" % (mem_id(odd_mem), e))
    for pos in call.array_positions():
        with pytest.raises(RuntimeError) as ei:
            fn(*build(pos))
        msg = str(ei.value)
        assert msg.startswith("PyCA::Opers::%s(" % row.name), msg
        assert "memory types are not compatible" in msg, msg
    fn(*build(None))  # matching (host) operands pass the checks


# ---------------------------------------------------------------------------
# the table itself: against Appendix A and the golden outputs

TOKEN = {"Im": "I", "Fld": "F", "float": "f", "Vec3Df": "v", "int": "d"}


def _appendix():
    try:
        from test_api_names import APPENDIX
    except Exception:  # pragma: no cover
        return {}
    return APPENDIX


def test_table_matches_appendix_a():
    app = _appendix()
    if not app:
        pytest.skip("spec not found")
    bad = []
    for r in OVERLOADS:
        sigs = {(tuple(TOKEN.get(p.type, "?") for p in o.params), o.ondev) for o in app.get(r.name, [])}
        if (tuple(r.tokens), r.ondev) not in sigs:
            bad.append("%s %s onDev=%s" % (r.name, r.tokens, r.ondev))
        if r.mask and (tuple(r.tokens) + ("I",), r.ondev) not in sigs:
            bad.append("%s %s + mask" % (r.name, r.tokens))
    assert not bad, bad


def test_table_covers_appendix_a():
    """Every image/field-only overload of the tested names has a row (the
    masked ones through their row's mask flag)."""
    app = _appendix()
    if not app:
        pytest.skip("spec not found")
    covered = {(r.name, tuple(r.tokens)) for r in OVERLOADS}
    covered |= {(r.name, tuple(r.tokens) + ("I",)) for r in OVERLOADS if r.mask}
    covered |= {("Copy", ("I", "F", "d")), ("Copy", ("F", "I", "d")),
                ("Shrink", ("F", "F", "f")), ("Shrink_I", ("F", "f"))}
    names = {r.name for r in OVERLOADS}
    missing = []
    for n in names:
        for o in app.get(n, []):
            toks = tuple(TOKEN.get(p.type, "?") for p in o.params)
            if o.ret is None and (n, toks) not in covered:
                missing.append("%s%s" % (n, o.text))
    assert not missing, missing


def _golden_cases():
    d = golden_dir_path()
    if d is None:
        return []
    with open(os.path.join(d, "manifest.json")) as f:
        m = json.load(f)
    return [(d, c) for c in m["cases"] if c["group"] == "pointwise"]


def _golden_load(d, e):
    a = np.fromfile(os.path.join(d, e["file"]), dtype="<f4")
    s = tuple(e["grid"]["size"])
    if e["kind"] == "field":
        return [c.reshape(s, order="F") for c in a.reshape(3, -1)]
    return a.reshape(s, order="F")


_SIG = re.compile(r"^(\w+)\((.*)\)$")


def _golden_row(c):
    m = _SIG.match(c["signature"])
    toks = [TOKEN.get(p.strip().split()[0], "?") for p in m.group(2).split(",")]
    masked = "mask" in c["args"][-1]["name"]
    if masked:
        toks = toks[:-1]
    for r in OVERLOADS:
        if r.name == c["op"] and r.tokens == toks and (r.mask or not masked):
            return r, masked
    return None, masked


GOLDEN = _golden_cases()


@pytest.mark.skipif(not GOLDEN, reason="golden data not available")
@pytest.mark.parametrize("gc", GOLDEN, ids=lambda gc: gc[1]["id"])
def test_reference_matches_golden(gc):
    """The NumPy references of the table reproduce the legacy outputs (this
    pins the formulas and argument orders, independently of our code), and
    so does our implementation."""
    d, c = gc
    row, masked = _golden_row(c)
    if row is None:
        pytest.skip("not a row of the table (component copy)")
    files = {e["arg"]: _golden_load(d, e) for e in c["inputs"]}
    vals, kinds = [], []
    args = c["args"]
    if masked:
        args = args[:-1]
    for i, (a, t) in enumerate(zip(args, row.tokens)):
        if i == 0 and not row.inplace:
            continue
        kinds.append(t)
        vals.append(files[a["name"]] if t in "IF" else a["value"])
    out_init = files.get(args[0]["name"])
    shape = tuple(c["grid"]["size"])

    def comp(k):
        v = []
        for t, x in zip(kinds, vals):
            v.append(x[k].astype(np.float64) if t == "F" else x.astype(np.float64) if t == "I"
                     else f32(x[k]) if t == "v" else f32(x))
        return np.broadcast_to(np.asarray(row.ref(*v), np.float64), shape)

    want = [comp(0)] if row.out == "I" else [comp(k) for k in range(3)]
    if masked:
        sel = files[c["args"][-1]["name"]] != 0
        init = [out_init] if row.out == "I" else out_init
        want = [np.where(sel, w, o) for w, o in zip(want, init)]
    ref = _golden_load(d, c["outputs"][0])
    ref = [ref] if row.out == "I" else ref
    rtol, atol = c["tolerance"]["rtol"], c["tolerance"]["atol"]
    for w, r in zip(want, ref):
        np.testing.assert_allclose(w, r, rtol=rtol, atol=atol, err_msg=c["id"])
    # our implementation on the golden inputs
    fn = getattr(ca, row.name, None)
    if fn is None:
        pytest.fail("PyCA.Core lacks %s" % row.name, pytrace=False)
    gi = c["grid"]
    g = grid(*gi["size"], sp=gi["spacing"], org=gi["origin"])
    objs = []
    for i, (a, t) in enumerate(zip(c["args"], row.tokens + (["I"] if masked else []))):
        if t in "IF":
            if a["name"] in files:
                v = files[a["name"]]
            else:
                v = np.full(shape, 7.0, np.float32) if t == "I" else [np.full(shape, 7.0, np.float32)] * 3
            objs.append(image_from(v, g) if t == "I" else field_from(v, g))
        elif t == "v":
            objs.append(ca.Vec3Df(*a["value"]))
        else:
            objs.append(a["value"])
    fn(*objs)
    got = to_np(objs[0])
    got = [got] if row.out == "I" else got
    for gt, r in zip(got, ref):
        np.testing.assert_allclose(gt, r, rtol=rtol, atol=atol, err_msg=c["id"] + " (PyCA)")
