"""thresholds.toml: the gates, parsed and validated once at start-up.

    [defaults]
    min_cases = 5                      # a gate over fewer cases fails
    unmeasured = "fail"                # a tier whose selected cases all skipped fails ("pass": allowed)
    ungated = "fail"                   # a tier that ran with no gate here fails on any error ("pass": allowed)

    [retrieval]                        # aggregate gates of a tier: metric = {min|max}
    "recall@5" = { min = 0.80 }
    "bm25.doc.recall@10" = 0.6         # a bare number means min
    error_rate = { max = 0.0 }

    [retrieval.case]                   # what makes one case pass
    require = "context"
    "recall@5" = { min = 0.5 }

    [tag."scenario=negative".deterministic]   # per-tag gates
    pass_rate = { min = 1.0, min_cases = 3 }

    [regression]                       # against a baseline run (--rag-baseline), if given
    no_new_failures = true
    "retrieval.recall@5" = { max_drop = 0.02 }

Every problem is reported with the file, the table and the key, and lists the
valid names, so a typo fails the run at start instead of silently gating nothing.
"""

from __future__ import annotations

import hashlib
import math
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from rag_eval import tiers
from rag_eval.core.errors import ConfigError
from rag_eval.gates import stat_options
from rag_eval.metrics.grouped import parse_metric_name
from rag_eval.tiers import RATE_KEYS, CaseOption
from rag_eval.tiers.retrieval.tier import STAGE_NAME

__all__ = [
    "RATE_KEYS",
    "Gate",
    "Thresholds",
    "ThresholdsError",
    "load_thresholds",
    "parse_thresholds",
]
from rag_eval.util.utf8 import NotUtf8Error, decode

T = TypeVar("T")
OPS: tuple[str, ...] = ("min", "max")
# What a judged metric's gate decides on (docs/human-labels.md): the judge's own mean (default),
# the human labels' mean, or the PPI++ estimate that corrects the judge with the labels.
JUDGE_ONLY = "judge"  # the estimate from the judge's values alone (estimate = "judge", the default)
ESTIMATES: tuple[str, ...] = (JUDGE_ONLY, "labels", "ppi")
# [defaults] unmeasured: what a tier whose selected cases were all skipped (none measured) does to the gate.
UNMEASURED_MODES: tuple[str, ...] = ("fail", "pass")
# [defaults] ungated: what an error in a tier that ran but has no gate in the file does
# ("fail": built-in error_rate = 0).
UNGATED_MODES: tuple[str, ...] = ("fail", "pass")


class ThresholdsError(ValueError):
    """thresholds.toml is unreadable or names something unknown."""


@dataclass(frozen=True)
class Gate:
    tier: str
    metric: str
    op: str
    threshold: float
    min_cases: int
    tags: Mapping[str, str] = field(default_factory=dict)
    where: str = ""
    decide: str = "estimate"  # the floor rule (rag_eval.stats.floors): estimate, clearly_below, clearly_above
    estimate: str = JUDGE_ONLY  # ESTIMATES: "labels" and "ppi" need --rag-human-labels

    @property
    def label(self) -> str:
        scope = ",".join(f"{k}={v}" for k, v in sorted(self.tags.items()))
        corrected = f" ({self.estimate} estimate)" if self.estimate != JUDGE_ONLY else ""
        return f"{self.tier}.{self.metric}" + (f" [{scope}]" if scope else "") + corrected


@dataclass(frozen=True)
class CaseRules:
    """Per-case pass conditions of one tier."""

    options: Mapping[str, Any] = field(default_factory=dict)
    floors: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class MaxDrop:
    """A results metric (e.g. 'retrieval.recall@5') may get worse than the baseline by at most
    ``max_drop``: fall, or rise for a lower-is-better one (error_rate)."""

    metric: str
    max_drop: float
    where: str = ""
    alpha: float | None = None  # given: fail only on a drop larger than max_drop at significance alpha


@dataclass(frozen=True)
class RegressionRules:
    """The [regression] table: gates against a baseline run, evaluated only when one is given."""

    no_new_failures: bool = False
    max_drops: tuple[MaxDrop, ...] = ()
    no_new_failures_alpha: float | None = None  # given: exact McNemar on pass→fail against fail→pass

    def __bool__(self) -> bool:
        return self.no_new_failures or bool(self.max_drops)


@dataclass(frozen=True)
class Thresholds:
    path: str
    sha256: str
    gates: tuple[Gate, ...]
    cases: Mapping[str, CaseRules]
    min_cases: int
    regression: RegressionRules = field(default_factory=RegressionRules)
    unmeasured: str = "fail"  # [defaults] unmeasured: see rag_eval.gates.gate.unmeasured_gates
    ungated: str = "fail"  # [defaults] ungated: see rag_eval.gates.gate.builtin_error_gates
    confidence: float = 0.95  # [defaults] confidence: the level of every interval

    def case_rules(self, tier: str) -> CaseRules:
        return self.cases.get(tier, CaseRules())

    def stage_problems(self, stages: Sequence[str]) -> list[str]:
        """Each gate or floor whose metric names a stage the system does not have
        (``Tier.stage_of``: the retrieval tier's ``dense.recall@10``), and each ``stage``
        option naming one (``[retrieval.case] require``)."""
        problems: list[str] = []
        known = set(stages)
        registered = set(tiers.names())
        keys = [(g.where or f"{self.path}: [{g.tier}] {g.metric!r}", g.tier, g.metric) for g in self.gates]
        keys += [(f"{self.path}: [{t}.case] {k!r}", t, k) for t, rules in self.cases.items() for k in rules.floors]
        for where, tier, key in keys:
            stage = tiers.get(tier).stage_of(key) if tier in registered else None
            if stage is not None and stage not in known:
                problems.append(f"{where} names stage {stage!r}")
        for t, rules in self.cases.items():
            for option in tiers.get(t).case_options if t in registered else ():
                value = rules.options.get(option.name)
                if option.kind == "stage" and value is not None and value not in known:
                    problems.append(f"{self.path}: [{t}.case] {option.name} = {value!r} names stage {value!r}")
        return problems

    def metric_names(self, tier: str) -> set[str]:
        """Base metric names (e.g. 'recall@7') that gates or case rules of a tier mention."""
        names = {g.metric for g in self.gates if g.tier == tier} | set(self.case_rules(tier).floors)
        base: set[str] = set()
        for n in names:
            last = n.split(".")[-1]
            try:
                base.add(parse_metric_name(last).name)
            except ValueError:
                pass
        return base


def load_thresholds(path: str | Path) -> Thresholds:
    path = Path(path)
    if not path.is_file():
        raise ThresholdsError(f"{path}: thresholds file not found (pass --rag-thresholds PATH or create it)")
    data = path.read_bytes()
    try:
        doc = tomllib.loads(decode(data, str(path)))
    except tomllib.TOMLDecodeError as exc:
        raise ThresholdsError(f"{path}: not valid TOML: {exc}") from exc
    except RecursionError:
        raise ThresholdsError(f"{path}: not valid TOML: nested too deeply (arrays or inline tables)") from None
    except NotUtf8Error as exc:
        raise ThresholdsError(str(exc)) from None
    return parse_thresholds(doc, str(path), hashlib.sha256(data).hexdigest())


def parse_thresholds(doc: Mapping[str, Any], path: str, sha256: str = "") -> Thresholds:
    defaults = doc.get("defaults", {})
    _only_keys(defaults, {"min_cases", "unmeasured", "ungated", "confidence", "decide"}, path, "[defaults]")
    min_cases = _int(defaults.get("min_cases", 1), path, "[defaults] min_cases")
    level = _stat(stat_options.confidence, defaults.get("confidence", 0.95), f"{path}: [defaults]")
    rule = _stat(stat_options.decide, defaults.get("decide", "estimate"), f"{path}: [defaults]")
    unmeasured = defaults.get("unmeasured", "fail")
    if unmeasured not in UNMEASURED_MODES:
        raise ThresholdsError(
            f"{path}: [defaults] unmeasured = {unmeasured!r}; valid: {', '.join(map(repr, UNMEASURED_MODES))} "
            '("pass" lets a tier whose selected cases were all skipped pass the gate)'
        )
    ungated = defaults.get("ungated", "fail")
    if ungated not in UNGATED_MODES:
        raise ThresholdsError(
            f"{path}: [defaults] ungated = {ungated!r}; valid: {', '.join(map(repr, UNGATED_MODES))} "
            '("pass" lets a tier that has no gate in this file pass with errors)'
        )
    gates: list[Gate] = []
    cases: dict[str, CaseRules] = {}
    regression = RegressionRules()
    for table, body in doc.items():
        if table == "defaults":
            continue
        if table == "tag":
            gates.extend(_tag_gates(body, path, min_cases, rule))
            continue
        if table == "regression":
            regression = _regression(body, path)
            continue
        _check_tier(table, path, top_level=True)
        tier_gates, rules = _tier(table, body, path, f"[{table}]", min_cases, {}, rule)
        gates.extend(tier_gates)
        if rules is not None:
            cases[table] = rules
    return Thresholds(path, sha256, tuple(gates), cases, min_cases, regression, unmeasured, ungated, level)


def _stat(check: Callable[[Any, str], T], value: Any, where: str) -> T:
    """A statistical option checked by ``stat_options``; its ValueError as a ThresholdsError."""
    try:
        return check(value, where)
    except ValueError as exc:
        raise ThresholdsError(str(exc)) from None


def _check_tier(table: str, path: str, top_level: bool = False) -> None:
    if table not in tiers.names():
        # [regression] exists only at the top: a baseline comparison has no tag scope.
        others = ["defaults", "tag", "regression"] if top_level else ["defaults", "tag"]
        valid = ", ".join(sorted(tiers.names()) + others)
        raise ThresholdsError(f"{path}: unknown table [{table}]; valid tables: {valid}")


def _tier(
    tier: str, body: Any, path: str, table: str, min_cases: int, tags: Mapping[str, str], rule: str = "estimate"
) -> tuple[list[Gate], CaseRules | None]:
    if not isinstance(body, dict):
        raise ThresholdsError(f"{path}: {table} must be a table of metric = {{ min = ... }} entries")
    gates: list[Gate] = []
    rules: CaseRules | None = None
    for key, spec in body.items():
        if key == "case" and not tags:
            rules = _case_rules(tier, spec, path, f"{table[:-1]}.case]")
            continue
        _check_metric(tier, key, path, table)
        op, threshold, n_min = _gate_spec(spec, path, table, key, min_cases)
        estimate = _estimate(spec, tier, tags, f"{path}: {table} {key}")
        decide = (
            _stat(stat_options.decide, spec.get("decide", rule), f"{path}: {table} {key}")
            if isinstance(spec, dict)
            else rule
        )
        gates.append(Gate(tier, key, op, threshold, n_min, dict(tags), f"{path} {table} {key}", decide, estimate))
    return gates, rules


def _check_metric(tier: str, key: str, path: str, table: str) -> None:
    if not tiers.get(tier).metric_ok(key):
        raise ThresholdsError(
            f"{path}: unknown metric {key!r} in {table}; valid names for {tier}: {tiers.get(tier).valid_names}"
        )


def _gate_spec(spec: Any, path: str, table: str, key: str, min_cases: int) -> tuple[str, float, int]:
    where = f"{path}: {table} {key}"
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        _check_threshold(float(spec), key, where)
        return "min", float(spec), min_cases
    if not isinstance(spec, dict):
        raise ThresholdsError(f"{where}: expected a number or {{ min = x }} / {{ max = x }}, got {spec!r}")
    _only_keys(spec, {"min", "max", "min_cases", "estimate", "decide"}, path, f"{table} {key}")
    ops = [op for op in OPS if op in spec]
    if len(ops) != 1:
        raise ThresholdsError(f"{where}: give exactly one of min or max, got {sorted(spec)}")
    value = spec[ops[0]]
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ThresholdsError(f"{where}: {ops[0]} must be a number, got {value!r}")
    _check_threshold(float(value), key, f"{where}: {ops[0]}")
    return ops[0], float(value), _int(spec.get("min_cases", min_cases), path, f"{table} {key}.min_cases")


def _estimate(spec: Any, tier: str, tags: Mapping[str, str], where: str) -> str:
    """``estimate = judge | labels | ppi`` of a judged metric's gate (default judge)."""
    value = spec.get("estimate", JUDGE_ONLY) if isinstance(spec, dict) else JUDGE_ONLY
    if value == JUDGE_ONLY:
        return JUDGE_ONLY
    if value not in ESTIMATES:
        raise ThresholdsError(f"{where}: estimate = {value!r}; valid: {', '.join(map(repr, ESTIMATES))}")
    if tier not in tiers.judged():
        raise ThresholdsError(
            f"{where}: estimate = {value!r} corrects a judged metric with human labels; "
            f"only [{'], ['.join(tiers.judged())}] gates take it"
        )
    if tags:
        raise ThresholdsError(
            f"{where}: estimate = {value!r} is over every labelled case of the run, not a tag's; "
            "put this gate in the untagged table"
        )
    return str(value)


def _check_threshold(value: float, key: str, where: str) -> None:
    """A threshold no metric can take (nan, inf, 1e999, below 0: every gated value is a
    count, a share or a score >= 0) would fail or pass its gate forever (``need >= nan``):
    refused at load."""
    if not math.isfinite(value):
        raise ThresholdsError(f"{where} = {value!r} is not a finite number; give a threshold like 0.8")
    if value < 0:
        raise ThresholdsError(f"{where} = {value:g} is below 0; {key!r} is a count, share or score >= 0")


def _case_rules(tier_name: str, spec: Any, path: str, table: str) -> CaseRules:
    """``[<tier>.case]``: the options the tier declares (``Tier.case_options``), checked with
    the tier's own check, and per-case metric floors where the tier takes them."""
    if not isinstance(spec, dict):
        raise ThresholdsError(f"{path}: {table} must be a table")
    tier = tiers.get(tier_name)
    declared = {o.name: o for o in tier.case_options}
    named = [o.name for o in tier.case_options if o.kind != "int"]
    options: dict[str, Any] = {}
    floors: dict[str, float] = {}
    for key, value in spec.items():
        if key in declared:
            options[key] = _case_option(value, declared[key], path, table)
            continue
        if not tier.metric_ok(key) or key in RATE_KEYS:
            raise ThresholdsError(
                f"{path}: unknown key {key!r} in {table}; valid: {', '.join(named) or '(no options)'} "
                f"or a per-case metric floor ({tier.valid_names})"
            )
        refusal = tier.refuse_floor(key)
        if refusal is not None:
            raise ThresholdsError(f"{path}: {table} {key}: {refusal}")
        if isinstance(value, dict) and "min_cases" in value:
            raise ThresholdsError(
                f"{path}: {table} {key}: min_cases applies to aggregate gates, not to per-case floors; remove it"
            )
        op, threshold, _ = _gate_spec(value, path, table, key, 0)
        if tier.lower_is_better(key) and op != "max":  # hallucination, noise sensitivity: a ceiling
            raise ThresholdsError(
                f"{path}: {table} {key}: lower is better, so the per-case limit is a "
                f"ceiling; write {key} = {{ max = x }}"
            )
        if not tier.lower_is_better(key) and op != "min":
            raise ThresholdsError(f"{path}: {table} {key}: per-case thresholds are floors; use min")
        floors[key] = threshold
    try:
        tier.check_options(options, f"{path}: {table} ")
    except ConfigError as exc:
        raise ThresholdsError(str(exc)) from None
    return CaseRules(options, floors)


def _case_option(value: Any, option: CaseOption, path: str, table: str) -> int | str | list[str]:
    """A whole number for an ``int`` option; one name for a ``name`` or ``stage`` option; a
    list of names (or one name) for a ``names`` option.

    A string where a list is expected would otherwise be iterated character by character
    (``skip_checks = "numbers_grounded"`` skipping nothing), and a list where one name is
    expected would reach the evaluator as an unhashable stage name.
    """
    key, valid = option.name, option.choices
    if option.kind == "int":
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ThresholdsError(f"{path}: {table} {key} must be a whole number >= 1, got {value!r}")
        return value
    if option.kind == "names":
        values = value if isinstance(value, list) else [value]
    elif isinstance(value, list):
        names = "a stage of the system's" if option.kind == "stage" else f"one of {', '.join(valid)}"
        raise ThresholdsError(f"{path}: {table} {key} takes one name, not a list; {names}")
    else:
        values = [value]
    if option.kind == "stage":  # a stage of the system's own, checked against its stages at start-up
        valid = tuple(v for v in values if isinstance(v, str) and STAGE_NAME.match(v))
    bad = [v for v in values if not isinstance(v, str) or v not in valid]
    if bad:
        raise ThresholdsError(f"{path}: {table} {key} = {bad[0]!r} is not one of {', '.join(valid)}")
    return list(values) if option.kind == "names" else values[0]


def _tag_gates(body: Any, path: str, min_cases: int, rule: str = "estimate") -> list[Gate]:
    if not isinstance(body, dict):
        raise ThresholdsError(f'{path}: [tag] holds tables like [tag."scenario=negative".retrieval]')
    gates: list[Gate] = []
    for selector, tiers in body.items():  # noqa: F402 - the module is not used in this function
        tags: dict[str, str] = {}
        for part in selector.split(","):
            k, sep, v = part.partition("=")
            if not sep or not k.strip() or not v.strip():
                raise ThresholdsError(
                    f'{path}: [tag."{selector}"]: a tag selector is key=value[,key=value], e.g. "scenario=negative"'
                )
            if k.strip() in tags:
                # "a=b,a=c" can match no case: one tag key holds one value.
                raise ThresholdsError(f'{path}: [tag."{selector}"]: tag key {k.strip()!r} is given twice')
            tags[k.strip()] = v.strip()
        if not isinstance(tiers, dict):
            raise ThresholdsError(f'{path}: [tag."{selector}"] must hold tier tables')
        for tier, tbody in tiers.items():
            _check_tier(tier, path)
            tier_gates, _ = _tier(tier, tbody, path, f'[tag."{selector}".{tier}]', min_cases, tags, rule)
            gates.extend(tier_gates)
    return gates


# Gate-only keys: computed by the gate, absent from a results file's ``metrics``, so a
# baseline has no value to compare with (pass_rate is their per-tier counterpart).
NOT_IN_RESULTS: tuple[str, ...] = ("fail_count", "flaky_count")


def _regression(body: Any, path: str) -> RegressionRules:
    """[regression]: ``no_new_failures = true`` and ``"<tier>.<metric>" = { max_drop = x }``."""
    if not isinstance(body, dict):
        raise ThresholdsError(
            f"{path}: [regression] must be a table of no_new_failures = true and metric = {{ max_drop = x }}"
        )
    no_new_failures = False
    nnf_alpha: float | None = None
    drops: list[MaxDrop] = []
    for key, spec in body.items():
        if key == "no_new_failures":
            if isinstance(spec, dict):
                _only_keys(spec, {"alpha"}, path, "[regression] no_new_failures")
                no_new_failures = True
                nnf_alpha = _stat(stat_options.alpha, spec.get("alpha"), f"{path}: [regression] no_new_failures")
                continue
            if not isinstance(spec, bool):
                raise ThresholdsError(
                    f"{path}: [regression] no_new_failures must be true, false or {{ alpha = 0.05 }}, got {spec!r}"
                )
            no_new_failures = spec
            continue
        _check_regression_metric(key, path)
        where = f"{path}: [regression] {key}"
        if not isinstance(spec, dict):
            raise ThresholdsError(
                f"{where}: expected {{ max_drop = x }} (the largest allowed fall below the baseline), got {spec!r}"
            )
        _only_keys(spec, {"max_drop", "alpha"}, path, f"[regression] {key}")
        value = spec.get("max_drop")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < math.inf:
            raise ThresholdsError(f"{where}: max_drop must be a finite number >= 0, got {value!r}")
        level = None if "alpha" not in spec else _stat(stat_options.alpha, spec["alpha"], where)
        drops.append(MaxDrop(key, float(value), f"{path} [regression] {key}", level))
    return RegressionRules(no_new_failures, tuple(drops), nnf_alpha)


def _check_regression_metric(key: str, path: str) -> None:
    """A results ``metrics`` key: '<tier>.<metric>' with the metric valid for its tier."""
    tier, _, metric = key.partition(".")
    if tier not in tiers.names():
        raise ThresholdsError(
            f"{path}: unknown key {key!r} in [regression]; valid: no_new_failures, or <tier>.<metric> as the "
            "results file's metrics name it (e.g. 'retrieval.recall@5') "
            f"with tier in {', '.join(sorted(tiers.names()))}"
        )
    if metric in NOT_IN_RESULTS or not tiers.get(tier).metric_ok(metric):
        not_here = f" except {', '.join(NOT_IN_RESULTS)}" if metric in NOT_IN_RESULTS else ""
        raise ThresholdsError(
            f"{path}: unknown metric {key!r} in [regression]; valid names for {tier}: {tier}.<name> with name in "
            f"{tiers.get(tier).valid_names}{not_here}"
        )


def _only_keys(table: Any, allowed: set[str], path: str, where: str) -> None:
    if not isinstance(table, dict):
        raise ThresholdsError(f"{path}: {where} must be a table")
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ThresholdsError(
            f"{path}: unknown key {unknown[0]!r} in {where}; valid keys: {', '.join(sorted(allowed))}"
        )


def _int(value: Any, path: str, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ThresholdsError(f"{path}: {where} must be a non-negative integer, got {value!r}")
    return value
