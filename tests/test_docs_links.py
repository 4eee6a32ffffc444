"""The documentation stays true to the repository: every relative link in README.md and
docs/*.md reaches an existing file (and heading), and every option of docs/pytest.md's
options table is one the plugin really registers.

Anchors follow GitHub's rules (github-slugger): lower-case, drop every character that
is not a letter, digit, mark, ``-`` or ``_``, each space becomes ``-``, and a repeated
heading gets ``-1``, ``-2``, ... — so ``## `[regression]`: gates`` is ``#regression-gates``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import unicodedata
from functools import cache, lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS: tuple[Path, ...] = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (a link or heading inside one is an example)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading's text (before de-duplication)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    out = []
    for char in text.lower():
        if char == " ":
            out.append("-")
        elif char in "-_" or unicodedata.category(char)[0] in "LNM":
            out.append(char)
    return "".join(out)


@cache
def anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    for line in _prose_lines(path.read_text(encoding="utf-8")):
        match = _HEADING.match(line)
        if not match:
            continue
        slug = github_slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return frozenset(out)


def relative_links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every link that is not to a web address."""
    found = []
    text = path.read_text(encoding="utf-8")
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in _LINK.findall(_INLINE_CODE.sub("", line)):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, https:, mailto:
                found.append((number, target))
    return found


def test_github_slug_follows_githubs_rules() -> None:
    assert github_slug("Repeated trials (`passk`)") == "repeated-trials-passk"
    assert github_slug("`[regression]`: gates against a baseline") == "regression-gates-against-a-baseline"
    assert github_slug("Cost at scale (1k → 10k → 100k chunks) (`bench/scale.py`)") == (
        "cost-at-scale-1k--10k--100k-chunks-benchscalepy"
    )
    assert github_slug("What is in it: 中文 标题") == "what-is-in-it-中文-标题"
    assert github_slug("snake_case and-dash") == "snake_case-and-dash"


def test_repeated_headings_get_numbered_anchors(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("# Title\n\n## Usage\n\n```\n## not a heading\n```\n\n## Usage\n", encoding="utf-8")
    assert anchors(doc) == {"title", "usage", "usage-1"}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_reach_a_file_and_heading(doc: Path) -> None:
    broken = []
    for number, target in relative_links(doc):
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        where = f"{doc.relative_to(ROOT)}:{number}: ({target})"
        if not dest.exists():
            broken.append(f"{where}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(
                f"{where}: no heading with anchor #{anchor}; anchors there: {', '.join(sorted(anchors(dest)))}"
            )
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_docs_have_relative_links_to_check() -> None:
    """Guards the link pattern itself: README links to the docs, so a broken regex that
    finds nothing would let every link test pass vacuously."""
    targets = {t for _, t in relative_links(ROOT / "README.md")}
    assert "docs/pytest.md#sharded-runs" in targets
    assert "docs/rag_app.md#settings" in targets


@lru_cache(maxsize=1)
def pytest_help() -> str:
    """``pytest --help`` in the repository root: the options the plugin registers."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def options_table_options(doc: Path) -> list[str]:
    """Every ``--option`` in the first column of the table under ``## Options``."""
    options: list[str] = []
    in_section = False
    for line in _prose_lines(doc.read_text(encoding="utf-8")):
        if line.startswith("## "):
            in_section = line.strip() == "## Options"
            continue
        if in_section and line.startswith("|"):
            first_cell = line.split("|")[1]
            options.extend(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", first_cell))
    return options


def test_every_option_in_the_pytest_options_table_exists() -> None:
    documented = options_table_options(ROOT / "docs" / "pytest.md")
    assert "--rag-dataset" in documented and "--rag-pipeline-config" in documented  # the table was found
    registered = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", pytest_help()))
    missing = sorted(set(documented) - registered)
    assert not missing, f"docs/pytest.md names options that `pytest --help` does not list: {', '.join(missing)}"
