"""The report's header: verdict, run metadata, token use and cost per tier, warnings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag_eval.judge.blame import RUN_KEY as BLAME_KEY
from rag_eval.judge.blame import summary_line
from rag_eval.outputs.fmt import fmt_scalar
from rag_eval.outputs.stages import tier_rank
from rag_eval.results.model import RunResults


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
    usage: tuple[UsageRow, ...]  # tiers that used a model (a row of zeros is left out)
    warnings: tuple[str, ...]
    blame: str = ""  # the run's judge blame split in one line (rag_eval.judge.blame.summary_line)
    system: tuple[Field, ...] = ()  # what the system under test said about itself, one group
    evidence: str = ""  # how many evidence candidates await review, and the command that lists them

    @property
    def run_line(self) -> tuple[Field, ...]:
        """The run block's fields shown beside the verdict: commit, dataset, time."""
        return tuple(f for f in self.fields if f.label in ("commit", "dataset", "time"))


VERDICT_TEXT = {"pass": "PASSED", "fail": "FAILED", "incomplete": "INCOMPLETE", "shard": "SHARD"}


def build_header(results: RunResults) -> Header:
    """Verdict, run metadata (hashes shortened, full value as ``title``), usage, warnings."""
    run = results.run
    verdict = results.verdict
    verdict_text = VERDICT_TEXT[verdict]
    shard = run["shard"]
    if verdict == "shard" and shard:
        verdict_text = f"SHARD {shard['index']}/{shard['count']}"
    system = run["system"]
    optional = run_optional(run)
    commit = run["commit"]
    rows: list[tuple[str, Any]] = [
        (
            "commit",
            (_short(commit, 12) or "") + (" (dirty: uncommitted changes)" if run["dirty"] else "") if commit else None,
        ),
        ("time", run["time"]),
        ("dataset", run["dataset"]),
        ("dataset fingerprint", run["dataset_fingerprint"]),
        ("corpus hash", _short(optional["corpus_hash"], 16)),
        ("golden set", optional["golden_set"]),
        ("golden set sha256", _short(optional["golden_sha256"], 16)),
        ("thresholds", run["thresholds"] or "none (built-in gates: error_rate = 0, at least one case run per tier)"),
        ("thresholds sha256", _short(run["thresholds_sha256"], 16)),
        ("split", run["split"]),
        ("tags", run["tags"]),
        ("overrides", run["overrides"]),
        ("workers", optional["workers"]),
        ("shard", f"{shard['index']}/{shard['count']}" if shard else None),
    ]
    merged = optional["merged_from"]
    if merged:
        rows.append(("merged from", [m["path"] for m in merged]))
    full = {
        "commit": commit,
        "corpus hash": optional["corpus_hash"],
        "golden set sha256": optional["golden_sha256"],
        "thresholds sha256": run["thresholds_sha256"],
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
        _usage(run["usage"]),
        tuple(_warnings(results)),
        summary_line(optional[BLAME_KEY]),
        tuple(Field(str(k), fmt_scalar(v)) for k, v in system.items() if v not in (None, "", [], {})),
        evidence_line(optional["evidence_pending"]),
    )


def evidence_line(pending: Mapping[str, Any] | None) -> str:
    """'3 evidence candidates await review (1 already decided) — python -m rag_eval evidence …';
    empty when none await review, as the terminal says nothing then."""
    if not pending or not pending["count"]:
        return ""
    count = int(pending["count"])
    noun = "candidate awaits" if count == 1 else "candidates await"
    return f"{count} evidence {noun} review ({pending['decided']} already decided) — {pending['command']}"


# the run block's optional keys (rag_eval/results.schema.json: $defs/run), read once
OPTIONAL_RUN_KEYS: tuple[str, ...] = (
    "corpus_hash",
    "golden_set",
    "golden_sha256",
    "workers",
    "merged_from",
    BLAME_KEY,
    "baseline_refused",
    "evidence_pending",
)


def run_optional(run: Mapping[str, Any]) -> dict[str, Any]:
    """The run block's optional keys, None when absent (the report's and the summary's read)."""
    return {k: run.get(k) for k in OPTIONAL_RUN_KEYS}


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


def _usage(usage: Mapping[str, Mapping[str, Any]]) -> tuple[UsageRow, ...]:
    out = []
    known = {k for k, _ in USAGE_FIELDS}
    for tier, row in sorted(usage.items(), key=lambda kv: tier_rank(kv[0])):
        if not any(v for v in row.values()):
            continue  # a tier that made no call: no row of zeros
        fields = [Field(label, _usage_value(key, row[key])) for key, label in USAGE_FIELDS if key in row]
        fields += [Field(k.replace("_", " "), _usage_value(k, v)) for k, v in sorted(row.items()) if k not in known]
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


def _warnings(results: RunResults) -> list[str]:
    run, cases, verdict = results.run, results.cases, results.verdict
    out = [str(w) for w in run["warnings"]]
    if verdict == "incomplete":
        out.append(
            f"the run was stopped early (-x, --maxfail or Ctrl-C): only the {len(cases)} cases computed so far are "
            "shown and the gates were not decided on the full set"
        )
    if verdict == "shard":
        out.append(
            "this is one shard of a sharded run: gates are evaluated over all shards by `python -m rag_eval merge`"
        )
    if not results.gates and verdict != "shard":
        out.append("no gates were evaluated (no thresholds file, or no tier with gates ran)")
    if cases and not results.items:
        out.append(
            "the results file holds no golden items (`items`): questions, gold evidence and key facts are not shown; "
            "re-run with a current rag_eval to include them"
        )
    if not cases:
        out.append("the results file holds no cases")
    for key, value in run["system"].items():
        if isinstance(value, list):  # run.system_summary lists a value that differed between workers
            out.append(f"mixed system under test: {key} = {fmt_scalar(value)} (the numbers mix several systems)")
    return out
