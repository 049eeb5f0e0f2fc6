"""Docstrings and type stubs of PyCA.Core (issue 17, items 5 and 6).

* Every public name of the built module (functions, classes, their public
  methods and properties; names added later are found at run time) has a
  docstring with prose beyond SWIG's signature lines, and a function's or
  method's "Args:" section names each of its arguments: the C++ parameter
  names of every overload, as SWIG reports them in the signature lines.
* mypy's stubtest accepts the generated PyCA/Core.pyi against the module, and
  mypy type-checks Examples/*.py with the stubs (skipped without mypy).

The docstrings come from Code/SWIG/doc/core_docs.py (Architecture.md,
"Docstrings and stubs"); a failure here names the entry to add.
"""
import inspect
import os
import re
import subprocess
import sys

import pytest

import PyCA.Core as core

SOURCE_DIR = os.environ.get('PYCA_SOURCE_DIR', os.path.join(os.path.dirname(__file__), '..', '..'))
PKG_DIR = os.path.dirname(os.path.dirname(core.__file__))     # the folder holding PyCA/

# SWIG internals and Python object machinery: no docstring expected.
SWIG_INTERNALS = {'thisown', 'this'}

SIG_RE = re.compile(r'^(\w+)\((.*)\)(?:\s*->\s*.*)?$')


def _load_generator():
    """The docstring generator's own signature splitter (one parser for both)."""
    import importlib.util
    path = os.path.join(SOURCE_DIR, 'Code', 'SWIG', 'doc', 'gen_core_docs.py')
    spec = importlib.util.spec_from_file_location('_pyca_gen_core_docs', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


split_params = _load_generator().split_params


def signature_lines(doc, name):
    """The SWIG signature lines at the top of a docstring: [(line, [argument names])]."""
    out = []
    for line in doc.strip().splitlines():
        if not line.strip():
            break                     # the signatures end at the first blank line
        m = SIG_RE.match(line.strip())
        if m and m.group(1) == name:
            names = []
            for p in split_params(m.group(2)):
                # 'name: Type = default' (Python style), or 'Type name=default' (C++ style)
                p = p.split('=', 1)[0].strip()
                named = re.match(r'^(\w+)\s*:(?!:)', p)
                if named:
                    names.append(named.group(1))
                else:
                    names.append(re.findall(r'\w+', p)[-1] if re.findall(r'\w+', p) else p)
            out.append((line, [n for n in names if n != 'self']))
    return out


def args_section(doc):
    """Argument names listed under "Args:" (Google style)."""
    lines = doc.splitlines()
    names, inside = set(), False
    for line in lines:
        if line.strip() == 'Args:':
            inside = True
            continue
        if inside:
            if line and not line.startswith(' '):
                break
            m = re.match(r'^    (\*{0,2}\w+)(?: \(.*?\))?:', line)
            if m:
                names.add(m.group(1).lstrip('*'))
    return names


def prose(doc, name):
    """The docstring without SWIG's signature lines."""
    sig = {l.strip() for l, _ in signature_lines(doc, name)}
    return '\n'.join(l for l in doc.splitlines() if l.strip() not in sig).strip()


def public_functions():
    for name, obj in sorted(vars(core).items()):
        if name.startswith('_') or inspect.isclass(obj) or not callable(obj):
            continue
        if getattr(obj, '__module__', None) != core.__name__:
            continue                  # imported helpers (math, numbers, ...)
        yield name, obj


def public_classes():
    for name, obj in sorted(vars(core).items()):
        if not name.startswith('_') and inspect.isclass(obj) and obj.__module__ == core.__name__:
            yield name, obj


def public_members(cls):
    """(name, raw attribute, owner class) of public methods and properties, inherited too."""
    seen = set()
    for klass in cls.__mro__:
        if klass is object or klass.__module__ != core.__name__:
            continue
        for name, raw in vars(klass).items():
            if name in seen or name.startswith('_') or name in SWIG_INTERNALS:
                continue
            seen.add(name)
            if isinstance(raw, (property, staticmethod, classmethod)) or inspect.isfunction(raw):
                yield name, raw, klass


def expected_args(obj, doc, name):
    """Argument names the docstring must describe: the C++ names of every overload
    (SWIG's signature lines), else the Python signature's."""
    sigs = signature_lines(doc, name)
    if sigs:
        return {n for _, names in sigs for n in names}
    fn = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in params if p.name not in ('self', 'cls')
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


def check_callable(label, obj, name, problems):
    fn = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
    doc = fn.__doc__ or ''
    if not prose(doc, name):
        problems.append('%s: no docstring (only the signature)' % label)
        return
    missing = expected_args(obj, doc, name) - args_section(doc)
    if missing:
        problems.append('%s: Args does not describe %s' % (label, ', '.join(sorted(missing))))


def test_module_is_enumerated():
    # the enumeration below really sees the module (a broken walk would pass vacuously)
    assert len(list(public_functions())) > 200
    assert len(list(public_classes())) > 20


def test_every_function_documented():
    problems = []
    for name, fn in public_functions():
        check_callable(name, fn, name, problems)
    assert not problems, ('undocumented in Code/SWIG/doc/core_docs.py:\n  ' + '\n  '.join(problems))


def test_every_class_and_member_documented():
    problems = []
    for cname, cls in public_classes():
        cdoc = cls.__doc__ or ''
        if not prose(cdoc, cname) or cdoc.strip() == 'Proxy of C++ %s class.' % cname:
            problems.append('%s: no class docstring' % cname)
        else:
            # the class docstring describes the constructor arguments
            missing = {n for _, names in signature_lines(cdoc, cname) for n in names} - args_section(cdoc)
            if missing:
                problems.append('%s: Args does not describe %s' % (cname, ', '.join(sorted(missing))))
        for mname, raw, owner in public_members(cls):
            label = '%s.%s' % (cname, mname)
            if isinstance(raw, property):
                if not (raw.__doc__ or '').strip() or re.match(r'^\w+ : [\w :<>*&]+$', raw.__doc__.strip()):
                    problems.append('%s: property without a description' % label)
                continue
            check_callable(label, raw, mname, problems)
    assert not problems, ('undocumented in Code/SWIG/doc/core_docs.py:\n  ' + '\n  '.join(problems))



# words that say nothing about a value: "Sets the size.", "alpha.", "Gets sigma."
_FILLER = {'the', 'a', 'an', 'sets', 'set', 'gets', 'get', 'of', 'is', 'in', 'to', 'returns',
           'value', 'current', 'this', 'its'}


def _words(text):
    text = re.sub(r'([a-z])([A-Z])', r'\1 \2', text)
    return [w.lower().rstrip('s') for w in re.findall(r'[A-Za-z0-9]+', text)]


def placeholder(name, doc):
    """Whether a docstring's summary (its first prose paragraph) only restates
    the name ("getAlpha: alpha.", "setSize: Sets the size.")."""
    summary = prose(doc, name).split('\n\n')[0]
    content = [w for w in _words(summary) if w not in _FILLER]
    return not content or set(content) <= set(_words(name)) | _FILLER


def test_placeholder_detector():
    assert placeholder('getAlpha', 'getAlpha(self) -> float\n\nalpha.')
    assert placeholder('setSize', 'Sets the size.')
    assert placeholder('fixedLo', 'fixedLo.')
    assert not placeholder('getAlpha', 'Alpha, the weight of the Laplacian term of L (mm^2).')
    assert not placeholder('nVox', 'Number of voxels.')


def test_no_placeholder_docstrings():
    """Every function and method says what it does (issue 31): no summary
    that only restates the name; getters say what the value is."""
    bad = []
    for name, fn in public_functions():
        if placeholder(name, fn.__doc__ or ''):
            bad.append(name)
    for cname, cls in public_classes():
        for mname, raw, owner in public_members(cls):
            fn = raw if isinstance(raw, property) else getattr(raw, '__func__', raw)
            if placeholder(mname, fn.__doc__ or ''):
                bad.append('%s.%s' % (cname, mname))
    assert not bad, 'placeholder docstrings (Code/SWIG/doc/core_docs.py):\n  ' + '\n  '.join(bad)


def test_docstrings_show_the_overloads_and_conventions():
    # the C++ overloads with typed argument names, then the prose (independent
    # reference: the legacy API's argument lists, spec Appendix A)
    doc = core.ApplyH.__doc__
    sigs = signature_lines(doc, 'ApplyH')
    assert len(sigs) == 2
    assert any(names[:3] == ['a_o', 'a_i', 'a_h'] for _, names in sigs)
    assert 'a_o: Image3D' in doc and 'bg: BackgroundStrategy = BACKGROUND_STRATEGY_CLAMP' in doc
    assert 'H-field' in doc and 'Args:' in doc and 'Raises:' in doc
    assert 'Input grids are not equal' in doc and 'memory types are not compatible' in doc
    assert 'in place' in core.Add_I.__doc__.lower() or 'first argument' in core.Add_I.__doc__
    assert 'a_mask' in args_section(core.Abs.__doc__)
    assert 'st' in args_section(core.Abs.__doc__)
    help_text = subprocess.run([sys.executable, '-c', 'import PyCA.Core as c; help(c.ApplyH)'],
                               capture_output=True, text=True, env=dict(os.environ, PAGER='cat'),
                               check=True).stdout
    assert 'Deforms by an H-field' in help_text and 'a_h' in help_text


def test_inspect_signature_of_single_overload_functions():
    # SWIG 4.1 proxies take *args; the non-overloaded ones get their C++ argument
    # names as positional-only parameters, with the C++ defaults
    sig = inspect.signature(core.GradFor)
    assert list(sig.parameters) == ['a_o', 'a_i', 'bc', 'st']
    assert all(p.kind is p.POSITIONAL_ONLY for p in sig.parameters.values())
    assert sig.parameters['st'].default is None
    assert repr(sig.parameters['bc'].default) == 'BC_CLAMP'
    assert inspect.signature(core.Splat).parameters['normalize'].default is False
    # overloaded functions keep *args (their docstring lists the overloads)
    assert list(inspect.signature(core.ApplyH).parameters) == ['args']


def test_a_missing_entry_is_reported(tmp_path):
    # the generator names what the table lacks (and the checks above fail on it)
    gen = os.path.join(SOURCE_DIR, 'Code', 'SWIG', 'doc', 'gen_core_docs.py')
    table = tmp_path / 'table.py'
    table.write_text('ARGS = {}\nSTUB_EXTRA = {}\n'
                     'def arg_doc(cls, name):\n    return None\n'
                     'def lookup(cls, name):\n    return None\n')
    core_py = tmp_path / 'Core.py'
    core_py.write_text('from . import _Core\n'
                       'def NewOp(*args):\n'
                       '    r"""NewOp(Image3D a_o, Image3D a_i, PyCA::StreamT st=None)"""\n'
                       '    return _Core.NewOp(*args)\n')
    r = subprocess.run([sys.executable, gen, str(core_py), str(table), str(tmp_path / 'd.py'),
                        str(tmp_path / 'C.pyi')], capture_output=True, text=True)
    assert r.returncode == 0
    assert 'NewOp' in r.stderr
    stub = (tmp_path / 'C.pyi').read_text()
    assert 'def NewOp(a_o: Image3D, a_i: Image3D, st: _Stream = ..., /) -> None: ...' in stub or \
        'def NewOp(a_o: Any, a_i: Any, st: _Stream = ..., /) -> None: ...' in stub


def _have_mypy():
    try:
        import mypy  # noqa: F401
        return True
    except ImportError:
        return False


needs_mypy = pytest.mark.skipif(not _have_mypy(), reason='mypy is not installed')


def _mypy_env(tmp_path):
    env = dict(os.environ)
    env['MYPYPATH'] = PKG_DIR
    env['PYTHONPATH'] = PKG_DIR + os.pathsep + env.get('PYTHONPATH', '')
    env['MYPY_CACHE_DIR'] = str(tmp_path / 'mypy-cache')
    return env


@needs_mypy
def test_stubtest(tmp_path):
    assert os.path.exists(os.path.join(PKG_DIR, 'PyCA', 'Core.pyi'))
    assert os.path.exists(os.path.join(PKG_DIR, 'PyCA', 'py.typed'))
    allow = os.path.join(os.path.dirname(__file__), 'core_stubtest_allowlist.txt')
    r = subprocess.run([sys.executable, '-m', 'mypy.stubtest', 'PyCA.Core', '--allowlist', allow,
                        '--mypy-config-file', os.path.join(SOURCE_DIR, 'pyproject.toml')],
                       capture_output=True, text=True, env=_mypy_env(tmp_path), cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]


@needs_mypy
def test_mypy_examples(tmp_path):
    examples = sorted(os.path.join(SOURCE_DIR, 'Examples', f)
                      for f in os.listdir(os.path.join(SOURCE_DIR, 'Examples')) if f.endswith('.py'))
    assert examples
    r = subprocess.run([sys.executable, '-m', 'mypy', '--config-file',
                        os.path.join(SOURCE_DIR, 'pyproject.toml')] + examples,
                       capture_output=True, text=True, env=_mypy_env(tmp_path), cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
