"""Replays every FluidKernelFFT case of the golden `alg` group (shared/golden,
see its README.md): 6 parameter sets (gamma = 0 included) on the 3-D and the
2-D grid, applyOperator and applyInverseOperator, two-argument and in place.

A case's `setup` describes the kernel ("k.setAlpha(..); ...; k.setGrid(grid);
then the call"); its scalars (alpha, beta, gamma, lpow, divergenceFree)
carry the same values, and the call takes the Field3D arguments of its
signature. The legacy outputs are compared with the case's tolerance
(rtol 1e-4, atol = rtol * max(1, max |output|)). No case here has a note we
deviate from.
"""
import re

import numpy as np
import pytest

import PyCA.Core as ca
from test_golden import CASES, build_args, case_atol, load_array, make_grid, tolerance_check

#: the kernel setters named in a case's setup, with the scalar each takes
SETTERS = {"setAlpha": ("alpha", float), "setBeta": ("beta", float), "setGamma": ("gamma", float),
           "setLPow": ("lpow", int), "setDivergenceFree": ("divergenceFree", bool)}

FLUID = [c for c in CASES if c["group"] == "alg" and c["op"].startswith("FluidKernelFFT.")]
#: the manifest's FluidKernelFFT cases (checked below, so none is silently dropped)
N_FLUID = 32


def test_all_fluid_cases_selected():
    if not CASES:
        pytest.skip("golden data not available")
    assert len(FLUID) == N_FLUID


def kernel_for(case):
    """FluidKernelFFTCPU configured as the case's setup says."""
    setup = case["setup"]
    assert "FluidKernelFFT<EXEC_CPU>" in setup, setup
    k = ca.FluidKernelFFTCPU()
    calls = re.findall(r"k\.(\w+)\(([^)]*)\)", setup)
    names = [n for n, _ in calls]
    assert names[-1] == "setGrid", setup
    for name, arg in calls[:-1]:
        scalar, conv = SETTERS[name]
        value = case["scalars"][scalar]
        # the setup text and the scalars agree
        text = arg.strip().lower()
        assert (conv(value) == (text == "true")) if conv is bool else np.isclose(conv(text), value), setup
        getattr(k, name)(conv(value))
    k.setGrid(make_grid(case["grid"]))
    return k


@pytest.mark.parametrize("case", FLUID, ids=[c["id"] for c in FLUID])
def test_golden_fluid(case):
    k = kernel_for(case)
    objs, args = build_args(case)
    fields = [a for a in args if isinstance(a, ca.Field3D)]
    method = getattr(k, case["op"].split(".", 1)[1])
    method(*fields)
    rtol, atol = case["tolerance"]["rtol"], case_atol(case)
    for out in case["outputs"]:
        got = objs[out["arg"]].asnp()
        want = load_array(out)
        for d in range(3):
            tolerance_check(np.asarray(got[d]), want[d], rtol, atol, "%s[%d]" % (case["id"], d))
