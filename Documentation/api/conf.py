"""Sphinx configuration of the PyCA API reference (``./run docs``).

Built with ``sphinx-build -W --keep-going -b html Documentation/api
build/docs/html`` and PYTHONPATH at a build's ``python`` folder (the pages
import the built ``PyCA.Core`` and the pure-Python packages). Warnings are
errors. The Markdown guides of Documentation/ and README.md are pulled in
by the stubs under ``guides/`` (myst-parser).
"""
import os
import re
import sys

# The built package: PYTHONPATH normally; else PYCA_BUILD_DIR/python.
_build = os.environ.get("PYCA_BUILD_DIR")
if _build:
    sys.path.insert(0, os.path.join(os.path.abspath(_build), "python"))

project = "PyCA"
author = "PyCA contributors"
copyright = "PyCA contributors"
try:
    import PyCA
    release = version = PyCA.__version__
except ImportError:  # conf.py alone; autodoc then reports the failed imports
    release = version = ""

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# Optional dependencies of PyCA.Parallel and PyCA.VTK: both import them only
# when a function is called, but mock them so the pages build without them.
autodoc_mock_imports = ["mpi4py", "vtk"]
autodoc_default_options = {"members": True, "member-order": "bysource", "show-inheritance": True}
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented"
autodoc_preserve_defaults = True

# Google-style docstrings (Args:, Returns:, Raises:, Example:). Attributes as
# :ivar: fields, so a dataclass's fields are not documented twice.
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True

# The Markdown guides: heading anchors for their "#section" links.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

html_theme = "alabaster"

# ---- the Markdown guides -----------------------------------------------------
# guides/NAME.md are stubs: their text is replaced, when Sphinx reads them, by
# the guide itself (README.md or Documentation/NAME.md), with its links
# rewritten for the site: a link to another guide points at its page, a link
# to any other file of the repository (an example script, a folder) becomes
# its path in code style, since the site does not contain it.
_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_GUIDES = {"README": "README.md"}
for _g in ("UserGuide", "Architecture", "LegacyDifferences", "MemoryManager", "Reliability",
           "AtlasCostModel"):
    _GUIDES[_g] = os.path.join("Documentation", _g + ".md")
_LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(([^)\s]+)\)")


def _rewrite_link(m, guide_dir):
    text, target = m.group(1), m.group(2)
    if target.startswith("#") or re.match(r"[a-z][a-z0-9+.-]*:", target):
        return m.group(0)                      # an anchor or a URL
    path, _, anchor = target.partition("#")
    full = os.path.normpath(os.path.join(_ROOT, guide_dir, path))
    rel = os.path.relpath(full, _ROOT)
    for name, src in _GUIDES.items():
        if rel == src:
            return "[%s](%s.md%s)" % (text, name, "#" + anchor if anchor else "")
    if not os.path.exists(full):
        return m.group(0)                      # not a path: leave it to MyST
    return "%s (`%s` in the repository)" % (text, rel.replace(os.sep, "/"))


def _guide_source(app, docname, source):
    name = docname[len("guides/"):] if docname.startswith("guides/") else None
    if name not in _GUIDES:
        return
    path = os.path.join(_ROOT, _GUIDES[name])
    app.env.note_dependency(path)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    guide_dir = os.path.dirname(_GUIDES[name])
    source[0] = _LINK.sub(lambda m: _rewrite_link(m, guide_dir), text)


# ---- PyCA.Core docstrings ----------------------------------------------------
# They are plain text for help() (generated from Code/SWIG/doc/core_docs.py),
# with formulas such as |a_i|, a ** b and names such as x_ that reStructuredText
# would read as substitutions, emphasis or link targets. Escape those characters
# in the Core docstrings only (before napoleon parses the sections).
_RST_TARGET = re.compile(r"(\w)_(?=[\s,.;:)\]]|$)")


def _escape_core(app, what, name, obj, options, lines):
    if not name.startswith("PyCA.Core"):
        return
    for i, line in enumerate(lines):
        line = line.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*")
        lines[i] = _RST_TARGET.sub(r"\1\\_", line)


def setup(app):
    app.connect("source-read", _guide_source)
    app.connect("autodoc-process-docstring", _escape_core, priority=400)
html_title = "PyCA %s" % release
