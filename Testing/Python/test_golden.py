"""Replays the legacy golden cases (shared/golden, see its README.md) of the
operators implemented so far. Each case is its own test."""
import json
import os

import numpy as np
import pytest

import PyCA.Core as ca
from conftest import golden_dir_path

#: Golden groups replayed here (every case of these groups must pass); the
#: other groups (deform, diff, alg) follow with their operators.
GROUPS = {"pointwise", "reduction"}
#: Reductions whose result is a voxel value (exact, not accumulated).
EXACT = {"Max", "Min", "LInf", "MinMax"}
#: Ops whose result is the return value.
REDUCTIONS = {"Sum", "Sum2", "SumComp", "L1", "LInf", "Dot", "MinMax", "Max", "Min"}


def load_manifest():
    d = golden_dir_path()
    if d is None:
        return None, []
    with open(os.path.join(d, "manifest.json")) as fh:
        m = json.load(fh)
    return d, m["cases"]


GOLDEN, CASES = load_manifest()
SELECTED = [c for c in CASES if c["group"] in GROUPS]


def load_array(entry):
    """README loader: image -> (X, Y, Z) array, field -> list of three."""
    a = np.fromfile(os.path.join(GOLDEN, entry["file"]), dtype="<f4")
    s = tuple(entry["grid"]["size"])
    if entry["kind"] == "field":
        return [c.reshape(s, order="F") for c in a.reshape(3, -1)]
    return a.reshape(s, order="F")


def make_grid(gd):
    return ca.GridInfo(ca.Vec3Di(*gd["size"]), ca.Vec3Df(*gd["spacing"]), ca.Vec3Df(*gd["origin"]))


def new_array(kind, gd):
    g = make_grid(gd)
    return ca.Field3D(g, ca.MEM_HOST) if kind == "field" else ca.Image3D(g, ca.MEM_HOST)


def fill(obj, data):
    if isinstance(obj, ca.Field3D):
        for v, d in zip(obj.asnp(), data):
            v[...] = d
    else:
        obj.asnp()[...] = data


def tolerance_check(got, ref, rtol, atol, what):
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert got.shape == ref.shape, what
    fin = np.isfinite(ref)
    # non-finite reference values must match exactly (NaN where NaN, same inf)
    assert np.array_equal(got[~fin], ref[~fin], equal_nan=True), what
    err = np.abs(got[fin] - ref[fin])
    lim = atol + rtol * np.abs(ref[fin])
    bad = err > lim
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(np.broadcast_to(fin, ref.shape))[np.argmax(err - lim)])
        raise AssertionError("%s: %d of %d values off; worst at %s: got %r, want %r (tol %g)"
                             % (what, bad.sum(), bad.size, idx, float(got[idx]), float(ref[idx]),
                                atol + rtol * abs(ref[idx])))


def case_atol(case):
    """atol = rtol * max(1, largest |value| of the outputs and returns)."""
    rtol = case["tolerance"]["rtol"]
    m = 1.0
    for o in case["outputs"]:
        m = max(m, float(o.get("max_abs", 0.0)))
    r = case.get("returns")
    if r is not None:
        m = max(m, float(np.max(np.abs(np.asarray(r, dtype=np.float64)))))
    return rtol * m


def build_args(case):
    """Allocates and loads the arrays; returns (objects by name, positional args)."""
    inputs = {}
    for e in case["inputs"]:
        inputs.setdefault(e["arg"], []).append(e)
    objs, args = {}, []
    for a in case["args"]:
        t, name = a["type"], a["name"]
        if t in ("Image3D", "Field3D"):
            entries = inputs.get(name, [])
            gd = entries[0]["grid"] if entries else next(
                o["grid"] for o in case["outputs"] if o["arg"] == name)
            obj = new_array("field" if t == "Field3D" else "image", gd)
            if entries:  # role in / inout / initial
                fill(obj, load_array(entries[0]))
            else:
                # out without a given initial value: poison it so that an op
                # writing too little shows up
                ca.SetMem(obj, float("nan"))
            objs[name] = obj
            args.append(obj)
        elif name == "prior":
            continue  # C++-only prior value of the output float
        elif t == "Vec3Df":
            args.append(ca.Vec3Df(*a["value"]))
        elif t == "float":
            args.append(float(a["value"]))
        elif t in ("int", "uint"):
            args.append(int(a["value"]))
        elif t == "bool":
            args.append(bool(a["value"]))
        else:
            enum_name = a["value"]
            args.append(getattr(ca, enum_name))
    return objs, args


@pytest.mark.parametrize("case", SELECTED, ids=[c["id"] for c in SELECTED])
def test_golden_case(case):
    if GOLDEN is None:
        pytest.skip("golden data not available")
    fn = getattr(ca, case["op"])
    objs, args = build_args(case)
    rtol = case["tolerance"]["rtol"]
    atol = case["tolerance"].get("atol", case_atol(case))
    if case.get("expect_error"):
        with pytest.raises(RuntimeError) as ei:
            fn(*args)
        assert case["expect_error"] in str(ei.value)
        return
    ret = fn(*args)
    if case["op"] in REDUCTIONS and case.get("returns") is not None:
        want = case["returns"]
        got = ret.tolist() if isinstance(ret, ca.Vec3Df) else ret
        if case["scalars"].get("update"):
            # C++ only: the output float held `prior` before the call and the
            # result was combined with it. Python returns the plain result.
            combine = {"Max": max, "Min": min, "LInf": max}.get(case["op"], lambda p, r: p + r)
            got = combine(case["scalars"]["prior"], got)
        tolerance_check(got, want, rtol, atol, "%s return" % case["id"])
        if case["op"] in EXACT:
            # an extremum is one of the voxel values: equal in float32
            assert np.array_equal(np.float32(got), np.float32(want)), (case["id"], got, want)
    for out in case["outputs"]:
        ref = load_array(out)
        obj = objs[out["arg"]]
        assert obj.grid() == make_grid(out["grid"]), case["id"]
        if isinstance(obj, ca.Field3D):
            for d, (g, r) in enumerate(zip(obj.asnp(), ref)):
                tolerance_check(g, r, rtol, atol, "%s %s[%d]" % (case["id"], out["arg"], d))
        else:
            tolerance_check(obj.asnp(), ref, rtol, atol, "%s %s" % (case["id"], out["arg"]))


def test_golden_selection_not_empty():
    if GOLDEN is None:
        pytest.skip("golden data not available")
    assert len(SELECTED) == 364 + 42
