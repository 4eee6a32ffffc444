"""Issue 32: outside ``rag_eval/tiers/`` no module compares a tier's name. Behaviour that
differs by tier is asked of the registered :class:`rag_eval.tiers.Tier` (``tiers.of``), so a
tier of a project's own gets it too; ``rag_eval/tier_names.py`` is gone.

The grep: a built-in tier's name as a literal in a comparison or a membership test
(``== "judge"``, ``"passk" !=``, ``in ("retrieval", ...)``), and a tier compared with a
literal or a constant (``c.tier == JUDGE``, ``case["tier"] != "retrieval"``,
``gate.tier == dialogue_rates.TIER``). Comparing a tier with a variable
(``c.tier != tier``: the tier the caller asked for) is not naming one.
"""

from __future__ import annotations

import re
from pathlib import Path

from rag_eval import tiers
from rag_eval.core.case import CaseResult

ROOT = Path(__file__).resolve().parents[2] / "rag_eval"
NAME = r"""["'](?:retrieval|deterministic|judge|passk|dialogue)["']"""
CONSTANT = r"(?:\w+\.)*(?:RETRIEVAL|DETERMINISTIC|JUDGE|PASSK|DIALOGUE|TIER)\b"  # the old name table's
COMPARISONS = (
    re.compile(rf"(?:[!=]=|\bis(?:\s+not)?)\s*{NAME}"),  # x == "judge"
    re.compile(rf"{NAME}\s*(?:[!=]=|\bis\b|\bnot\s+in\b|\bin\b)"),  # "judge" == x, "judge" in x
    re.compile(rf"\bin\s*[(\[{{][^)\]}}]*{NAME}"),  # x in ("judge", ...)
    re.compile(rf"""\btier\b["']?\]?\)?\s*(?:[!=]=|\bis\b)\s*(?:{NAME}|{CONSTANT})"""),  # c.tier == JUDGE
    re.compile(rf"""(?:{NAME}|{CONSTANT})\s*(?:[!=]=)\s*[\w.\[\]"']*\btier\b"""),  # JUDGE == c.tier
)


# Lines where one of the words is not a tier (by file, the text of the line).
NOT_A_TIER = {
    "rag_eval/adapters/http_config.py": ('if "retrieval" in table else None',),  # [http.dialogue]'s retrieval fields
}


def _comparisons(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        exempt = NOT_A_TIER.get(str(path.relative_to(root.parent)), ())
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if any(p.search(line) for p in COMPARISONS) and not any(e in line for e in exempt):
                found.append(f"{path.relative_to(root.parent)}:{number}: {line.strip()}")
    return found


def test_no_module_outside_the_tiers_compares_a_tier_name() -> None:
    outside = [h for h in _comparisons(ROOT) if not h.startswith("rag_eval/tiers/")]
    assert outside == []


def test_the_name_table_is_gone() -> None:
    assert not (ROOT / "tier_names.py").exists()
    users = [str(p) for p in ROOT.rglob("*.py") if "tier_names" in p.read_text(encoding="utf-8")]
    assert users == []


def test_the_grep_finds_each_kind_of_comparison(tmp_path: Path) -> None:
    named = [
        'if case.tier == "judge":',
        "if c.tier != 'retrieval' or c.negative:",
        "if case.tier == DIALOGUE and ok:",
        'if case["tier"] != "passk":',
        "if gate.tier == dialogue_rates.TIER:",
        'if "dialogue" == c.tier:',
        'if tier in ("judge", "passk"):',
        'if name is "deterministic":',
    ]
    fine = [
        "if c.tier != tier or c.outcome == 'skip':",  # the tier the caller asked for
        'details.get("judge")',  # a details key, not a comparison
        'call = getattr(system, "dialogue", None)',  # the system's dialogue method
        "if tier is not None and tier.pools(key):",
    ]
    package = tmp_path / "rag_eval"
    package.mkdir()
    (package / "named.py").write_text("\n".join(named) + "\n", encoding="utf-8")
    (package / "fine.py").write_text("\n".join(fine) + "\n", encoding="utf-8")
    hits = _comparisons(package)
    assert [h.split(":")[0] for h in hits] == ["rag_eval/named.py"] * len(named)


def test_the_tiers_say_which_are_judged_and_which_judge_one_answer() -> None:
    assert tiers.judged() == ("judge", "dialogue")
    assert [t for t in tiers.names() if tiers.judges_answers(t)] == ["judge"]
    assert not tiers.judges_answers("no-such-tier")


def test_a_name_no_tier_registered_is_a_tier_without_behaviour_of_its_own() -> None:
    unknown = tiers.of("from-another-project")
    assert unknown.name == "from-another-project" and unknown not in tiers.all_tiers()
    case = CaseResult(id="q1", tier="from-another-project", outcome="error")
    assert unknown.counts_error(case, "anything") and not unknown.pools("anything")
    assert unknown.lower_is_better("error_rate") and not unknown.lower_is_better("recall@5")
    assert tiers.of("judge") is tiers.get("judge")


def test_an_unmeasured_reason_is_the_tiers_own() -> None:
    trial = CaseResult(id="q1", tier="passk", outcome="pass", details={"k": 3})
    reason = tiers.get("passk").unmeasured_reason("pass@5", [trial])
    assert reason is not None and "this run's k is 3" in reason
    assert tiers.get("passk").unmeasured_reason("pass@3", [trial]) is None
    assert tiers.get("judge").unmeasured_reason("pass@5", [trial]) is None
