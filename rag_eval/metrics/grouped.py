"""Retrieval metrics, each written once: one pure function per metric, registered with
its name pattern and its direction.

Gold is a list of requirements, each a set of alternative ids (any one suffices); flat
trec_eval gold is the special case of one id per requirement, where every metric below
is exactly trec_eval's (``tests/rag_eval/test_metrics_retrieval.py`` checks them against
pytrec_eval on random runs). A ranked list is de-duplicated first (an id keeps its best
rank) and looked at once (:class:`RankProfile`); every metric is then a function of that
profile and a cutoff ``k`` (``None``: the whole list), so a case's ten metrics at each
stage cost one pass over each list.

The registry (:func:`register`) is the one place a metric is known: metric names
(``recall@5``, ``mrr``) are parsed against it, the retrieval tier computes what a gate
names from it, thresholds.toml's retrieval keys are checked with it, and a gate's
direction (:func:`lower_is_better`) comes from it. A metric of your own is one function
and one ``register(RetrievalMetric("name", function))`` (in a conftest or a plugin).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from rag_eval.metrics.retrieval import dedupe

Groups = Sequence[AbstractSet[str]]


@dataclass(frozen=True)
class RankProfile:
    """One de-duplicated ranked list against the requirements, as prefix counts.

    Index ``r`` of each list is the value over the first ``r`` ranks (``r = 0..depth``):
    ``gold_upto`` counts gold ids (any alternative of any requirement),
    ``satisfied_upto`` counts requirements with an id among them, ``dcg_upto`` is nDCG's
    DCG, a gain of 1 / log2(rank + 1) for the first id of each not-yet-credited
    requirement, summed in rank order. ``first_gold`` is the rank of the first gold id.
    """

    depth: int
    requirements: int
    first_gold: int | None
    gold_upto: tuple[int, ...]
    satisfied_upto: tuple[int, ...]
    dcg_upto: tuple[float, ...]

    def cut(self, k: int | None) -> int:
        """How many ranks the cutoff ``k`` keeps (``None``: all of them)."""
        return self.depth if k is None else min(k, self.depth)


def profile(ranked: Sequence[str], groups: Groups, depth: int | None = None) -> RankProfile:
    """The profile of ``ranked`` over its first ``depth`` distinct ids (``None``: all)."""
    if isinstance(groups, str) or any(isinstance(g, str) for g in groups):
        single = groups if isinstance(groups, str) else next(g for g in groups if isinstance(g, str))
        raise TypeError(f"gold requirements must be sets of ids, got the string {single!r}; wrap it: [{{{single!r}}}]")
    if not groups or any(not g for g in groups):
        raise ValueError("gold must have at least one requirement and no empty requirement")
    unique = dedupe(ranked)
    depth = len(unique) if depth is None else min(depth, len(unique))
    gold: set[str] = set().union(*groups)
    sets = [set(g) for g in groups]
    first_gold: int | None = None
    gold_upto, satisfied_upto, dcg_upto = [0], [0], [0.0]
    met: set[int] = set()
    credited: set[int] = set()
    dcg = 0.0
    for r, i in enumerate(unique[:depth], 1):
        holding = [gi for gi, g in enumerate(sets) if i in g] if i in gold else []
        if holding and first_gold is None:
            first_gold = r
        fresh = [gi for gi in holding if gi not in met]
        met.update(fresh)
        new = [gi for gi in holding if gi not in credited]
        if new:
            credited.update(new[:1])
            dcg += 1.0 / math.log2(r + 1)
        gold_upto.append(gold_upto[-1] + (1 if holding else 0))
        satisfied_upto.append(satisfied_upto[-1] + len(fresh))
        dcg_upto.append(dcg)
    return RankProfile(depth, len(groups), first_gold, tuple(gold_upto), tuple(satisfied_upto), tuple(dcg_upto))


# --------------------------------------------------------------------------- the metrics


def hit(p: RankProfile, k: int | None) -> float:
    """Hit@k = 1 if any gold id is in the top k, else 0 (trec_eval ``success.k``)."""
    return 1.0 if p.first_gold is not None and p.first_gold <= p.cut(k) else 0.0


def recall(p: RankProfile, k: int | None) -> float:
    """Recall@k = requirements with an id in the top k / requirements (trec_eval
    ``recall.k`` when each requirement is one id)."""
    return p.satisfied_upto[p.cut(k)] / p.requirements


def precision(p: RankProfile, k: int | None) -> float:
    """Precision@k = gold ids (any alternative) in the top k / k (trec_eval ``P.k``).

    Divided by k even when fewer than k ids came back: the missing slots are misses, so a
    system cannot raise precision by returning less. Without a cutoff the denominator is
    the number of distinct ids returned (trec_eval ``set_P``); an empty list scores 0.
    """
    denominator = p.depth if k is None else k
    return p.gold_upto[p.cut(k)] / denominator if denominator else 0.0


def mrr(p: RankProfile, k: int | None) -> float:
    """Reciprocal rank = 1 / rank of the first gold id, 0 if none is in the top k
    (trec_eval ``recip_rank``; ranks start at 1). Its mean over questions is the MRR."""
    return 1.0 / p.first_gold if p.first_gold is not None and p.first_gold <= p.cut(k) else 0.0


def ndcg(p: RankProfile, k: int | None) -> float:
    """nDCG@k = DCG@k / IDCG@k with binary gains (trec_eval ``ndcg_cut.k``).

    DCG@k = Σ_{r ≤ k} gain_r / log2(r + 1), gain_r = 1 only for the first id of a
    requirement not credited before rank r; IDCG@k = Σ_{r=1}^{min(requirements, k)}
    1 / log2(r + 1) (every requirement met at the top). Without a cutoff, k = ∞
    (trec_eval ``ndcg``).
    """
    n_ideal = p.requirements if k is None else min(p.requirements, k)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, n_ideal + 1))
    return p.dcg_upto[p.cut(k)] / ideal


# --------------------------------------------------------------------------- the registry

MetricFunction = Callable[[RankProfile, int | None], float]


@dataclass(frozen=True)
class RetrievalMetric:
    """One retrieval metric: its name, its function, whether a name without ``@k`` is
    valid (``mrr``: the whole list) and its direction."""

    name: str
    function: MetricFunction
    cutoff_optional: bool = False
    lower_is_better: bool = False

    @property
    def patterns(self) -> tuple[str, ...]:
        """How a gate spells it: ``recall@k``; ``mrr`` and ``mrr@k``."""
        return (self.name, f"{self.name}@k") if self.cutoff_optional else (f"{self.name}@k",)


_REGISTRY: dict[str, RetrievalMetric] = {}


def _origin(metric: RetrievalMetric) -> tuple[str, str, bool, bool]:
    function = metric.function
    return (function.__module__, function.__qualname__, metric.cutoff_optional, metric.lower_is_better)


def register(metric: RetrievalMetric) -> RetrievalMetric:
    """Make ``metric`` known by its name. A name taken by another metric is refused; the
    same declaration again (a conftest imported twice in one process) replaces it."""
    name = metric.name
    if not name.isascii() or not name.isalpha() or not name.islower():
        raise ValueError(f"retrieval metric name {name!r}: use lower-case letters without '@' or '.', e.g. 'recall'")
    known = _REGISTRY.get(name)
    if known is not None and _origin(known) != _origin(metric):
        where = f"{known.function.__module__}.{known.function.__qualname__}"
        raise ValueError(f"retrieval metric {name!r} is registered already ({where}); choose another name")
    _REGISTRY[name] = metric
    parse_metric_name.cache_clear()
    return metric


def registered() -> tuple[RetrievalMetric, ...]:
    """Every registered metric, in registration order (the built-in ones first)."""
    return tuple(_REGISTRY.values())


def valid_metric_names() -> tuple[str, ...]:
    """The name patterns a gate may use, e.g. ``("hit@k", "recall@k", ..., "mrr", "mrr@k", ...)``."""
    return tuple(p for m in _REGISTRY.values() for p in m.patterns)


# --------------------------------------------------------------------------- names


@dataclass(frozen=True)
class MetricSpec:
    """A parsed metric name: which metric and at which cutoff (``None``: the whole list)."""

    metric: str
    k: int | None

    @property
    def name(self) -> str:
        """The canonical spelling, e.g. ``recall@5`` or ``mrr``; ``parse_metric_name`` round-trips it."""
        return self.metric if self.k is None else f"{self.metric}@{self.k}"

    def __str__(self) -> str:
        return self.name


def _unknown_metric(name: str, why: str = "") -> ValueError:
    detail = f" ({why})" if why else ""
    return ValueError(
        f"unknown metric name {name!r}{detail}; valid metric names: {', '.join(valid_metric_names())} "
        "where k is a positive integer, e.g. 'recall@5', 'ndcg@10', 'mrr'"
    )


@functools.lru_cache(maxsize=1024)  # parsed ~100 times per case: names repeat
def parse_metric_name(name: str) -> MetricSpec:
    """Parse ``"recall@5"``, ``"ndcg@10"``, ``"mrr"``, ``"mrr@10"``, ``"hit@3"``, ``"precision@5"``.

    The one place metric names are understood (case and surrounding spaces are ignored).
    A metric needs a cutoff unless it registered it as optional (``mrr``): ``recall``
    alone is ambiguous in a gate.
    """
    if not isinstance(name, str):
        raise TypeError(f"metric name must be a string like 'recall@5', got {name!r}")
    text = name.strip().lower()
    metric, at, k_text = text.partition("@")
    known = _REGISTRY.get(metric)
    if known is None:
        raise _unknown_metric(name)
    if not at:
        if known.cutoff_optional:
            return MetricSpec(metric, None)
        raise _unknown_metric(name, f"{metric} needs a cutoff, e.g. '{metric}@5'")
    if not k_text.isascii() or not k_text.isdigit() or int(k_text) < 1:
        raise _unknown_metric(name, f"cutoff {k_text!r} is not a positive integer")
    return MetricSpec(metric, int(k_text))


def lower_is_better(name: str) -> bool:
    """A retrieval metric name (``recall@5``) whose metric registered lower as better;
    False for any other name."""
    try:
        return _REGISTRY[parse_metric_name(name).metric].lower_is_better
    except (TypeError, ValueError):
        return False


# --------------------------------------------------------------------------- computing


def _check_k(spec: MetricSpec) -> None:
    k = spec.k
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"{spec.metric}: cutoff k must be a positive integer or None (whole list), got {k!r}")


def grouped_compute_all(specs: Iterable[MetricSpec | str], ranked: Sequence[str], groups: Groups) -> list[float]:
    """Each named metric of one ranked list against the requirements, looking at the list
    once (its :class:`RankProfile` to the deepest cutoff asked for)."""
    parsed = [parse_metric_name(s) if isinstance(s, str) else s for s in specs]
    for spec in parsed:
        _check_k(spec)
        if spec.metric not in _REGISTRY:
            raise _unknown_metric(spec.name)
    if not parsed:
        return []
    depth = None if any(s.k is None for s in parsed) else max(s.k or 0 for s in parsed)
    p = profile(ranked, groups, depth)
    return [_REGISTRY[s.metric].function(p, s.k) for s in parsed]


def grouped_compute(spec: MetricSpec | str, ranked: Sequence[str], groups: Groups) -> float:
    """One named metric of one ranked list against the requirements."""
    return grouped_compute_all([spec], ranked, groups)[0]


# the built-in metrics, in the order a gate's error message lists them
for _metric in (
    RetrievalMetric("hit", hit),
    RetrievalMetric("recall", recall),
    RetrievalMetric("precision", precision),
    RetrievalMetric("mrr", mrr, cutoff_optional=True),
    RetrievalMetric("ndcg", ndcg),
):
    register(_metric)
