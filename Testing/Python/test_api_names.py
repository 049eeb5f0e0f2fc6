"""The names and overload arities of every Opers group of spec 2.10 (A, B,
C, D, E, F, H, V, R: 232 names) and the 12 utility functions (spec sections
2.9, 2.10, 11 and Appendix A).

The group lists are hard-coded (from spec 2.10 / section 11) so that the
name checks run without the spec. When the spec is found (env PYCA_SPEC, else
<PYCA_SOURCE_DIR>/../shared/spec/PYCA_API.md) its Appendix A is parsed at
test time and every overload of the names below is called once with
arguments built from its signature: each overload must be accepted by the
SWIG dispatch (a RuntimeError from the C++ side, e.g. a CUDA utility in a
CPU-only build, still counts as "callable"; a TypeError does not).
"""
import collections
import os
import re

import pytest

import PyCA.Core as ca
from conftest import source_dir

# ---------------------------------------------------------------------------
# hard-coded group lists (spec 2.10 and section 11)

UNARY_OPS = ("Abs Cube Exp Log Neg Ramp Sgn Step Sqr Sqrt Inv Ceil Floor Round Sin Asin Cos "
             "Acos Tan Atan Csc Sec Cot").split()
BINARY_OPS = "Add Sub Mul Div Max Min Atan2 GT GTE EQ NEQ LT LTE".split()
FUSED_OPS = ("PowC AbsDiff SqrDiff MulMul MulAdd MulSub AddMul AddDiv SubMul SubDiv MulCAdd "
             "MulCSub MulCAddC AddMulC SubMulC AddCMulC Add_MulC Add_Mul Sub_Mul Add_AddMulC "
             "Add_SubMulC Add_MulMulC Sub_AddMulC Sub_SubMulC Sub_MulMulC MulC_Add_MulC "
             "AddCMulCAddC MulMulC").split()

GROUPS = {
    "A": [n for op in UNARY_OPS for n in (op, op + "_I")],
    "B": [n for op in BINARY_OPS for n in (op, op + "_I", op + "C", op + "C_I")],
    "C": [n for op in FUSED_OPS for n in (op, op + "_I")],
    "D": ("Copy SetMem ShiftCoordinate SubVol SetSubVol_I Shrink Shrink_I SoftAbs SoftAbs_I "
          "SoftSgn SoftSgn_I Resample ResampleWorld SplatWorld Convolve").split(),
    "E": ("ApplyH ApplyV ApplyVInv ComposeTranslation Splat FiniteDiff Gradient Gradient2 "
          "GradientMask GradFor GradForMag GradientMag UpwindDiff UpwindGradMag Divergence DivBack "
          "Magnitude SqrMagnitude ComponentDotProd JacDetH JacDetV JacDetVInv").split(),
    "F": ("ComposeHH ComposeVH ComposeVInvH ComposeHV ComposeHVInv Jacobian SplatField NormalizeSafe "
          "NormalizeSafe_I ReprojectToUnitVec FixedPointInverse UpdateInverse Ad AdInf CoAd CoAdInf "
          "DivergenceTensor JacobianXY JacobianXtY").split(),
    "H": ("SetToIdentity HtoV HtoV_I ComposeHTranslation ResampleH InverseZerothOrder "
          "InverseZerothOrder_I SplatH InitializeHFromAffine").split(),
    "V": "SetToZero VtoH VtoH_I ComposeVTranslation SplatV ResampleV".split(),
    "R": "Sum Sum2 LInf L1 Dot MinMax SumComp".split(),
    "U": ("GetNumberOfCUDADevices SetCUDADevice CheckCUDAError GetCUDAMemUsage "
          "AssertMinCUDACapabilityVersion StreamCreate StreamDestroy GetStream "
          "CheckStreamCondition StreamIncompatibleWarning MemTypeStr Is1D").split(),
}
#: the full group D of the spec
FULL_D = GROUPS["D"]
#: names whose implementation comes later, with the attribute that signals it
LATER = {"InitializeHFromAffine": "Aff3Df"}

ALL_NAMES = [n for g in GROUPS.values() for n in g]
NAME_GROUP = {n: g for g, names in GROUPS.items() for n in names}


def skip_if_later(name):
    attr = LATER.get(name)
    if attr is not None and not hasattr(ca, attr):
        pytest.skip("%s comes with ca.%s (not built yet)" % (name, attr))


def test_group_sizes():
    sizes = {g: len(v) for g, v in GROUPS.items()}
    assert sizes == dict(A=46, B=52, C=56, D=15, E=22, F=19, H=9, V=6, R=7, U=12)
    assert sum(v for g, v in sizes.items() if g != "U") == 232  # spec 2.10
    assert len(set(ALL_NAMES)) == len(ALL_NAMES)


@pytest.mark.parametrize("name", ALL_NAMES)
def test_name_exists(name):
    skip_if_later(name)
    if not hasattr(ca, name):
        pytest.fail("PyCA.Core lacks %s (group %s)" % (name, NAME_GROUP[name]), pytrace=False)
    assert callable(getattr(ca, name))


# ---------------------------------------------------------------------------
# the spec and its Appendix A

def spec_path():
    """The spec file or None."""
    cands = [os.environ.get("PYCA_SPEC"),
             os.path.join(source_dir(), "..", "shared", "spec", "PYCA_API.md"),
             os.path.join(source_dir(), "shared", "spec", "PYCA_API.md")]
    for p in cands:
        if p and os.path.isfile(p):
            return os.path.abspath(p)
    return None


def spec_text():
    p = spec_path()
    if p is None:
        return None
    with open(p, encoding="utf-8") as f:
        return f.read()


Param = collections.namedtuple("Param", "type name default")
Overload = collections.namedtuple("Overload", "name index params ondev ret text")

_LINE = re.compile(r"^- \*\*(\w+)\*\* \[(\d+)\]: (.*)$")
_OVL = re.compile(r"^\((.*?)\)(\+onDev)?(?:\s*->\s*(.+))?$")


def _param(p):
    default = None
    if "=" in p:
        p, default = (s.strip() for s in p.split("=", 1))
    p = p.strip()
    words = p.split()
    if len(words) == 1:  # an enum written by its parameter name: bg, interp, diff, bc, dim
        return Param(words[0], words[0], default)
    return Param(" ".join(words[:-1]), words[-1], default)


def parse_appendix_a(text):
    """{name: [Overload, ...]} from the spec's Appendix A; raises ValueError
    on a line it cannot read."""
    start = text.index("## Appendix A")
    out = {}
    for line in text[start:].splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        name, count, rest = m.group(1), int(m.group(2)), m.group(3)
        ovls = []
        for i, o in enumerate(s.strip() for s in rest.split(" | ")):
            mo = _OVL.match(o)
            if not mo:
                raise ValueError("cannot parse overload %r of %s" % (o, name))
            body = mo.group(1).strip()
            params = [_param(p) for p in body.split(",")] if body else []
            ovls.append(Overload(name, i, params, bool(mo.group(2)),
                                 mo.group(3).strip() if mo.group(3) else None, o))
        if len(ovls) != count:
            raise ValueError("%s: [%d] but %d overloads listed" % (name, count, len(ovls)))
        out[name] = ovls
    return out


def parse_feature_table(text):
    """{group letter: [names]} from the compact feature table (section 11)."""
    start = text.index("## 11.")
    rows = {}
    for line in text[start:text.index("## Appendix A")].splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 4:
            continue
        m = re.match(r"^([ABCDEFHVR])\. ", cells[1])
        if m:
            rows[m.group(1)] = cells[2]
        elif cells[1] == "Utilities":
            rows["U"] = cells[2]
    groups = {}
    for g, cell in rows.items():
        if g == "B":
            ops = cell.split("×")[0].split()
            names = [n for op in ops for n in (op, op + "_I", op + "C", op + "C_I")]
        else:
            base = cell.split("(")[0].replace(";", " ").split()
            names = list(base)
            if g in "AC":
                names = [n for op in base for n in (op, op + "_I")]
        groups[g] = names
    return groups


SPEC = spec_text()
APPENDIX = parse_appendix_a(SPEC) if SPEC else {}
needs_spec = pytest.mark.skipif(SPEC is None, reason="spec PYCA_API.md not found (set PYCA_SPEC)")


@needs_spec
def test_hard_coded_groups_match_spec():
    table = parse_feature_table(SPEC)
    assert sorted(table) == sorted(GROUPS)
    for g in GROUPS:
        assert sorted(table[g]) == sorted(GROUPS[g]), g


@needs_spec
@pytest.mark.parametrize("name", ALL_NAMES)
def test_name_in_appendix_a(name):
    assert name in APPENDIX, "%s missing from Appendix A" % name


@needs_spec
def test_appendix_a_totals():
    # spec section 2: 244 module-level functions = 232 Opers names + 12 utilities
    assert len(APPENDIX) == 244
    assert sum(len(v) for k, v in APPENDIX.items() if k not in GROUPS["U"]) == 492


# ---------------------------------------------------------------------------
# every overload of the groups above is callable with its arity

ARITY_GRID = ca.GridInfo(ca.Vec3Di(4, 3, 2), ca.Vec3Df(0.7, 1.3, 2.1), ca.Vec3Df(1.0, -2.0, 0.5))


def _image():
    im = ca.Image3D(ARITY_GRID, ca.MEM_HOST)
    ca.SetMem(im, 0.5)
    return im


def _field():
    f = ca.Field3D(ARITY_GRID, ca.MEM_HOST)
    ca.SetMem(f, 0.5)
    return f


#: fields whose raw component pointers were handed out (a pointer proxy does
#: not keep its field alive)
_KEEP = []


def _component_pointer():
    f = _field()
    _KEEP.append(f)
    return f.x


def _affine():
    if not hasattr(ca, "Aff3Df"):
        pytest.skip("ca.Aff3Df not built yet")
    return ca.Aff3Df()


#: builders for each parameter type of Appendix A used by the tested groups
#: (enums written by their parameter name: dim, diff, bc, op, bg, interp)
BUILDERS = {
    "Im": _image,
    "Fld": _field,
    "float": lambda: 0.5,
    "float*": _component_pointer,
    "Vec3Df": lambda: ca.Vec3Df(0.5, 0.5, 0.5),
    "Vec3Di": lambda: ca.Vec3Di(0, 0, 0),
    "Aff3Df": _affine,
    "bool": lambda: False,
    "int": lambda: 0,
    "uint": lambda: 2,
    "size_t": lambda: 0,
    "dim": lambda: ca.DIM_X,
    "diff": lambda: ca.DIFF_CENTRAL,
    "bc": lambda: ca.BC_CLAMP,
    "op": lambda: ca.OP_VAL,
    "bg": lambda: ca.BACKGROUND_STRATEGY_CLAMP,
    "interp": lambda: ca.INTERP_LINEAR,
    "MemoryType": lambda: ca.MEM_HOST,
    "char const *": lambda: "pyca_test",
}

#: default values as written in Appendix A
DEFAULTS = {"F": False, "T": True, "None": None}
#: prefixes of enumerators written without them (bg=CLAMP, interp=LINEAR)
ENUM_PREFIX = {"bg": "BACKGROUND_STRATEGY_", "interp": "INTERP_"}


def _default_value(p):
    if p.default in DEFAULTS:
        return DEFAULTS[p.default]
    try:
        return float(p.default) if "." in p.default else int(p.default)
    except ValueError:
        if hasattr(ca, p.default):
            return getattr(ca, p.default)
        return getattr(ca, ENUM_PREFIX[p.type] + p.default)


def arg_forms(ovl):
    """(label, args) for each form to try: required args only, all declared
    args, + trailing stream, + trailing onDev."""
    for p in ovl.params:
        if p.type not in BUILDERS:
            raise KeyError("no argument builder for type %r in %s" % (p.type, ovl.text))
    req = [BUILDERS[p.type]() for p in ovl.params if p.default is None]
    full = [BUILDERS[p.type]() if p.default is None else _default_value(p) for p in ovl.params]
    forms = [("required", req)]
    if len(full) != len(req):
        forms.append(("all declared", full))
    if NAME_GROUP[ovl.name] != "U":
        forms.append(("+st", full + [None]))
        if ovl.ondev:
            forms.append(("+st+onDev", full + [None, False]))
    return forms


RETURN_CHECKS = {
    "float": lambda r: isinstance(r, float),
    "(min, max)": lambda r: len(r) == 2 and all(isinstance(x, float) for x in r),
    "Vec3Df": lambda r: isinstance(r, ca.Vec3Df),
    "bool": lambda r: isinstance(r, bool),
    "unsigned int": lambda r: isinstance(r, int),
    "std::string": lambda r: isinstance(r, str),
    "char const *": lambda r: isinstance(r, str),
}

def _overloads():
    return [o for n in ALL_NAMES for o in APPENDIX.get(n, [])]


@pytest.mark.parametrize("ovl", _overloads(), ids=lambda o: "%s[%d]" % (o.name, o.index))
def test_overload_arity_callable(ovl):
    skip_if_later(ovl.name)
    if not hasattr(ca, ovl.name):
        pytest.fail("PyCA.Core lacks %s" % ovl.name, pytrace=False)
    fn = getattr(ca, ovl.name)
    failures = []
    for label, args in arg_forms(ovl):
        try:
            ret = fn(*args)
        except (TypeError, NotImplementedError) as e:
            failures.append("%s%s (%s): %s: %s" % (ovl.name, ovl.text, label, type(e).__name__,
                                                  str(e).splitlines()[0] if str(e) else ""))
            continue
        except (RuntimeError, ValueError):
            continue  # accepted by the dispatch, refused by the C++ side (e.g. no CUDA)
        finally:
            if ovl.name == "StreamCreate":
                try:
                    ca.StreamDestroy()
                except RuntimeError:
                    pass
        if ovl.ret in RETURN_CHECKS:
            assert RETURN_CHECKS[ovl.ret](ret), "%s (%s) returned %r, expected %s" % (
                ovl.text, label, ret, ovl.ret)
    assert not failures, "\n".join(failures)


@needs_spec
@pytest.mark.parametrize("name", [n for n in ALL_NAMES if NAME_GROUP[n] != "U"])
def test_wrong_arity_is_type_error(name):
    """One argument too many (after st and onDev) and no arguments at all
    raise TypeError, never crash."""
    skip_if_later(name)
    fn = getattr(ca, name, None)
    if fn is None:
        pytest.fail("PyCA.Core lacks %s" % name, pytrace=False)
    with pytest.raises(TypeError):
        fn()
    longest = max(APPENDIX[name], key=lambda o: len(o.params))
    args = arg_forms(longest)[-1][1]
    with pytest.raises(TypeError):
        fn(*(args + [None, False, None]))
