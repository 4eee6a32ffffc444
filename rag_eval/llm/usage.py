"""Accounting of model calls: one :class:`CallRecord` per call, summed per case and tier.

A record names the tier, case and trial that made the call, so a case's usage sums
exactly its own calls; it is JSON-serialisable so xdist workers can ship records to the
controller. Every attempt that reached the server counts, with its tokens (docs/judge.md,
"Cost", says how :func:`summarize` splits them: first attempts, repairs, retries, cached
calls, errors, calls without usage, unpriced calls).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from rag_eval.llm.messages import Usage

REJECTED = "rejected"  # the error of a call whose reply the caller's check refused


@dataclass(frozen=True)
class CallRecord:
    """One call: ``cached`` ones cost nothing in this run; ``priced`` False means the cost
    is unknown, not free; ``error`` is the failure kind of a call with no usable answer;
    ``attempts`` are the requests that reached the server."""

    case_id: str
    tier: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost: float
    cached: bool
    seconds: float
    priced: bool = True
    error: str = ""
    attempts: int = 0
    trial: int = 0
    usage_reported: bool = True
    repair: bool = False  # a follow-up after an unusable reply (module doc)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CallRecord:
        """Inverse of :meth:`to_dict`; unknown keys are ignored (newer writer), missing
        required keys raise ``ValueError`` naming them."""
        names = {f.name for f in fields(cls)}
        required = ("case_id", "tier", "model", "prompt_tokens", "completion_tokens", "cost", "cached", "seconds")
        missing = [k for k in required if k not in data]
        if missing:
            raise ValueError(f"CallRecord.from_dict: missing key(s) {missing} in {dict(data)!r}")
        return cls(**{k: v for k, v in data.items() if k in names})


def summarize(records: Iterable[CallRecord]) -> dict[str, Any]:
    """The totals of ``records`` (module doc), plus ``cost`` as an alias of ``cost_usd``."""
    out: dict[str, Any] = {
        "calls": 0,
        "first_attempts": 0,
        "repairs": 0,
        "retries": 0,
        "cached_calls": 0,
        "errors": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
        "unpriced_calls": 0,
        "calls_without_usage": 0,
    }
    for r in records:
        sent = 0 if r.cached else max(0, r.attempts)
        out["calls"] += 1 if r.cached else sent
        out["repairs" if r.repair else "first_attempts"] += int(sent > 0)
        out["retries"] += max(0, sent - 1)
        out["cached_calls"] += int(r.cached)
        out["errors"] += int(bool(r.error))
        out["prompt_tokens"] += r.prompt_tokens
        out["completion_tokens"] += r.completion_tokens
        out["cost_usd"] += r.cost
        out["unpriced_calls"] += int(not r.priced and not r.cached and sent > 0)
        out["calls_without_usage"] += int(not r.usage_reported and not r.cached and r.error in ("", REJECTED))
    out["cost"] = out["cost_usd"]
    return out


def totals_by_tier(records: Iterable[CallRecord]) -> dict[str, dict[str, Any]]:
    """``{tier: summarize(records of that tier)}``; also for records merged from workers."""
    by: dict[str, list[CallRecord]] = {}
    for r in records:
        by.setdefault(r.tier, []).append(r)
    return {tier: summarize(rs) for tier, rs in sorted(by.items())}


def cost_of(prices: Mapping[str, tuple[float, float]], model: str, usage: Usage) -> tuple[float, bool]:
    """(USD, priced) for ``usage`` of ``model``; prices are USD per 1M tokens."""
    price = prices.get(model)
    if price is None:
        return 0.0, False
    return (usage.prompt_tokens * price[0] + usage.completion_tokens * price[1]) / 1_000_000, True


def iter_records(dicts: Iterable[Mapping[str, Any]]) -> Iterator[CallRecord]:
    """Records back from ``to_dict`` payloads (e.g. collected from xdist workers)."""
    for d in dicts:
        yield CallRecord.from_dict(d)
