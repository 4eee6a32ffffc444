"""The report's header: verdict, run metadata, token use and cost per tier, warnings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval.judge.blame import RUN_KEY as BLAME_KEY
from rag_eval.judge.blame import summary_line
from rag_eval.outputs.fmt import as_mapping, fmt_scalar
from rag_eval.outputs.stages import tier_rank


@dataclass(frozen=True)
class Field:
    label: str
    value: str
    title: str = ""  # the full value when ``value`` is shortened


@dataclass(frozen=True)
class UsageRow:
    tier: str
    fields: tuple[Field, ...]


@dataclass(frozen=True)
class Header:
    verdict: str  # pass | fail | incomplete | shard | unknown
    verdict_text: str
    fields: tuple[Field, ...]
    usage: tuple[UsageRow, ...]
    warnings: tuple[str, ...]
    blame: str = ""  # the run's judge blame split in one line (rag_eval.judge.blame.summary_line)


VERDICT_TEXT = {"pass": "PASSED", "fail": "FAILED", "incomplete": "INCOMPLETE", "shard": "SHARD"}


def build_header(
    results: Mapping[str, Any], run: Mapping[str, Any], items: Mapping[str, Any], cases: Sequence[Mapping[str, Any]]
) -> Header:
    """Verdict, run metadata (hashes shortened, full value as ``title``), usage, warnings."""
    verdict = str(results.get("verdict") or "unknown")
    verdict_text = VERDICT_TEXT.get(verdict, verdict.upper())
    shard = as_mapping(run.get("shard"))
    if verdict == "shard" and shard:
        verdict_text = f"SHARD {shard.get('index', '?')}/{shard.get('count', '?')}"
    system = as_mapping(run.get("system"))
    commit = run.get("commit")
    rows: list[tuple[str, Any]] = [
        (
            "commit",
            (_short(commit, 12) or "") + (" (dirty: uncommitted changes)" if run.get("dirty") else "")
            if commit
            else None,
        ),
        ("time", run.get("time")),
        ("dataset", run.get("dataset")),
        ("dataset fingerprint", run.get("dataset_fingerprint")),
        ("corpus hash", _short(run.get("corpus_hash"), 16)),
        ("golden set", run.get("golden_set")),
        ("golden set sha256", _short(run.get("golden_sha256"), 16)),
        ("index fingerprint", system.get("index_fingerprint")),
        ("embedder", system.get("embedder")),
        ("reranker", system.get("reranker")),
        ("generator", system.get("generator")),
        (
            "thresholds",
            run.get("thresholds") or "none (built-in gates: error_rate = 0, at least one case run per tier)",
        ),
        ("thresholds sha256", _short(run.get("thresholds_sha256"), 16)),
        ("split", run.get("split")),
        ("tags", run.get("tags")),
        ("overrides", run.get("overrides")),
        ("workers", run.get("workers")),
        ("shard", f"{shard.get('index')}/{shard.get('count')}" if shard else None),
    ]
    known = {"index_fingerprint", "embedder", "reranker", "generator"}
    rows += [(f"system: {k}", v) for k, v in system.items() if k not in known]
    merged = run.get("merged_from")
    if isinstance(merged, list) and merged:
        rows.append(("merged from", [as_mapping(m).get("path", m) for m in merged]))
    full = {
        "commit": commit,
        "corpus hash": run.get("corpus_hash"),
        "golden set sha256": run.get("golden_sha256"),
        "thresholds sha256": run.get("thresholds_sha256"),
    }
    fields = tuple(
        Field(label, fmt_scalar(value), str(full[label]) if full.get(label) else "")
        for label, value in rows
        if value not in (None, "", [], {})
    )
    return Header(
        verdict,
        verdict_text,
        fields,
        _usage(run),
        tuple(_warnings(results, run, items, cases)),
        summary_line(run.get(BLAME_KEY)),
    )


def _short(value: Any, keep: int) -> str | None:
    """A hash shortened for reading (the full value goes in the tooltip)."""
    if not value:
        return None
    text = str(value)
    return text if len(text) <= keep + 1 else text[:keep] + "…"


USAGE_FIELDS: tuple[tuple[str, str], ...] = (
    ("calls", "calls"),
    ("cached_calls", "from cache"),
    ("errors", "errors"),
    ("prompt_tokens", "prompt tokens"),
    ("completion_tokens", "completion tokens"),
    ("cost_usd", "cost (USD)"),
)


def _usage(run: Mapping[str, Any]) -> tuple[UsageRow, ...]:
    out = []
    for tier, usage in sorted(as_mapping(run.get("usage")).items(), key=lambda kv: tier_rank(kv[0])):
        usage = as_mapping(usage)
        fields = [Field(label, _usage_value(key, usage[key])) for key, label in USAGE_FIELDS if key in usage]
        known = {k for k, _ in USAGE_FIELDS}
        fields += [Field(k.replace("_", " "), _usage_value(k, v)) for k, v in sorted(usage.items()) if k not in known]
        out.append(UsageRow(str(tier), tuple(fields)))
    return tuple(out)


def _usage_value(key: str, value: Any) -> str:
    if key == "cost_usd" and isinstance(value, (int, float)):
        return f"${value:.4f}"
    if isinstance(value, float) and value.is_integer():
        return f"{int(value):,}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return fmt_scalar(value)


def _warnings(
    results: Mapping[str, Any], run: Mapping[str, Any], items: Mapping[str, Any], cases: Sequence[Mapping[str, Any]]
) -> list[str]:
    out = [str(w) for w in run.get("warnings") or ()]
    verdict = results.get("verdict")
    if verdict == "incomplete":
        out.append(
            f"the run was stopped early (-x, --maxfail or Ctrl-C): only the {len(cases)} cases computed so far are "
            "shown and the gates were not decided on the full set"
        )
    if verdict == "shard":
        out.append(
            "this is one shard of a sharded run: gates are evaluated over all shards by `python -m rag_eval merge`"
        )
    if not results.get("gates") and verdict not in ("shard",):
        out.append("no gates were evaluated (no thresholds file, or no tier with gates ran)")
    if cases and not items:
        out.append(
            "the results file holds no golden items (`items`): questions, gold evidence and key facts are not shown; "
            "re-run with a current rag_eval to include them"
        )
    if not cases:
        out.append("the results file holds no cases")
    for key, value in as_mapping(run.get("system")).items():
        if isinstance(value, list):  # run.system_summary lists a value that differed between workers
            out.append(f"mixed system under test: {key} = {fmt_scalar(value)} (the numbers mix several systems)")
    return out
