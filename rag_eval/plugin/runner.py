"""What an eval test calls (the ``rag_eval`` fixture): :class:`CaseRunner`."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

import pytest

from rag_eval import tiers
from rag_eval.core.case import USER_PROPERTY, CaseResult
from rag_eval.core.errors import ConfigError
from rag_eval.dialogue.model import DialogueItem
from rag_eval.golden.model import GoldenItem
from rag_eval.plugin.prefetch import Prefetcher, case_key
from rag_eval.session import EvalSession
from rag_eval.util.escape import terminal

# A worker's count of the slow tiers' cases it collected (xdist: the controller collected
# nothing), carried on those cases' reports for the controller's progress line.
PROGRESS_TOTAL_PROPERTY = "rag_eval_judge_total"
# The case property's value when the case went to the controller in this process
# (a serial run): the controller takes the case from its inbox, not from JSON.
HANDED_OVER = "rag_eval: handed to the controller in process"


class CaseRunner:
    """What an eval test calls: runs the tier, records the result, reports the outcome.

    In ``gate`` mode a failing or erroring case is shown as xfail with its diagnosis:
    it is recorded and counted, and the gates (pass_rate, error_rate, metric gates)
    decide whether the build fails, so a known weak case does not block every pull
    request. In ``strict`` mode it fails its test.
    """

    def __init__(
        self,
        session: EvalSession,
        node: pytest.Item,
        strict: bool,
        progress_total: int = 0,  # noqa: D107
        ahead: Prefetcher | None = None,
        inbox: dict[str, list[CaseResult]] | None = None,
    ) -> None:
        self.session = session
        self.node = node
        self.strict = strict
        self.progress_total = progress_total
        self.ahead = ahead  # cases started ahead of their tests (rag_eval.plugin.ahead)
        # The controller's inbox when it runs in this process (serial, no --json-report):
        # the case goes there as it is. Else (an xdist worker) it rides on the report as
        # one JSON string. A case equals its JSON round trip (every value a JSON
        # primitive: rag_eval.core.case), so both ways give the controller the same case.
        self.inbox = inbox

    def run(self, tier: str, item: GoldenItem | DialogueItem) -> CaseResult:
        started = self.ahead.take(case_key(self.node.nodeid, tier, item.id)) if self.ahead is not None else None
        result = started if started is not None else self.session.run_case(tier, item)
        if self.inbox is not None:
            self.inbox.setdefault(self.node.nodeid, []).append(result)
            self.node.user_properties.append((USER_PROPERTY, HANDED_OVER))
        else:  # one JSON string: xdist's serialiser is far slower on nested dicts
            self.node.user_properties.append((USER_PROPERTY, json.dumps(result.to_dict(), ensure_ascii=False)))
        if tiers.get(tier).progress and self.progress_total:  # for the controller's progress under xdist
            self.node.user_properties.append((PROGRESS_TOTAL_PROPERTY, self.progress_total))
        if result.outcome == "pass":
            return result
        if result.outcome == "skip":  # e.g. the judge budget was reached: not run, not a pass
            pytest.skip(self.session.redactor.text(terminal(f"{item.id}: {result.message}")))
        if result.outcome == "error":
            text = terminal(f"[error] {item.id}: {result.message}")
        else:
            stage = f" (failed stage: {result.failed_stage})" if result.failed_stage else ""
            asked = item.opening if isinstance(item, DialogueItem) else item.question
            label = "opening" if isinstance(item, DialogueItem) else "question"
            text = terminal(f"{item.id}{stage}: {result.message}\n  {label}: {asked}")
        text = self.session.redactor.text(text)
        if not self.strict:
            # A dynamic xfail mark plus a traceback-free failure reports as xfailed;
            # pytest.xfail() builds (and discards) a full traceback: ~40 ms per case.
            self.node.add_marker(pytest.mark.xfail(reason=text, strict=False))
        pytest.fail(text, pytrace=False)

    def case(self, tier: str, item: GoldenItem | DialogueItem) -> CaseResult:
        """Run one case of a registered tier: skipped when the tier does not apply to this
        system (no case, no gate, like an unset judge), else recorded and reported."""
        try:
            reason = self.session.skip_reason(tier, item)
        except ConfigError as exc:  # e.g. passk's n < k: a configuration error, not a number
            raise pytest.UsageError(str(exc)) from None
        if reason is not None:
            pytest.skip(self.session.redactor.text(terminal(reason)))
        return self.run(tier, item)

    def __getattr__(self, tier: str) -> Callable[[GoldenItem | DialogueItem], CaseResult]:
        """``rag_eval.retrieval(item)``, ``rag_eval.judge(item)``, ...: :meth:`case` of that tier."""
        if tier.startswith("_") or tier not in tiers.names():
            raise AttributeError(f"{type(self).__name__} has no attribute {tier!r} (tiers: {', '.join(tiers.names())})")
        return functools.partial(self.case, tier)
