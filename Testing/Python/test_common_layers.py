"""PyCA.Common has no import cycle (issue 17, item 10): ``_arrays`` (NumPy
conversions) is the lowest module, ``PyCAIO`` imports it but never
``PyCACommon``, and ``PyCACommon`` imports both. Each module imports alone in
a fresh interpreter, the lower ones do not load the upper ones (checked in
``sys.modules`` after the import, with the package ``__init__`` kept out of
the way, and in the source, function-level imports included), and every
public name is still importable from where it was.
"""
import ast
import importlib
import importlib.util
import json

import pytest

from conftest import run_python

PKG = "PyCA.Common"
#: module -> the Common modules it must never import (directly or lazily)
LOWER = {
    "_arrays": {"PyCAIO", "PyCACommon", "PyCATestData", "PyCADebug", "PyCAVersion"},
    "PyCAIO": {"PyCACommon", "PyCATestData"},
    # the file-safety layer and the shared helpers sit below PyCAIO (issue 28)
    "atomic": {"PyCAIO", "PyCACommon", "PyCATestData", "PyCADebug", "PyCAVersion"},
    "_helpers": {"PyCAIO", "PyCACommon", "PyCATestData", "PyCADebug", "PyCAVersion"},
}

# Imports PyCA.Common.<name> with the package's __init__ replaced by a bare
# package object (so that the star-imports of PyCA/Common/__init__.py do not
# load every module), then prints the PyCA.Common modules that got loaded.
_ISOLATED = r"""
import importlib, importlib.util, json, sys, types
import PyCA
spec = importlib.util.find_spec("PyCA.Common")
pkg = types.ModuleType("PyCA.Common")
pkg.__path__ = list(spec.submodule_search_locations)
pkg.__package__ = "PyCA.Common"
sys.modules["PyCA.Common"] = pkg
mod = importlib.import_module("PyCA.Common." + sys.argv[1])
print(json.dumps(sorted(m for m in sys.modules if m.startswith("PyCA.Common."))))
"""


@pytest.mark.parametrize("name", ["_arrays", "PyCAIO", "PyCACommon", "PyCATestData"])
def test_module_imports_alone(name):
    """A fresh interpreter imports the module by itself (the package first,
    as Python does) and its public names work."""
    code = ("import importlib, sys\n"
            "m = importlib.import_module('PyCA.Common.' + sys.argv[1])\n"
            "names = getattr(m, '__all__', [])\n"
            "missing = [n for n in names if not hasattr(m, n)]\n"
            "assert not missing, missing\n"
            "print('ok', len(names))\n")
    r = run_python(code, name)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok")


@pytest.mark.parametrize("name", sorted(LOWER))
def test_lower_module_does_not_load_upper(name):
    r = run_python(_ISOLATED, name)
    assert r.returncode == 0, r.stderr
    loaded = {m.rsplit(".", 1)[1] for m in json.loads(r.stdout.strip().splitlines()[-1])}
    assert name in loaded
    assert not (loaded & LOWER[name]), "%s loaded %s" % (name, sorted(loaded & LOWER[name]))


def test_upper_module_loads_lower():
    """The isolation above is real: PyCACommon alone does load PyCAIO and _arrays."""
    r = run_python(_ISOLATED, "PyCACommon")
    assert r.returncode == 0, r.stderr
    loaded = {m.rsplit(".", 1)[1] for m in json.loads(r.stdout.strip().splitlines()[-1])}
    assert {"PyCACommon", "PyCAIO", "_arrays"} <= loaded


def _imported_common_modules(path):
    """Names of PyCA.Common modules imported anywhere in the source file
    (module level or inside functions; relative or absolute)."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), filename=path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level == 1:  # from . import X / from .X import y
                out.update([mod.split(".")[0]] if mod else [a.name for a in node.names])
            elif mod.startswith(PKG + "."):
                out.add(mod[len(PKG) + 1:].split(".")[0])
            elif mod == PKG:
                out.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(PKG + "."):
                    out.add(a.name[len(PKG) + 1:].split(".")[0])
                elif a.name == PKG:
                    out.add("__init__")
    return out


@pytest.mark.parametrize("name", sorted(LOWER))
def test_source_has_no_upward_import(name):
    path = importlib.util.find_spec(PKG + "." + name).origin
    found = _imported_common_modules(path)
    bad = found & (LOWER[name] | {"__init__"})
    assert not bad, "%s imports %s" % (name, sorted(bad))


def test_import_scanner_can_fail():
    """The scanner finds the import forms it is meant to catch."""
    import tempfile
    src = ("from .PyCACommon import x\n"
           "def f():\n    from . import PyCAIO\n    import PyCA.Common.PyCADebug\n"
           "    from PyCA.Common.PyCAVersion import v\n    from PyCA.Common import PyCATestData\n")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(src)
    assert _imported_common_modules(fh.name) == {"PyCACommon", "PyCAIO", "PyCADebug",
                                                 "PyCAVersion", "PyCATestData"}


def test_public_names_where_they_were():
    common = importlib.import_module(PKG)
    pc = importlib.import_module(PKG + ".PyCACommon")
    io = importlib.import_module(PKG + ".PyCAIO")
    arrays = importlib.import_module(PKG + "._arrays")
    for n in pc.__all__:
        assert getattr(common, n) is getattr(pc, n), n
    for n in io.__all__:
        assert getattr(common, n) is getattr(io, n), n
    # the conversions live in _arrays and are the same objects everywhere
    # (PyCAIO imported them from PyCACommon before; they are still there)
    for n in ("ImFromNPArr", "FieldFromNPArr", "AsNPCopy", "CopyDataFromNPArr",
              "IsImage3D", "IsField3D"):
        assert n in pc.__all__
        assert getattr(pc, n) is getattr(arrays, n) is getattr(common, n), n
    for n in ("AsNPCopy", "FieldFromNPArr", "ImFromNPArr", "IsField3D", "IsImage3D"):
        assert getattr(io, n) is getattr(arrays, n), n
    # PyCATestData's private helpers from PyCACommon
    assert callable(pc._vec3f) and callable(pc._rng) and callable(pc._normal)
