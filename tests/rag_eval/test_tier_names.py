"""Issue 21: outside ``rag_eval/tiers/`` (and the results schema) no module spells a tier's
name but the name table ``rag_eval/tier_names.py``, which the registered tiers match."""

from __future__ import annotations

import re
from pathlib import Path

from rag_eval import tier_names, tiers

ROOT = Path(__file__).resolve().parents[2] / "rag_eval"
# the acceptance grep: grep -rn '"passk"\|"judge"\|"dialogue"' rag_eval/
NAMED = re.compile(r'"passk"|"judge"|"dialogue"')


def _hits() -> list[str]:
    found = []
    for path in sorted(ROOT.rglob("*")):
        if not path.is_file() or path.suffix not in (".py", ".html", ".js", ".toml", ".txt"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if NAMED.search(line):
                found.append(f"{path.relative_to(ROOT.parent)}:{number}: {line.strip()}")
    return found


def test_only_the_tiers_and_the_name_table_spell_a_tier_name() -> None:
    outside = [h for h in _hits() if not h.startswith(("rag_eval/tiers/", "rag_eval/tier_names.py:"))]
    assert outside == []


def test_the_grep_finds_a_spelt_name() -> None:
    assert NAMED.search('if case.tier == "judge":') and not NAMED.search("if case.tier == JUDGE:")


def test_the_name_table_names_registered_tiers() -> None:
    table = {tier_names.RETRIEVAL, tier_names.DETERMINISTIC, tier_names.JUDGE, tier_names.PASSK, tier_names.DIALOGUE}
    assert table <= set(tiers.names())
