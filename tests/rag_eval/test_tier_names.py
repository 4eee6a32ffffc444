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


def test_the_tiers_say_which_are_judged_and_which_judge_one_answer() -> None:
    assert tiers.judged() == (tier_names.JUDGE, tier_names.DIALOGUE)
    assert [t for t in tiers.names() if tiers.judges_answers(t)] == [tier_names.JUDGE]
    assert not tiers.judges_answers("no-such-tier")


def test_an_unmeasured_reason_is_the_tiers_own() -> None:
    from rag_eval.results.case import CaseResult

    trial = CaseResult(id="q1", tier=tier_names.PASSK, outcome="pass", details={"k": 3})
    reason = tiers.get(tier_names.PASSK).unmeasured_reason("pass@5", [trial])
    assert reason is not None and "this run's k is 3" in reason
    assert tiers.get(tier_names.PASSK).unmeasured_reason("pass@3", [trial]) is None
    assert tiers.get(tier_names.JUDGE).unmeasured_reason("pass@5", [trial]) is None
