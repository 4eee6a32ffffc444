"""A retrieval metric of one's own: one function and one ``register`` call in a conftest,
gated in thresholds.toml, with no file of rag_eval edited (issue 32: a metric is written
once). The sandbox of ``_plugin_sandbox`` has doc-only gold, so the metrics are gated at
document level (``doc.<metric>@k``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rag_eval.metrics import grouped
from tests.rag_eval._plugin_sandbox import IDS, POSITIVE_IDS, Sandbox

N_ITEMS = len(IDS)  # 9
N_POS = len(POSITIVE_IDS)  # 7

CONFTEST = '''
from rag_eval.metrics.grouped import RankProfile, RetrievalMetric, register


def all_found(p: RankProfile, k: int | None) -> float:
    """1 when every requirement has an id in the top k, else 0."""
    return 1.0 if p.satisfied_upto[p.cut(k)] == p.requirements else 0.0


def missed(p: RankProfile, k: int | None) -> float:
    """The share of requirements with no id in the top k (lower is better)."""
    return 1 - p.satisfied_upto[p.cut(k)] / p.requirements


register(RetrievalMetric("allfound", all_found))
register(RetrievalMetric("missed", missed, lower_is_better=True))
'''

THRESHOLDS = """
[retrieval]
"doc.allfound@3" = { min = 0.5 }
"doc.missed@3" = { max = 0.5 }
"doc.recall@3" = { min = 0.0 }

[retrieval.case]
"doc.missed@3" = { max = 1.0 }
"""


@pytest.fixture(autouse=True)
def _registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """pytester runs in this process: the conftest's metrics go to a copy of the registry."""
    monkeypatch.setattr(grouped, "_REGISTRY", dict(grouped._REGISTRY))
    yield
    grouped.parse_metric_name.cache_clear()  # no name parsed against the copy outlives it


def test_a_metric_registered_in_a_conftest_is_computed_and_gated(sandbox: Sandbox) -> None:
    sandbox.write_conftest(CONFTEST)
    sandbox.write_thresholds(THRESHOLDS)
    result = sandbox.run("-m", "retrieval")

    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=N_ITEMS, deselected=N_ITEMS)
    result.stdout.fnmatch_lines(
        [
            f"PASS retrieval.doc.allfound@3 = ** (need >= 0.5; n={N_POS})",
            f"PASS retrieval.doc.missed@3 = ** (need <= 0.5; n={N_POS})",
        ]
    )
    results = sandbox.results()
    positives = [c for c in results["cases"] if c["id"] in POSITIVE_IDS]
    assert len(positives) == N_POS
    for case in positives:
        recall = case["metrics"]["doc.recall@3"]
        # both are functions of the requirements found in the top 3, as recall@3 is
        assert case["metrics"]["doc.allfound@3"] == (1.0 if recall == 1.0 else 0.0)
        assert case["metrics"]["doc.missed@3"] == pytest.approx(1 - recall)
    found = [c["metrics"]["doc.allfound@3"] for c in positives]
    assert results["metrics"]["retrieval.doc.allfound@3"] == pytest.approx(sum(found) / N_POS)


def test_the_registered_direction_decides_floor_or_ceiling(sandbox: Sandbox) -> None:
    sandbox.write_conftest(CONFTEST)
    sandbox.write_thresholds('[retrieval.case]\n"doc.missed@3" = { min = 0.5 }\n')
    result = sandbox.run("-m", "retrieval")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*doc.missed@3: lower is better, so the per-case limit is a ceiling*"])
