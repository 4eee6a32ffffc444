"""The cached client's spending budget: admit a call as a serial run would, settle it on the reply.

A call is sent while the spend so far is under ``budget_usd`` / ``budget_tokens`` (at or
over: :class:`BudgetReached`; cached answers are still served). The spend is this
process's own, or with a ``ledger_dir`` (one per run, shared by the xdist workers) summed
run-wide in :class:`Ledger`; then N workers may each start one call when the budget is
nearly used up. Threads of one process reserve a call's most possible cost before it is
sent (:func:`most_tokens`) and settle it on the reply: a call goes at once while spend plus
every reservation is under the budget, else it waits for the calls in flight and decides on
what they cost. So concurrency sends no call that a serial run, in the same order, would
not. A call's record counts as spent *before* its reservation is released.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the judge runs; only a shared ledger is refused
    fcntl = None  # type: ignore[assignment]

from rag_eval.llm.messages import ChatRequest, Usage
from rag_eval.llm.usage import CallRecord, cost_of

Reserved = tuple[float, int]  # (USD, tokens) held for one call in flight
NOTHING: Reserved = (0.0, 0)
LEDGER_FILE = "judge-ledger.json"


class BudgetReached(Exception):
    """No new call: the message says which budget and how much was spent."""


class Ledger:
    """Run-wide spending ``{"cost_usd", "tokens"}`` in a JSON file shared by processes:
    updates hold an exclusive ``flock`` on a side lock file and replace the file atomically
    (write temp + ``os.replace``), so readers never see half a file."""

    def __init__(self, ledger_dir: Path) -> None:
        if fcntl is None:  # pragma: no cover - Windows
            raise OSError("a shared judge ledger needs fcntl (POSIX); drop ledger_dir to budget per process")
        self.dir = Path(ledger_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / LEDGER_FILE
        self._lock_path = self.dir / (LEDGER_FILE + ".lock")

    def _read(self) -> tuple[float, int]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return 0.0, 0
        except (OSError, ValueError) as exc:
            raise OSError(f"{self.path}: unreadable judge ledger ({exc}); delete it to reset spending") from exc
        return float(data.get("cost_usd", 0.0)), int(data.get("tokens", 0))

    def _locked(self, add: Reserved | None) -> tuple[float, int]:
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            cost, tokens = self._read()
            if add is not None:
                cost, tokens = cost + add[0], tokens + add[1]
                tmp = self.path.with_name(f"{LEDGER_FILE}.{os.getpid()}.{threading.get_ident()}.tmp")
                tmp.write_text(json.dumps({"cost_usd": cost, "tokens": tokens}), encoding="utf-8")
                os.replace(tmp, self.path)
            return cost, tokens
        finally:
            os.close(fd)  # releases the flock

    def spent(self) -> tuple[float, int]:
        return self._locked(None)

    def add(self, cost: float, tokens: int) -> None:
        self._locked((cost, tokens))


class Budget:
    """Spending of one cached client (module doc); ``local()`` is this process's spend."""

    def __init__(
        self,
        usd: float | None,
        tokens: int | None,
        prices: Mapping[str, tuple[float, float]],
        ledger: Ledger | None,
        local: Callable[[], tuple[float, int]],
    ) -> None:
        self.usd, self.tokens, self.prices, self.ledger = usd, tokens, prices, ledger
        self._locals = [local]  # the spend of each client of this process that shares the budget
        self._cond = threading.Condition()
        self._in_flight = NOTHING
        self._longest = 0  # the most completion tokens one reply had (a request without max_tokens)

    @property
    def active(self) -> bool:
        return self.usd is not None or self.tokens is not None

    def counting(self, local: Callable[[], tuple[float, int]]) -> Budget:
        """This budget, counting ``local`` (another client's spend) too: clients that share it
        share one spend and one set of reservations (the LLM student beside the judge)."""
        self._locals.append(local)
        return self

    def spent(self) -> tuple[float, int]:
        """(USD, tokens) spent on real calls: run-wide with a ledger, else this process."""
        if self.ledger is not None:
            return self.ledger.spent()
        parts = [local() for local in self._locals]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)

    def reserve(self, req: ChatRequest, case_id: str) -> Reserved:
        """Admit ``req`` (module doc) and hold its most possible cost; raise :class:`BudgetReached`."""
        if not self.active:
            return NOTHING
        prompt, completion = most_tokens(req, self._longest)
        usd = cost_of(self.prices, req.model, Usage(prompt, completion))[0]
        with self._cond:
            while True:
                self._check(req, case_id)  # the settled spend: at or over the budget, no call
                if self._in_flight == NOTHING or not self._over(self._in_flight):
                    break
                self._cond.wait()
            self._in_flight = (self._in_flight[0] + usd, self._in_flight[1] + prompt + completion)
        return usd, prompt + completion

    def settle(self, rec: CallRecord | None, reserved: Reserved) -> None:
        """Count ``rec`` (already in the client's records) run-wide, then release ``reserved``."""
        if rec is not None and self.ledger is not None and (rec.cost or rec.prompt_tokens or rec.completion_tokens):
            self.ledger.add(rec.cost, rec.prompt_tokens + rec.completion_tokens)
        with self._cond:
            if rec is not None:
                self._longest = max(self._longest, rec.completion_tokens)
            if reserved != NOTHING:
                self._in_flight = (self._in_flight[0] - reserved[0], self._in_flight[1] - reserved[1])
                self._cond.notify_all()

    def _over(self, extra: Reserved) -> bool:
        cost, tokens = self.spent()
        return (self.usd is not None and cost + extra[0] >= self.usd) or (
            self.tokens is not None and tokens + extra[1] >= self.tokens
        )

    def _check(self, req: ChatRequest, case_id: str) -> None:
        cost, tokens = self.spent()
        scope = "run-wide" if self.ledger is not None else "in this process"
        what = (
            f"budget_usd ${self.usd:g} reached: ${cost:.6f} spent {scope}"
            if self.usd is not None and cost >= self.usd
            else f"budget_tokens {self.tokens} reached: {tokens} tokens spent {scope}"
            if self.tokens is not None and tokens >= self.tokens
            else ""
        )
        if what:
            raise BudgetReached(
                f"judge {what}; no new call for case {case_id!r} (model {req.model!r}); cached answers are still used"
            )


def most_tokens(req: ChatRequest, largest_completion: int = 0) -> tuple[int, int]:
    """(prompt, completion) tokens a request can cost at most: a byte-level tokenizer's
    token is at least one byte, so the prompt is at most its UTF-8 bytes plus 8 per message
    for the chat template; the completion at most ``max_tokens`` (without one, the longest
    reply so far: an estimate, said so in docs/judge.md)."""
    prompt = sum(len(m["content"].encode("utf-8")) + len(m["role"]) + 8 for m in req.messages)
    return prompt, req.max_tokens if req.max_tokens is not None else largest_completion
