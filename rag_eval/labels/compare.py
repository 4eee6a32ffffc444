"""Human labels against one run's judge: agreement, bias and three estimates per metric.

Per judged metric with at least one label on a judged case (docs/human-labels.md):

* ``kind``: ``binary`` when every judge value and label is 0 or 1, ``categorical`` when
  each is 0, 0.5 or 1, else ``continuous``;
* agreement over every (label, judge value) pair — one pair per person and case:
  accuracy and Cohen's κ (binary, categorical), Spearman ρ and mean absolute error
  (continuous); per-claim and per-key-fact labels get their own accuracy and κ (``units``);
* ``bias`` = mean(judge − human) over the labelled cases, a case's human value being the
  mean of its annotators' labels;
* ``inter_annotator``: Krippendorff's α over the cases two or more people labelled
  (nominal for binary and categorical, interval for continuous);
* three estimates of the metric's mean with intervals: ``judge_only`` over every judged
  case (Wilson for binary values, else the bootstrap), ``labels_only`` (PPI with λ = 0:
  the labelled cases' human mean) and ``ppi`` (PPI++, λ tuned and shown).

A label for a case the run did not judge (not in it, or the judge erred on it), for a
metric the run did not judge, or for a claim or key fact the verdict does not have, is
listed in ``left_out`` with the reason and used nowhere else.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rag_eval.labels.judged import JudgedMetric, judged_metrics
from rag_eval.labels.model import Label
from rag_eval.stats.agreement import (
    Level,
    accuracy,
    cohen_kappa,
    judge_bias,
    krippendorff_alpha,
    mean_absolute_error,
    spearman,
)
from rag_eval.stats.bootstrap import bootstrap_mean
from rag_eval.stats.closed_form import t_interval, wilson
from rag_eval.stats.interval import Interval, no_interval
from rag_eval.stats.ppi import ppi_mean


@dataclass(frozen=True)
class InterAnnotator:
    """Agreement between people on the ``n_cases`` cases two or more of them labelled."""

    n_cases: int
    annotators: tuple[str, ...]
    alpha: float | None
    level: str


@dataclass(frozen=True)
class UnitAgreement:
    """Judge vs human on single claims (``claim``) or key facts (``fact``)."""

    unit: str
    n: int
    accuracy: float
    kappa: float | None


@dataclass(frozen=True)
class LeftOut:
    """A label that was not used, and why."""

    source: str
    case: str
    metric: str
    reason: str


@dataclass(frozen=True)
class MetricAgreement:
    """One metric's labels against its judge values (module doc); ``None``: not defined here."""

    metric: str
    kind: str
    n_judged: int
    n_errors: int
    n_labelled: int
    n_pairs: int
    annotators: tuple[str, ...]
    accuracy: float | None
    kappa: float | None
    spearman: float | None
    mae: float | None
    bias: float | None
    inter_annotator: InterAnnotator | None
    judge_only: Interval
    labels_only: Interval
    ppi: Interval
    lam: float | None
    units: tuple[UnitAgreement, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON primitives (for the results file)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["annotators"] = list(self.annotators)
        d["inter_annotator"] = (
            None
            if self.inter_annotator is None
            else {**vars(self.inter_annotator), "annotators": list(self.inter_annotator.annotators)}
        )
        for key in ("judge_only", "labels_only", "ppi"):
            d[key] = getattr(self, key).to_dict()
        d["units"] = [vars(u).copy() for u in self.units]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MetricAgreement:
        """Inverse of ``to_dict``."""
        inter = d.get("inter_annotator")
        fields = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        fields.update(
            annotators=tuple(d["annotators"]),
            inter_annotator=None
            if inter is None
            else InterAnnotator(**{**inter, "annotators": tuple(inter["annotators"])}),
            judge_only=Interval.from_dict(d["judge_only"]),
            labels_only=Interval.from_dict(d["labels_only"]),
            ppi=Interval.from_dict(d["ppi"]),
            units=tuple(UnitAgreement(**u) for u in d.get("units", ())),
        )
        return cls(**fields)


@dataclass(frozen=True)
class LabelReport:
    """Every labelled metric's agreement and estimates, and the labels left out."""

    confidence: float
    metrics: tuple[MetricAgreement, ...]
    left_out: tuple[LeftOut, ...]

    def estimate(self, metric: str, which: str) -> tuple[float | None, int, str]:
        """What a gate with ``estimate = which`` ("labels" or "ppi") takes for ``metric``:
        (the point estimate, the number of labelled cases, why there is none)."""
        row = next((m for m in self.metrics if m.metric == metric), None)
        if row is None:
            return None, 0, f"no human label for {metric} on a case this run judged (see the labels block)"
        interval = row.labels_only if which == "labels" else row.ppi
        if interval.estimate is None and which == "ppi" and row.labels_only.estimate is not None:
            interval = row.labels_only  # every judged case labelled: the labels are the estimate
        if interval.estimate is None:
            return None, row.n_labelled, f"no {which} estimate: {interval.reason}"
        return interval.estimate, row.n_labelled, ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "confidence": self.confidence,
            "metrics": [m.to_dict() for m in self.metrics],
            "left_out": [vars(x).copy() for x in self.left_out],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LabelReport:
        return cls(
            confidence=float(d["confidence"]),
            metrics=tuple(MetricAgreement.from_dict(m) for m in d["metrics"]),
            left_out=tuple(LeftOut(**x) for x in d["left_out"]),
        )


def compare_labels(labels: Sequence[Label], results: Mapping[str, Any], confidence: float = 0.95) -> LabelReport:
    """The report of ``labels`` against the judged cases of ``results`` (module doc)."""
    judged = judged_metrics(results)
    used, left_out = _split(labels, judged)
    by_metric: dict[str, list[Label]] = defaultdict(list)
    for label in used:
        by_metric[label.metric].append(label)
    metrics = tuple(_metric(key, by_metric[key], judged[key], confidence) for key in sorted(by_metric))
    return LabelReport(confidence=confidence, metrics=metrics, left_out=tuple(left_out))


def _split(labels: Sequence[Label], judged: Mapping[str, JudgedMetric]) -> tuple[list[Label], list[LeftOut]]:
    """The labels that meet a judge value, and the others with their reason."""
    used: list[Label] = []
    left: list[LeftOut] = []
    for label in labels:
        metric = judged.get(label.metric)
        reason = None
        if metric is None:
            reason = f"the run did not judge {label.metric}"
        elif label.case in metric.errors:
            reason = "the judge failed on this case (an error): there is no judge value to compare with"
        elif label.case not in metric.values and not any(k[0] == label.case for k in metric.units):
            reason = f"case not judged in this run for {label.metric}"
        elif label.unit is not None and (label.case, label.unit, label.index) not in metric.units:
            reason = f"the judge's verdict on this case has no {label.unit} {label.index}"
        elif label.unit is None and label.case not in metric.values:
            reason = f"the judge gave this case no {label.metric} value (nothing to measure)"
        if reason is None:
            used.append(label)
        else:
            left.append(LeftOut(label.source, label.case, label.metric, reason))
    return used, left


def _kind(values: Sequence[float]) -> str:
    if all(v in (0.0, 1.0) for v in values):
        return "binary"
    return "categorical" if all(v in (0.0, 0.5, 1.0) for v in values) else "continuous"


def _metric(key: str, labels: Sequence[Label], judged: JudgedMetric, confidence: float) -> MetricAgreement:
    case_labels = [lb for lb in labels if lb.unit is None]
    per_case: dict[str, list[Label]] = defaultdict(list)
    for lb in case_labels:
        per_case[lb.case].append(lb)
    kind = _kind([*judged.values.values(), *(lb.value for lb in case_labels)])
    human = [lb.value for lb in case_labels]
    judge = [judged.values[lb.case] for lb in case_labels]
    cases = sorted(per_case)
    y = [sum(lb.value for lb in per_case[c]) / len(per_case[c]) for c in cases]
    yhat = [judged.values[c] for c in cases]
    unlabelled = [v for c, v in sorted(judged.values.items()) if c not in per_case]
    estimates = _estimates(kind, y, yhat, unlabelled, judged.values, confidence)
    discrete = kind != "continuous" and bool(human)
    return MetricAgreement(
        metric=key,
        kind=kind,
        n_judged=len(judged.values),
        n_errors=len(judged.errors),
        n_labelled=len(cases),
        n_pairs=len(human),
        annotators=tuple(sorted({lb.annotator for lb in labels})),
        accuracy=accuracy(human, judge) if discrete else None,
        kappa=cohen_kappa(human, judge) if discrete else None,
        spearman=spearman(human, judge) if human and not discrete else None,
        mae=mean_absolute_error(human, judge) if human and not discrete else None,
        bias=judge_bias(y, yhat) if y else None,
        inter_annotator=_inter(per_case, kind),
        judge_only=estimates[0],
        labels_only=estimates[1],
        ppi=estimates[2],
        lam=estimates[3],
        units=_units(labels, judged),
    )


def _estimates(
    kind: str,
    y: list[float],
    yhat: list[float],
    unlabelled: list[float],
    all_values: Mapping[str, float],
    confidence: float,
) -> tuple[Interval, Interval, Interval, float | None]:
    """judge-only, labels-only, PPI++ and the λ PPI++ chose (None when it could not run)."""
    values = list(all_values.values())
    if kind == "binary":
        judge_only = wilson(sum(1 for v in values if v == 1.0), len(values), confidence)
    else:
        judge_only = bootstrap_mean(dict(all_values), confidence)
    if not y:
        reason = "no labelled case"
        return (
            judge_only,
            no_interval(None, 0, confidence, "labels_only", reason),
            no_interval(None, len(values), confidence, "ppi++", reason),
            None,
        )
    if not unlabelled:
        # every judged case is labelled: the judge has nothing to add, the labels are the answer
        labels_only = t_interval(y, confidence)
        reason = "every judged case is labelled: no unlabelled case for the judge to add; read labels_only"
        return judge_only, labels_only, no_interval(None, len(y), confidence, "ppi++", reason), None
    # λ = 0 uses the labelled cases only: its n is theirs (ppi_mean counts n + N)
    labels_only = replace(ppi_mean(y, yhat, unlabelled, lam=0.0, confidence=confidence).interval, n=len(y))
    tuned = ppi_mean(y, yhat, unlabelled, lam=None, confidence=confidence)
    return judge_only, labels_only, tuned.interval, tuned.lam


def _inter(per_case: Mapping[str, Sequence[Label]], kind: str) -> InterAnnotator | None:
    multi = {c: [lb.value for lb in lbs] for c, lbs in per_case.items() if len({lb.annotator for lb in lbs}) >= 2}
    if not multi:
        return None
    level: Level = "interval" if kind == "continuous" else "nominal"
    people = sorted({lb.annotator for c in multi for lb in per_case[c]})
    units: dict[str, Sequence[float | str]] = dict(multi)
    return InterAnnotator(
        n_cases=len(multi), annotators=tuple(people), alpha=krippendorff_alpha(units, level), level=level
    )


def _units(labels: Sequence[Label], judged: JudgedMetric) -> tuple[UnitAgreement, ...]:
    out = []
    for unit in ("claim", "fact"):
        pairs = [(lb.value, judged.units[(lb.case, unit, lb.index or 0)]) for lb in labels if lb.unit == unit]
        if pairs:
            human: list[Hashable] = [p[0] for p in pairs]
            judge: list[Hashable] = [p[1] for p in pairs]
            out.append(
                UnitAgreement(unit=unit, n=len(pairs), accuracy=accuracy(human, judge), kappa=cohen_kappa(human, judge))
            )
    return tuple(out)
