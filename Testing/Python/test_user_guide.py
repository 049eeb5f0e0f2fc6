"""Documentation/UserGuide.md: every ```python block runs.

The blocks are extracted in order and run in one shared namespace in a fresh
interpreter whose working folder is a temporary directory (blocks may write
files). A block fenced ```python no-ci, or preceded by the line
``<!-- no-ci -->``, is only compiled (GPU-only snippets). A failure names the
block number and its first line in the guide.
"""
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import source_dir

GUIDE = os.path.join("Documentation", "UserGuide.md")

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")

RUNNER = r'''
import json, sys, traceback
blocks = json.load(open(sys.argv[1]))
ns = {"__name__": "__user_guide__"}
for b in blocks:
    tag = "block %d (UserGuide.md line %d)" % (b["index"], b["line"])
    try:
        code = compile(b["code"], "<UserGuide.md %s>" % tag, "exec")
    except SyntaxError:
        traceback.print_exc()
        print("USER-GUIDE-FAILED %s: does not compile" % tag, flush=True)
        sys.exit(3)
    if not b["run"]:
        continue
    print("USER-GUIDE-RUN %s" % tag, flush=True)
    try:
        exec(code, ns)
    except BaseException:
        traceback.print_exc()
        print("USER-GUIDE-FAILED %s" % tag, flush=True)
        sys.exit(4)
print("USER-GUIDE-OK %d blocks" % len(blocks), flush=True)
'''


def guide_path():
    return os.path.join(source_dir(), GUIDE)


def extract_blocks(text):
    """The fenced code blocks of a Markdown text whose info string starts
    with the word ``python``: dicts with index (1-based, among python
    blocks), line (of the opening fence), code, run (False for no-ci)."""
    lines = text.splitlines()
    blocks = []
    i = 0
    prev = ""      # the last non-blank line before the current one
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                prev = lines[i].strip()
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3).strip()
        start = i
        body = []
        i += 1
        while i < len(lines):
            m2 = FENCE.match(lines[i])
            if m2 and m2.group(2)[0] == fence[0] and len(m2.group(2)) >= len(fence) \
                    and not m2.group(3).strip():
                break
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        words = info.split()
        if words and words[0] == "python":
            no_ci = "no-ci" in words[1:] or prev == "<!-- no-ci -->"
            blocks.append({"index": len(blocks) + 1, "line": start + 1,
                           "code": "\n".join(body) + "\n", "run": not no_ci})
        prev = ""
    return blocks


@pytest.fixture(scope="module")
def blocks():
    p = guide_path()
    if not os.path.isfile(p):
        pytest.skip("%s not written yet" % GUIDE)
    with open(p, encoding="utf-8") as f:
        return extract_blocks(f.read())


def test_extractor():
    text = "\n".join([
        "intro", "```python", "a = 1", "```", "```bash", "ls", "```",
        "```python no-ci", "import gpu_only", "```",
        "<!-- no-ci -->", "", "```python", "b = 2", "```",
        "````python", "```", "nested = 1", "````", "```python3", "x", "```"])
    b = extract_blocks(text)
    assert [x["code"] for x in b] == ["a = 1\n", "import gpu_only\n", "b = 2\n", "```\nnested = 1\n"]
    assert [x["run"] for x in b] == [True, False, False, True]
    assert [x["line"] for x in b] == [2, 8, 13, 16]


def test_guide_has_runnable_blocks(blocks):
    assert sum(b["run"] for b in blocks) >= 8
    assert any(not b["run"] for b in blocks)


def test_no_ci_blocks_compile(blocks):
    for b in blocks:
        compile(b["code"], "<UserGuide.md block %d, line %d>" % (b["index"], b["line"]), "exec")


def test_user_guide_blocks_run(blocks, tmp_path):
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps(blocks))
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, PYTHONUNBUFFERED="1", MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, "-c", RUNNER, str(spec)], cwd=str(work), env=env,
                       capture_output=True, text=True, timeout=300)
    failed = re.findall(r"USER-GUIDE-FAILED (.*)", r.stdout)
    assert r.returncode == 0 and not failed, (
        "%s\n--- stdout ---\n%s\n--- stderr ---\n%s"
        % (failed[0] if failed else "runner exited with %d" % r.returncode, r.stdout[-4000:],
           r.stderr[-6000:]))
    assert "USER-GUIDE-OK %d blocks" % len(blocks) in r.stdout


def test_relative_links_exist(blocks):
    """Links to files of the repository (not URLs, not anchors) point at files that exist."""
    p = guide_path()
    with open(p, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    missing = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(p), path))):
            missing.append(target)
    assert not missing, missing
