"""Gold ids checked through the system (rag_eval.adapters.gold_check): a Python object's
own ``lookup(ids)``, and, for a system that cannot look ids up, the gold ids no stage of
any case returned — in run.warnings and the terminal, never naming an id some case returned."""

from __future__ import annotations

import json

import pytest

from rag_eval.adapters.gold import IdMapEntry
from rag_eval.adapters.gold_check import GoldCheck, gold_ids, system_ids, unheld
from rag_eval.core.case import CaseResult
from rag_eval.golden.load import parse_item
from rag_eval.golden.model import GoldenItem
from rag_eval.tiers.retrieval.gold_warnings import gold_warnings

pytest_plugins = ["pytester"]


def item(iid: str, *alternatives: str) -> GoldenItem:
    return parse_item(
        {"id": iid, "question": f"{iid}?", "evidence": [{"any_of": [{"chunk_id": a} for a in alternatives]}]}, "test"
    )


def test_a_requirement_is_not_indexed_only_when_none_of_its_alternatives_is_held() -> None:
    check = GoldCheck(frozenset({"a#9", "b#9"}), frozenset())
    assert check.not_indexed(item("q1", "a#9", "b#9")) == [(1, ("a#9", "b#9"))]
    assert check.not_indexed(item("q2", "a#9", "a#0")) == []  # a#0 is held: the requirement can be met
    assert GoldCheck(None, frozenset()).not_indexed(item("q1", "a#9")) == []  # no lookup: nothing to say


def test_lookup_goes_through_the_id_map_to_the_systems_own_ids() -> None:
    id_map = {"svc-1": IdMapEntry(chunk_id="a#0"), "svc-2": IdMapEntry(chunk_id="a#0")}
    assert system_ids({"a#0", "b#0"}, id_map) == {"a#0": ["svc-1", "svc-2"], "b#0": ["b#0"]}
    assert unheld({"a#0", "b#0"}, id_map, {"svc-2"}) == frozenset({"b#0"})
    assert gold_ids([item("q1", "a#0"), item("q2", "b#0")]) == (frozenset({"a#0", "b#0"}), frozenset())


def test_seen_is_recorded_only_where_the_system_cannot_look_ids_up() -> None:
    gold = frozenset({"a#0", "b#0"})
    assert GoldCheck(None, gold).seen(["x#1", "b#0"]) == ["b#0"]
    assert GoldCheck(frozenset(), gold).seen(["b#0"]) is None
    assert GoldCheck(None, gold, active=False).seen(["b#0"]) is None


def case(cid: str, gold: list[list[str]], seen: list[str]) -> CaseResult:
    details = {"gold": {"chunks": gold, "parents": gold, "docs": []}, "gold_seen": seen}
    return CaseResult(id=cid, tier="retrieval", outcome="fail", details=details)


def test_an_id_some_case_returned_is_never_named() -> None:
    cases = [case("q1", [["json.dumps#0"]], []), case("q2", [["json.dumsp#0"]], ["json.dumps#0"])]
    (warning,) = gold_warnings(cases)
    assert warning.startswith("1 gold chunk id(s) that no stage of any case returned")
    assert "json.dumsp#0 (case q2)" in warning and "json.dumps#0" not in warning.replace("json.dumsp#0", "")


SYSTEM = """
CHUNKS = {"sets#0": "subsets of a set", "derivatives#0": "derivative of x squared", "sine#0": "period of sine"}

class Keyword:
    def retrieve(self, question, top_k=None):
        words = set(question.split())
        hits = [c for c, t in CHUNKS.items() if words & set(t.split())] or list(CHUNKS)[:1]
        return [{"id": c, "text": CHUNKS[c], "score": 1.0} for c in hits]

class WithLookup(Keyword):
    def lookup(self, ids):
        return [i for i in ids if i in CHUNKS]

def plain():
    return Keyword()

def looking():
    return WithLookup()
"""
GOLDEN = [
    {"id": "q1", "question": "how many subsets", "evidence": [{"chunk_id": "sets#0"}]},
    {"id": "q2", "question": "the derivative", "evidence": [{"chunk_id": "derivatvies#0"}]},  # a typo
    {"id": "q3", "question": "period of sine", "evidence": [{"chunk_id": "sine#0"}]},
]


@pytest.mark.parametrize(
    ("factory", "expected"),
    [
        ("plain", "1 gold chunk id(s) that no stage of any case returned, and the system cannot look ids up: "
                  "derivatvies#0 (case q2); check for typos"),
        ("looking", "1 gold id(s) not indexed by the system*derivatvies#0 (case q2)*"),
    ],
)  # fmt: skip
def test_a_gold_typo_is_named_in_the_run_and_the_terminal(
    pytester: pytest.Pytester, factory: str, expected: str
) -> None:
    pytester.makepyfile(mysys=SYSTEM)
    pytester.makeini("[pytest]\naddopts = -p no:deepeval -p no:cacheprovider\npythonpath = .\n")
    (pytester.path / "golden.jsonl").write_text("".join(json.dumps(g) + "\n" for g in GOLDEN), encoding="utf-8")
    result = pytester.runpytest_subprocess(
        "-m", "retrieval", "--rag-golden-set", "golden.jsonl", "--rag-pipeline", f"mysys:{factory}"
    )
    result.stdout.fnmatch_lines([f"WARNING: {expected}"])
    results = json.loads((pytester.path / "reports" / "eval-results.json").read_text(encoding="utf-8"))
    (warning,) = results["run"]["warnings"]
    assert "derivatvies#0" in warning and "sets#0" not in warning and "sine#0" not in warning
    typo = next(c for c in results["cases"] if c["id"] == "q2")
    assert typo["failed_stage"] == ("not indexed" if factory == "looking" else "retrieval")
