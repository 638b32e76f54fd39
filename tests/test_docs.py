"""Every fenced code block of README.md, CHANGELOG.md and docs/**/*.md runs, so the documentation cannot drift
from the code.

The rules, by the block's language (the word after the opening fence):

- ``python``: the blocks of one page run in order in one namespace, so a page can build on its
  earlier blocks;
- ``bash``, ``sh``: the block runs in bash (``set -e``), with this interpreter's ``bin/`` first
  on PATH (``nfst`` is the checkout's);
- ``console``: each line that starts with ``$ `` is a command, run the same way; the lines
  after it, if any, are its output, and the command must print exactly that;
- any other language, or none (``text``, ``toml``, ``json``: output and file contents), is not
  run.

A page's blocks run in one scratch directory (one per page, which sees the repository's
``examples/``), in a subprocess of their own: this file, run as a script. An HTML comment on
the line just before a block changes what happens to it:

- ``<!-- docs: skip REASON -->`` skips it; pytest prints REASON (``-rs``). Only long commands,
  or ones that need a GPU or data that is not always there, are marked;
- ``<!-- docs: file NAME -->`` writes the block to NAME in the scratch directory instead of
  running it (a file that later blocks of the page use).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import types
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["README.md", "CHANGELOG.md"] + sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")
)
PYTHON = {"python", "py"}
SHELL = {"bash", "sh", "shell", "console"}
PAGE_TIMEOUT_S = 600
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
MARKER = re.compile(r"^\s*<!--\s*docs:\s*(?P<kind>\w+)\s*(?P<arg>.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    marker: Optional[tuple[str, str]]  # (kind, argument) of a docs comment just before it

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}-{self.lang}"

    @property
    def runs(self) -> bool:
        return self.lang in PYTHON | SHELL


def blocks(page: str, text: Optional[str] = None) -> list[Block]:
    """The fenced code blocks of a page (its text read from the file unless given), in order."""
    if text is None:
        text = (ROOT / page).read_text(encoding="utf-8")
    lines = text.splitlines()
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = len(m["indent"]), m["fence"]
        end = i + 1
        while end < len(lines) and not (
            lines[end].strip().startswith(fence) and set(lines[end].strip()) == {fence[0]}
        ):
            end += 1
        code = "\n".join(line[indent:] for line in lines[i + 1 : end]) + "\n"
        marker = MARKER.match(lines[i - 1]) if i > 0 else None
        found.append(
            Block(
                page,
                i + 1,
                m["lang"].lower(),
                code,
                (marker["kind"], marker["arg"]) if marker else None,
            )
        )
        i = end + 1
    return found


def runnable() -> list[Block]:
    return [b for page in PAGES for b in blocks(page) if b.runs]


# -- the page runner (a subprocess: module-level state of the code under test stays there) --


def _environment(scratch: Path) -> dict:
    env = dict(os.environ, MPLBACKEND="Agg", NFST_CACHE_DIR=str(scratch / ".nfst-cache"))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("NFST_TASKS", None)  # a block that wants task files says so
    return env


def console_commands(code: str) -> list[tuple[str, list[str]]]:
    """A console block's commands (``$ `` lines), each with the output lines shown after it."""
    commands: list[tuple[str, list[str]]] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands:
            commands[-1][1].append(line.rstrip())
    return commands


def _bash(code: str, scratch: Path) -> str:
    # run_page has made this process's environment the page's: the shell inherits it
    done = subprocess.run(
        ["bash", "-e", "-c", code],
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=PAGE_TIMEOUT_S,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"exit status {done.returncode}\n--- stdout\n{done.stdout[-4000:]}"
            f"\n--- stderr\n{done.stderr[-4000:]}"
        )
    return done.stdout


def _run_shell(block: Block, scratch: Path) -> None:
    """A bash block runs as one script; a console block command by command, and where the
    block shows a command's output, the output must be that (trailing blanks aside)."""
    if block.lang != "console":
        _bash(block.code, scratch)
        return
    for command, shown in console_commands(block.code):
        out = [line.rstrip() for line in _bash(command, scratch).rstrip("\n").splitlines()]
        if shown and out != shown:
            raise AssertionError(
                f"$ {command}\nshown:\n" + "\n".join(shown) + "\nprinted:\n" + "\n".join(out)
            )


def run_page(page: str) -> dict[int, dict]:
    """Run a page's blocks in order (in this process: call it in a subprocess); returns, per
    block line, ``{"status": "passed" | "failed" | "skipped" | "written", "detail": ...}``."""
    scratch = Path(tempfile.mkdtemp(prefix="nfst-docs-"))
    (scratch / "examples").symlink_to(ROOT / "examples")
    env = _environment(scratch)
    os.chdir(scratch)
    os.environ.clear()
    os.environ.update(env)
    module = types.ModuleType("__docs__")  # a real module: dataclasses look their class's up
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    results = {}
    try:
        for block in filter(lambda b: b.runs, blocks(page)):
            kind, arg = block.marker or (None, None)
            start = time.perf_counter()
            try:
                if kind == "skip":
                    results[block.line] = {"status": "skipped", "detail": arg}
                    continue
                if kind == "file":
                    (scratch / arg).write_text(block.code)
                    results[block.line] = {"status": "written", "detail": arg}
                    continue
                if kind is not None:
                    raise ValueError(
                        f"unknown marker <!-- docs: {kind} ... -->; "
                        "use `skip REASON` or `file NAME`"
                    )
                if block.lang in PYTHON:
                    # Padded so that tracebacks give the markdown file's own line numbers.
                    source = "\n" * block.line + block.code
                    exec(compile(source, str(ROOT / page), "exec"), namespace)
                else:
                    _run_shell(block, scratch)
                results[block.line] = {
                    "status": "passed",
                    "detail": f"{time.perf_counter() - start:.1f} s",
                }
            except BaseException:  # noqa: B036 - report SystemExit from a block as a failure too
                results[block.line] = {"status": "failed", "detail": traceback.format_exc()}
    finally:
        os.chdir(ROOT)
        shutil.rmtree(scratch, ignore_errors=True)
    return results


@lru_cache(maxsize=None)
def page_results(page: str) -> dict[int, dict]:
    done = subprocess.run(
        [sys.executable, __file__, page],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PAGE_TIMEOUT_S,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(
            f"the runner of {page} died (status {done.returncode}):\n"
            f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        )
    return {int(k): v for k, v in json.loads(lines[-1]).items()}


# -- the tests ------------------------------------------------------------------------------

import pytest  # noqa: E402 - the runner above does not need it


@pytest.mark.parametrize("block", runnable(), ids=lambda b: b.id)
def test_code_block_runs(block: Block):
    result = page_results(block.page)[block.line]
    if result["status"] == "skipped":
        pytest.skip(f"{block.id}: {result['detail']}")
    if result["status"] == "failed":
        pytest.fail(f"{block.id} failed:\n{result['detail']}", pytrace=False)


def test_markers_are_known_and_skips_say_why():
    markers = 0
    for page in PAGES:
        for block in blocks(page):
            if block.marker is None:
                continue
            kind, arg = block.marker
            assert kind in ("skip", "file"), f"{block.id}: unknown marker {kind!r}"
            assert arg, f"{block.id}: `docs: {kind}` needs a reason or a file name"
            assert block.runs, f"{block.id}: a marker on a block that never runs ({block.lang})"
            markers += 1
    assert markers >= 1  # the pages mark some blocks (skipped: long runs, GPUs)


LINK = re.compile(r"\]\((?!https?:|mailto:|#)(?P<path>[^)#\s]+)(?:#(?P<anchor>[^)\s]+))?\)")


def _anchors(path: Path) -> set[str]:
    """The anchors MkDocs gives the headings of a markdown file (the toc extension's)."""
    from markdown.extensions.toc import slugify

    headings = re.findall(r"^#{1,6} +(.+?) *$", path.read_text(encoding="utf-8"), re.M)
    return {slugify(re.sub(r"[`*]", "", h), "-") for h in headings}


@pytest.mark.parametrize("page", ["README.md", "CHANGELOG.md"])
def test_links_outside_the_site_resolve(page):
    """The site's build checks its own links (mkdocs --strict); this checks the relative links
    of the files it does not build, and their anchors where they point into markdown."""
    text = re.sub(r"```.*?```", "", (ROOT / page).read_text(encoding="utf-8"), flags=re.S)
    for m in LINK.finditer(text):
        target = ROOT / m["path"]
        assert target.exists(), f"{page}: link to {m['path']}, which does not exist"
        if m["anchor"] and target.suffix == ".md":
            assert m["anchor"] in _anchors(target), (
                f"{page}: no heading #{m['anchor']} in {m['path']}"
            )


CODE = re.compile(r"```.*?```|`[^`]+`", re.S)
CALL = re.compile(r"(?<![\w./-])nfst ([a-z][\w-]*)([^\n|;#&]*)")


@pytest.mark.parametrize("page", [p for p in PAGES if p != "CHANGELOG.md"])
def test_the_flags_named_exist(page):
    """Every ``--flag`` given to an ``nfst COMMAND`` in a page's code, fenced blocks and inline
    spans alike, is one that command takes: inline spans and skipped blocks never run, so
    nothing else checks them (the changelog keeps old names)."""
    from nfst.cli import build_parser

    _, parsers = build_parser()
    text = (ROOT / page).read_text(encoding="utf-8").replace("\\\n", " ")
    for code in CODE.findall(text):
        inline = not code.startswith("```")
        for m in CALL.finditer(code.replace("\n", " ") if inline else code):
            if m[1] in parsers:
                known = {o for a in parsers[m[1]]._actions for o in a.option_strings}
                for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*", m[2]):
                    assert flag in known, f"{page}: `nfst {m[1]}` has no {flag}: {m[0]}"


def module_map() -> dict[str, str]:
    """design.md §1's map of the packages: the text of each top-level entry (``runtime/``,
    ``cli.py``, ``tasks/``, ...), continuation lines included."""
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    section = text[text.index("## 1. ") :]
    code = next(b.code for b in blocks("docs/design.md", section) if b.lang == "")
    entries: dict[str, str] = {}
    key = None
    for line in code.splitlines():
        indent = len(line) - len(line.lstrip())
        if line.strip() and indent <= 2:  # an entry: a package or a top-level module
            key = line.split()[0]
            entries[key] = ""
        if key is not None:
            entries[key] += " " + line
    return entries


def test_the_module_map_names_every_module():
    """Every module of nfst/, tasks/ and fsts/ is named in design.md's map, by its module name
    and under its top-level package (nfst.tasks and nfst.fsts are the repository's tasks/ and
    fsts/), and every subpackage by its name with a slash: a module added without a line in
    the map fails here."""
    entries = module_map()
    missing = []
    for path in sorted(
        [
            *(ROOT / "nfst").rglob("*.py"),
            *(ROOT / "tasks").rglob("*.py"),
            *(ROOT / "fsts").rglob("*.py"),
        ]
    ):
        parts = path.relative_to(ROOT).with_suffix("").parts
        parts = parts[1:] if parts[0] == "nfst" else parts
        if len(parts) == 1:  # nfst/cli.py and the like: anywhere in the map
            text = " ".join(entries.values())
        else:
            text = entries.get(parts[0] + "/", "")
        names = [p + "/" for p in parts[1:-1]] + ([] if parts[-1] == "__init__" else [parts[-1]])
        for name in names:
            if not re.search(rf"(?<![\w/]){re.escape(name)}(?![\w])", text):
                missing.append(f"{'/'.join(parts)} ({name})")
    assert not missing, (
        "docs/design.md §1 does not name these modules; add each, with what "
        "it holds, under its package: " + ", ".join(missing)
    )


def test_blocks_are_found():
    """The parser sees fences of any length, languages, indented fences and markers."""
    text = (
        "x\n<!-- docs: skip long: 1 h -->\n```bash\nsleep 3600\n```\n"
        "  ````python\n  print(1)\n  ```\n  ````\n```\nplain\n```\n"
    )
    probe = blocks("probe.md", text)
    assert [(b.line, b.lang, b.marker) for b in probe] == [
        (3, "bash", ("skip", "long: 1 h")),
        (6, "python", None),
        (10, "", None),
    ]
    assert probe[1].code == "print(1)\n```\n"
    assert console_commands("$ nfst tasks\ncipher  \n$ nfst --help\n") == [
        ("nfst tasks", ["cipher"]),
        ("nfst --help", []),
    ]


if __name__ == "__main__":  # the page runner: python tests/test_docs.py PAGE
    print(json.dumps(run_page(sys.argv[1])))
