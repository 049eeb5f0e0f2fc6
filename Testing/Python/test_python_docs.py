"""Every public name of the pure-Python packages has a Google-style docstring
that names each of its parameters (issue 17, item 5).

Checked packages: PyCA.Common, PyCA.Display, PyCA.Numpy, PyCA.Parallel,
PyCA.VTK and PyCA.Apps, every module of each (found by listing the source
folder, so a new module is checked without editing this file). Public
names are module-level functions and classes without a leading underscore
that are defined in that module, and their public methods and properties.

A function's docstring must list each parameter of its signature (skipping
self/cls) as a Google-style entry, ``name: ...`` or ``name (type): ...``,
in an ``Args:`` section (or ``Attributes:``, ``Keyword Args:``, ...;
``*args``/``**kwargs`` may be written with or without their stars). A
class's ``__init__`` parameters may be listed in the class docstring or in
``__init__``'s own.

Two independent checks run: one on the imported module (inspect), one on
its source (ast). The ast check needs no import, so a module whose optional
dependency (mpi4py, vtk) is missing is still checked and the test cannot
pass vacuously; only its import check is skipped.
"""
import ast
import importlib
import inspect
import os
import re

import pytest

from conftest import source_dir

PACKAGES = ["Common", "Display", "Numpy", "Parallel", "VTK", "Apps"]
OPTIONAL_DEPS = {"mpi4py", "vtk"}
#: modules that are only run (``python -m``): importing them is an ImportError
RUN_ONLY = {"PyCA.Apps.register"}


def _package_dir():
    return os.path.join(source_dir(), "Code", "Python", "PyCA")


def _modules():
    """(dotted module name, source path) of every module of the packages."""
    out = []
    for pkg in PACKAGES:
        d = os.path.join(_package_dir(), pkg)
        for f in sorted(os.listdir(d)):
            if not f.endswith(".py"):
                continue
            stem = f[:-3]
            name = "PyCA.%s" % pkg if stem == "__init__" else "PyCA.%s.%s" % (pkg, stem)
            out.append((name, os.path.join(d, f)))
    return out


MODULES = _modules()


_SECTION = re.compile(r"^(\s*)(Args|Arguments|Parameters|Keyword Args|Keyword Arguments|"
                      r"Other Parameters|Attributes):\s*$")


def _param_sections(doc):
    """The lines of the Google-style parameter sections of ``doc`` (Args:,
    Attributes:, ...): each header's following lines that are blank or
    indented deeper than the header."""
    lines = inspect.cleandoc(doc or "").split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = _SECTION.match(lines[i])
        i += 1
        if not m:
            continue
        ind = len(m.group(1))
        while i < len(lines) and (not lines[i].strip() or
                                  len(lines[i]) - len(lines[i].lstrip()) > ind):
            out.append(lines[i])
            i += 1
    return "\n".join(out)


def _param_entry(doc, name):
    """True when ``doc`` has a Google-style entry for parameter ``name`` in
    one of its parameter sections (``name: ...`` or ``name (type): ...``)."""
    pat = r"^\s*\**%s\s*(\([^)\n]*\))?\s*:" % re.escape(name.lstrip("*"))
    return re.search(pat, _param_sections(doc), re.MULTILINE) is not None


def _missing_params(doc, params, extra_doc=""):
    return [p for p in params if not (_param_entry(doc, p) or _param_entry(extra_doc, p))]


# ---------------------------------------------------------------- ast check

def _ast_params(fn):
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    if a.vararg is not None:
        names.append("*" + a.vararg.arg)
    if a.kwarg is not None:
        names.append("**" + a.kwarg.arg)
    return [n for n in names if n not in ("self", "cls")]


def _top_level(body):
    """Top-level statements, looking into module-level if/try blocks."""
    for node in body:
        if isinstance(node, (ast.If, ast.Try)):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
            if isinstance(node, ast.Try):
                for h in node.handlers:
                    yield from _top_level(h.body)
                yield from _top_level(node.finalbody)
        else:
            yield node


def _is_property_setter(fn):
    for d in fn.decorator_list:
        if isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter"):
            return True
    return False


def ast_problems(path):
    """Problems found in the source file at ``path``, without importing it."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), filename=path)
    probs = []
    if not ast.get_docstring(tree):
        probs.append("module docstring missing")
    funcs = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in _top_level(tree.body):
        if isinstance(node, funcs) and not node.name.startswith("_"):
            doc = ast.get_docstring(node)
            if not doc:
                probs.append("%s: no docstring" % node.name)
                continue
            for p in _missing_params(doc, _ast_params(node)):
                probs.append("%s: parameter %r not documented" % (node.name, p))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            cdoc = ast.get_docstring(node)
            if not cdoc:
                probs.append("%s: no docstring" % node.name)
            for m in node.body:
                if not isinstance(m, funcs):
                    continue
                if m.name == "__init__":
                    idoc = ast.get_docstring(m) or ""
                    for p in _missing_params(cdoc or "", _ast_params(m), idoc):
                        probs.append("%s.__init__: parameter %r not documented" % (node.name, p))
                    continue
                if m.name.startswith("_") or _is_property_setter(m):
                    continue
                doc = ast.get_docstring(m)
                if not doc:
                    probs.append("%s.%s: no docstring" % (node.name, m.name))
                    continue
                for p in _missing_params(doc, _ast_params(m)):
                    probs.append("%s.%s: parameter %r not documented" % (node.name, m.name, p))
    return probs


# ------------------------------------------------------------ inspect check

def _sig_params(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    out = []
    for p in sig.parameters.values():
        if p.name in ("self", "cls"):
            continue
        if p.kind is p.VAR_POSITIONAL:
            out.append("*" + p.name)
        elif p.kind is p.VAR_KEYWORD:
            out.append("**" + p.name)
        else:
            out.append(p.name)
    return out


def import_problems(mod):
    """Problems found by inspecting the imported module ``mod``."""
    probs = []
    if not inspect.getdoc(mod):
        probs.append("module docstring missing")
    for name, obj in sorted(vars(mod).items()):
        if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
            continue
        if inspect.isfunction(obj):
            doc = obj.__doc__
            if not (doc and doc.strip()):
                probs.append("%s: no docstring" % name)
                continue
            for p in _missing_params(doc, _sig_params(obj)):
                probs.append("%s: parameter %r not documented" % (name, p))
        elif inspect.isclass(obj):
            cdoc = obj.__dict__.get("__doc__")
            if not (cdoc and cdoc.strip()):
                probs.append("%s: no docstring" % name)
                cdoc = ""
            init = obj.__dict__.get("__init__")
            if inspect.isfunction(init):
                for p in _missing_params(cdoc, _sig_params(init), init.__doc__ or ""):
                    probs.append("%s.__init__: parameter %r not documented" % (name, p))
            for mname, m in sorted(obj.__dict__.items()):
                if mname.startswith("_"):
                    continue
                if isinstance(m, property):
                    if not (m.fget is not None and m.fget.__doc__ and m.fget.__doc__.strip()):
                        probs.append("%s.%s: property without docstring" % (name, mname))
                    continue
                if isinstance(m, (staticmethod, classmethod)):
                    m = m.__func__
                if not inspect.isfunction(m):
                    continue
                if not (m.__doc__ and m.__doc__.strip()):
                    probs.append("%s.%s: no docstring" % (name, mname))
                    continue
                for p in _missing_params(m.__doc__, _sig_params(m)):
                    probs.append("%s.%s: parameter %r not documented" % (name, mname, p))
    return probs


# -------------------------------------------------------------------- tests

def test_every_package_has_modules():
    """The listing finds the modules (guards against a vacuous pass)."""
    names = {n for n, _ in MODULES}
    for expected in ("PyCA.Common.PyCACommon", "PyCA.Common.PyCAIO", "PyCA.Display.PyCADisplay",
                     "PyCA.Numpy.FiniteDiff", "PyCA.Parallel.PyCAParallel", "PyCA.VTK.PyCAVTK",
                     "PyCA.Apps.lddmm", "PyCA.Apps._common", "PyCA.Apps.register_cli"):
        assert expected in names


@pytest.mark.parametrize("name,path", MODULES, ids=[n for n, _ in MODULES])
def test_source_docstrings(name, path):
    probs = ast_problems(path)
    assert not probs, "%s (%s):\n  %s" % (name, path, "\n  ".join(probs))


@pytest.mark.parametrize("name,path", MODULES, ids=[n for n, _ in MODULES])
def test_imported_docstrings(name, path):
    if name in RUN_ONLY:
        pytest.skip("%s is only run (python -m), never imported (its source is still checked by "
                    "test_source_docstrings)" % name)
    try:
        mod = importlib.import_module(name)
    except ImportError as e:
        top = (getattr(e, "name", None) or "").split(".")[0]
        if top in OPTIONAL_DEPS:
            pytest.skip("%s needs %s (its source is still checked by test_source_docstrings)"
                        % (name, top))
        raise
    probs = import_problems(mod)
    assert not probs, "%s:\n  %s" % (name, "\n  ".join(probs))


# ------------------------------------------------ the checker itself can fail

_BAD = '''"""m"""
def documented(a, b=1, *args, **kw):
    """Does it.

    Args:
        a (int): first.
        b: second.
        *args: more.
        **kw: options.
    """

def half(a, b):
    """Does it.

    Args:
        a: first; mentions b in passing.
    """

def prose(a):
    """Does it.

    a: described, but not in an Args section.
    """

def bare(x):
    pass

class K:
    """A class.

    Args:
        n (int): size.
    """
    def __init__(self, n, m):
        pass

    def method(self, q):
        """Returns q.

        Args:
            q: the value.
        """

    def nodoc(self):
        pass

    def _private(self):
        pass
'''


def test_checker_catches_missing_docs(tmp_path):
    """The checks report exactly the planted omissions."""
    p = tmp_path / "planted.py"
    p.write_text(_BAD)
    probs = ast_problems(str(p))
    assert sorted(probs) == sorted([
        "half: parameter 'b' not documented",
        "prose: parameter 'a' not documented",
        "bare: no docstring",
        "K.__init__: parameter 'm' not documented",
        "K.nodoc: no docstring",
    ])
    import types
    mod = types.ModuleType("planted")
    exec(compile(_BAD, str(p), "exec"), mod.__dict__)
    assert sorted(import_problems(mod)) == sorted(probs)


def test_module_without_docstring_is_reported(tmp_path):
    p = tmp_path / "nodoc.py"
    p.write_text("def f():\n    '''Nothing.'''\n")
    assert ast_problems(str(p)) == ["module docstring missing"]


# ------------------------------------------- the Sphinx configuration (./run docs)

def _sphinx_conf():
    import importlib.util
    path = os.path.join(source_dir(), "Documentation", "api", "conf.py")
    spec = importlib.util.spec_from_file_location("pyca_sphinx_conf", path)
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


def test_every_guide_is_in_the_site():
    """Each Markdown guide of Documentation/ (and README.md) has a stub page
    that conf.py fills and a toctree entry in index.rst."""
    conf = _sphinx_conf()
    api = os.path.join(source_dir(), "Documentation", "api")
    guides = sorted(f[:-3] for f in os.listdir(os.path.join(source_dir(), "Documentation"))
                    if f.endswith(".md"))
    assert guides, "no guides found"
    with open(os.path.join(api, "index.rst"), encoding="utf-8") as fh:
        index = fh.read()
    for g in guides + ["README"]:
        assert g in conf._GUIDES, g
        assert os.path.isfile(os.path.join(api, "guides", g + ".md")), g
        assert re.search(r"^\s+guides/%s\s*$" % g, index, re.M), g
    for pkg in ["core", "common", "display", "numpy", "parallel", "vtk", "apps"]:
        assert re.search(r"^\s+%s\s*$" % pkg, index, re.M), pkg


def test_guide_links_are_rewritten_for_the_site():
    """Links between guides point at their pages, links to other repository
    files become their paths, anchors and URLs stay."""
    conf = _sphinx_conf()

    def rewrite(text, guide_dir):
        return conf._LINK.sub(lambda m: conf._rewrite_link(m, guide_dir), text)

    # README.md (repository root) -> the guides
    assert rewrite("[guide](Documentation/UserGuide.md#install)", "") == "[guide](UserGuide.md#install)"
    assert rewrite("see [it](Documentation/LegacyDifferences.md).", "") == \
        "see [it](LegacyDifferences.md)."
    # Documentation/X.md -> README and siblings
    assert rewrite("[b](../README.md#build-options-cmake)", "Documentation") == \
        "[b](README.md#build-options-cmake)"
    assert rewrite("[m](MemoryManager.md)", "Documentation") == "[m](MemoryManager.md)"
    # a repository file that is not a guide: its path in code style
    assert rewrite("[script](../Examples/greedy_registration.py)", "Documentation") == \
        "script (`Examples/greedy_registration.py` in the repository)"
    # anchors, URLs and images are left alone
    for s in ["[a](#section)", "[u](https://example.org/x.md)", "![pic](Documentation/UserGuide.md)"]:
        assert rewrite(s, "") == s


def test_core_docstrings_are_escaped_for_rst():
    """|x|, * and a trailing _ of PyCA.Core's plain-text docstrings are
    escaped (reStructuredText would read substitutions, emphasis, targets);
    other modules' docstrings are left as written."""
    conf = _sphinx_conf()
    lines = ["|x| + |y|", "a ** b", "all three (x_, y_, z_).", "    x_ (int): x component.", "_I forms"]
    conf._escape_core(None, "function", "PyCA.Core.Vec3Di.normL1", None, {}, lines)
    assert lines == ["\\|x\\| + \\|y\\|", "a \\*\\* b", "all three (x\\_, y\\_, z\\_).",
                     "    x\\_ (int): x component.", "_I forms"]
    other = ["``|x|`` and *emphasis*"]
    conf._escape_core(None, "function", "PyCA.Common.Foo", None, {}, other)
    assert other == ["``|x|`` and *emphasis*"]
