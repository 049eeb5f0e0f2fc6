"""The layout of the pure-Python package (issue 28): no import circle between
the modules of ``PyCA``, few imports of private names across modules, and
no function of ``PyCA.Apps`` longer than 150 lines.

Read from the source (``ast``), so the test needs no build: every
``import`` and ``from ... import`` of a module is an edge, wherever it
stands (a deferred import inside a function still ties the two modules).
"""
import ast
import os

import pytest

SRC = os.path.join(os.environ.get('PYCA_SOURCE_DIR',
                                  os.path.join(os.path.dirname(__file__), '..', '..')),
                   'Code', 'Python', 'PyCA')

#: imports of ``_``-names from another PyCA module that are allowed (the
#: issue allows at most 5); each is ``(importer, module, name)``.
MAX_PRIVATE_IMPORTS = 5
MAX_APPS_FUNCTION_LINES = 150


def _modules():
    """{dotted name: path} of every module under Code/Python/PyCA."""
    out = {}
    for root, _dirs, files in os.walk(SRC):
        for f in files:
            if not f.endswith('.py'):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, os.path.dirname(SRC))[:-3].split(os.sep)
            if rel[-1] == '__init__':
                rel = rel[:-1]
            out['.'.join(rel)] = path
    return out


def _resolve(mod, is_pkg, level, name):
    """The absolute module name of a relative import in ``mod``."""
    if level == 0:
        return name
    parts = mod.split('.')
    base = parts if is_pkg else parts[:-1]
    base = base[:len(base) - (level - 1)] if level > 1 else base
    return '.'.join(base + ([name] if name else []))


def _imports(mods):
    """[(importer, imported module, [names])] of every PyCA-internal import."""
    edges = []
    for mod, path in mods.items():
        is_pkg = path.endswith('__init__.py')
        tree = ast.parse(open(path, encoding='utf-8').read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith('PyCA'):
                        edges.append((mod, a.name, []))
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(mod, is_pkg, node.level, node.module)
                if not target.startswith('PyCA'):
                    continue
                names = [a.name for a in node.names]
                # "from . import x" / "from PyCA.Apps import greedy": x may be a module
                sub = [n for n in names if target + '.' + n in mods]
                for n in sub:
                    edges.append((mod, target + '.' + n, []))
                rest = [n for n in names if n not in sub]
                if rest or not sub:
                    edges.append((mod, target, rest))
    return edges


def _module_of(name, mods):
    """``name`` itself or the longest module prefix of it (PyCA.Core is not a source module)."""
    while name and name not in mods:
        name = name.rpartition('.')[0]
    return name


def _graph(mods):
    g = {m: set() for m in mods}
    for a, b, _names in _imports(mods):
        b = _module_of(b, mods)
        if b and b != a and not a.startswith(b + '.') and b != 'PyCA':
            # a package's __init__ importing its submodules, and a submodule
            # importing its own package's top (PyCA), are the package structure
            if not (a == b.rpartition('.')[0]):
                g[a].add(b)
    return g


def _cycles(g):
    """The strongly connected components of ``g`` with more than one node."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


#: generated modules (not in the source tree) that may be imported by name
GENERATED = {'_build_info'}


def _private(n):
    return n.startswith('_') and not n.startswith('__') and n not in GENERATED


def _module_aliases(tree, mod, is_pkg, mods):
    """{local name: module} of the PyCA modules that ``tree`` binds by import."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in mods and a.asname:
                    out[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(mod, is_pkg, node.level, node.module)
            for a in node.names:
                if target + '.' + a.name in mods:
                    out[a.asname or a.name] = target + '.' + a.name
    return out


def private_imports(mods=None):
    """[(importer, module, name)] of ``_``-names imported from another PyCA
    module, or read as attributes of an imported PyCA module (``PyCAIO._x``)."""
    mods = mods or _modules()
    out = []
    for a, b, names in _imports(mods):
        if b not in mods:       # PyCA.Core: the generated SWIG layer's own helpers
            continue
        for n in names:
            if _private(n):
                out.append((a, b, n))
    for mod, path in mods.items():
        tree = ast.parse(open(path, encoding='utf-8').read(), path)
        aliases = _module_aliases(tree, mod, path.endswith('__init__.py'), mods)
        seen = set()
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and _private(node.attr)
                    and aliases[node.value.id] != mod):
                key = (mod, aliases[node.value.id], node.attr)
                if key not in seen:
                    seen.add(key)
                    out.append(key)
    return out


def test_the_source_tree_is_found():
    mods = _modules()
    assert 'PyCA.Apps.lddmm' in mods and 'PyCA.Common.PyCAIO' in mods


def test_no_import_circle():
    cycles = _cycles(_graph(_modules()))
    assert not cycles, "import circles between PyCA modules: %s" % cycles


def test_few_private_imports_across_modules():
    found = private_imports()
    assert len(found) <= MAX_PRIVATE_IMPORTS, (
        "%d imports of private names between PyCA modules (at most %d):\n%s"
        % (len(found), MAX_PRIVATE_IMPORTS, '\n'.join('%s: from %s import %s' % f for f in found)))


def test_no_long_functions_in_apps():
    long_ = []
    for mod, path in _modules().items():
        if not mod.startswith('PyCA.Apps'):
            continue
        tree = ast.parse(open(path, encoding='utf-8').read(), path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_APPS_FUNCTION_LINES:
                    long_.append('%s.%s: %d lines' % (mod, node.name, n))
    assert not long_, "functions longer than %d lines: %s" % (MAX_APPS_FUNCTION_LINES, long_)


def test_the_checks_can_fail():
    # the cycle finder and the private-import finder on a made-up graph / tree
    assert _cycles({'a': {'b'}, 'b': {'a'}, 'c': set()}) == [['a', 'b']]
    assert _cycles({'a': {'b'}, 'b': set()}) == []


if __name__ == '__main__':  # pragma: no cover - a report for developers
    mods = _modules()
    print('cycles:', _cycles(_graph(mods)))
    for f in private_imports(mods):
        print('private: %s: from %s import %s' % f)
    pytest.main([__file__, '-q'])
