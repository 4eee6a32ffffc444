"""The dialogue tier: replay each dialogue item against the system's dialogue call
(clarification, retrieval, hints, interception).

``run`` replays a dialogue item once; the passk tier asks :meth:`DialogueTier.replays`
for k independent replays, each with a fresh student and no shared memory or cache
entry. The scripted student plays unless ``[dialogue.case] simulator = "llm"``: then the
LLM student words the replies through the ``RAG_SIMULATOR_*`` endpoint on the judge's
client (cache, budget, redaction; ``rag_eval.dialogue.llm``). ``hint_success`` is
judged when the judge is configured (``RAG_JUDGE_*``), on the same client as the judge
tier. The cases themselves: ``rag_eval.tiers.dialogue.case``.

The judge tier's budget rule holds: a spending budget that refuses the case's *first*
model call (the student's or the hint judge's; nothing sent or served from the cache for
this case yet) makes the case ``skip`` ("not run: ..."); a budget reached after the case's
first call is an ``error`` (the replay did not finish, or the hint has no verdict).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rag_eval.core.case import CaseResult
from rag_eval.core.dialogue import DIALOGUE_SIGNATURE, DialogueTurn, as_dialogue_turn
from rag_eval.core.errors import ConfigError
from rag_eval.dialogue import pooled as dialogue_rates
from rag_eval.dialogue.llm import LLMHintJudge, simulator_config, simulator_missing, student_completion
from rag_eval.dialogue.metrics import HintVerdict, judge_hints
from rag_eval.dialogue.model import RETRIEVAL_CHECKS, SIMULATORS, DialogueItem
from rag_eval.dialogue.replay import replay
from rag_eval.dialogue.simulator import LLMStudent, ScriptedStudent, Simulator
from rag_eval.dialogue.transcript import Transcript
from rag_eval.dialogue.verdict import verdict
from rag_eval.tiers.base import (
    RATE_KEYS,
    CaseOption,
    Contribution,
    Item,
    JudgedValues,
    LabelView,
    Tier,
    case_options,
    package_fragment,
    skipped,
)
from rag_eval.tiers.dialogue import aggregate, labels
from rag_eval.tiers.dialogue.case import DialogueCaseConfig, GoldCheck, dialogue_case, dialogue_passk_case
from rag_eval.tiers.dialogue.details import DialogueDetails
from rag_eval.tiers.judge.tier import JUDGE

if TYPE_CHECKING:
    from rag_eval.llm.cached import CachedChatClient
    from rag_eval.session import EvalConfig, EvalSession

STUDENT_CLIENT = "dialogue.student_client"  # the session memo of the LLM student's client
A = TypeVar("A")
R = TypeVar("R")


@dataclass
class Refusals:
    """The spending budget's refusals of one case's model calls (student and hint judge)."""

    messages: list[str] = field(default_factory=list)

    def watch(self, call: Callable[[A], R]) -> Callable[[A], R]:
        """``call``, noting each budget refusal it raises (and raising it on)."""

        def watched(arg: A) -> R:
            try:
                return call(arg)
            except Exception as exc:
                if getattr(exc, "kind", None) == "budget":  # JudgeCallError (rag_eval.llm.cached)
                    self.messages.append(str(exc))
                raise

        return watched


def _dialogue(item: Item) -> DialogueItem:
    if not isinstance(item, DialogueItem):
        raise TypeError(f"{item.id}: the dialogue tier runs on dialogue items, not on {type(item).__name__}")
    return item


class DialogueTier(Tier):
    name = "dialogue"
    details_type = DialogueDetails
    judged = True  # dialogue.hint_success
    marker = "dialogue tier: replay each dialogue item (clarification, retrieval, hints, interception)"
    items = (DialogueItem,)
    case_options = (
        CaseOption("retrieval", "name", RETRIEVAL_CHECKS, "chunk"),
        CaseOption("simulator", "name", SIMULATORS, "scripted"),
        CaseOption("clarification_limit", "int", (), None),
    )
    valid_names = (
        f"{', '.join(dialogue_rates.FIXED_RATES)}, clarification_failure_<limit>, past_<limit>_rounds "
        f"(e.g. clarification_failure_3), or {', '.join(RATE_KEYS)}"
    )
    # A dialogue case passes when its verdict finds no failing step; its rates are pooled over dialogues.
    floor_refusal = (
        "a dialogue case fails at its earliest failing step (clarification, retrieval, "
        "hint, interception); dialogue rates are gated over the run in [dialogue], not per case"
    )

    def schema_fragment(self) -> Mapping[str, Any]:
        return package_fragment(str(Path(__file__).parent))

    def metric_ok(self, key: str) -> bool:
        """The dialogue rates (clarification_failure_<L> / past_<L>_rounds for any limit L) and the case rates."""
        return key in RATE_KEYS or dialogue_rates.is_rate(key)

    # --- the run: rates pooled over the dialogues -------------------------------------------
    def lower_is_better(self, key: str) -> bool:
        return super().lower_is_better(key) or dialogue_rates.lower_is_better(key)

    def pools(self, key: str) -> bool:
        return dialogue_rates.is_rate(key)

    def pooled_names(self, cases: Sequence[CaseResult]) -> list[str]:
        return aggregate.rate_names(cases)

    def contribution(self, case: CaseResult, key: str) -> Contribution | None:
        return aggregate.contribution(case, key)

    def results_block(self, cases: Sequence[CaseResult]) -> dict[str, Any]:
        """``dialogue_rates``: every pooled rate of the run by its ``dialogue.<rate>`` key."""
        return aggregate.rates_block(cases, self.name)

    # --- human labels: the hint judge's verdict -------------------------------------------------
    label_questions = labels.QUESTIONS

    def judged_values(self, case: CaseResult) -> JudgedValues | None:
        return labels.judged_values(case)

    def label_stratum(self, case: CaseResult) -> str:
        return "hint success" if labels.hint_success(case) else "no hint success"

    def label_view(self, case: CaseResult, item: Mapping[str, Any]) -> LabelView:
        return labels.label_view(case, item)

    def options(self, config: EvalConfig) -> DialogueCaseConfig:
        given = case_options(config, self.name)
        cfg = DialogueCaseConfig(
            clarification_limit=given.get("clarification_limit"),
            retrieval=str(given.get("retrieval", "chunk")),
            simulator=str(given.get("simulator", "scripted")),
        )
        if cfg.retrieval not in RETRIEVAL_CHECKS or cfg.simulator not in SIMULATORS:  # thresholds.py checks these
            raise ConfigError(f"[dialogue.case]: retrieval {cfg.retrieval!r} / simulator {cfg.simulator!r} not valid")
        return cfg

    def ahead(self, session: EvalSession) -> bool:
        """An LLM student or the hint judge makes model calls per case."""
        return session.tier_options(self).simulator == "llm" or JUDGE.ready(session) or super().ahead(session)

    def skip_reason(self, session: EvalSession, item: Item) -> str | None:
        """Why the tier cannot run (the system has no dialogue call), or None: one reason for every case."""
        system = session.system
        converses = getattr(system, "converses", None)
        if converses is None:
            converses = callable(getattr(system, "dialogue", None))
        if converses:
            return None
        return (
            f"the system under test ({session.config.pipeline.where}) has no dialogue call "
            f"(`{DIALOGUE_SIGNATURE}`), so the dialogue tier does not apply"
        )

    # --- cases --------------------------------------------------------------------------
    def run(self, session: EvalSession, item: Item) -> CaseResult:
        t0 = time.perf_counter()
        dialogue = _dialogue(item)
        reason = self.skip_reason(session, dialogue)
        if reason is not None:
            return skipped(dialogue, self.name, reason, t0)
        cfg: DialogueCaseConfig = session.tier_options(self)
        refused = Refusals()
        transcript, name = self._replay(session, dialogue, self.name, 0, refused)
        hint = self._hint(session, dialogue, transcript, self.name, 0, refused)
        case = dialogue_case(
            dialogue,
            transcript,
            limit=cfg.limit_for(dialogue),
            check=self._check(session, dialogue),
            hint=hint,
            judged=JUDGE.ready(session),
            simulator=name,
            duration=time.perf_counter() - t0,
            usage=self._usage(session, dialogue.id, self.name).get("usage"),
        )
        return session.with_system(self._not_run(session, case, refused))

    def replays(self, session: EvalSession, item: DialogueItem, tier: str, k: int) -> CaseResult:
        """k independent replays (the passk tier's case of a dialogue item)."""
        t0 = time.perf_counter()
        reason = self.skip_reason(session, item)
        if reason is not None:
            return skipped(item, tier, reason, t0)
        cfg: DialogueCaseConfig = session.tier_options(self)
        judged = JUDGE.ready(session)
        transcripts: list[Transcript] = []
        verdicts = []
        name = "scripted"
        refused = Refusals()
        for trial in range(k):  # independent: a fresh student, its own cache entries (trial index)
            transcript, name = self._replay(session, item, tier, trial, refused)
            check = self._check(session, item)
            if check is not None and transcript.finished:
                check.mark(transcript)
            hint = self._hint(session, item, transcript, tier, trial, refused)
            transcripts.append(transcript)
            verdicts.append(verdict(transcript, retrieval_check=check, hint=hint if judged else None))
        case = dialogue_passk_case(
            item,
            transcripts,
            verdicts,
            k=k,
            duration=time.perf_counter() - t0,
            simulator=name,
            clarification_limit=cfg.limit_for(item),
            usage=self._usage(session, item.id, tier).get("usage"),
        )
        return session.with_system(self._not_run(session, case, refused))

    # --- parts --------------------------------------------------------------------------
    def student_client(self, session: EvalSession) -> CachedChatClient:
        return session.memo(STUDENT_CLIENT, lambda: _student_client(session))

    def _student(
        self, session: EvalSession, item: DialogueItem, tier: str, trial: int, refused: Refusals
    ) -> tuple[Simulator, str]:
        if session.tier_options(self).simulator == "scripted":
            return ScriptedStudent(), "scripted"
        client = self.student_client(session)
        model = client.client.endpoint.model
        complete = student_completion(client, model, case_id=item.id, tier=tier, trial=trial)
        return LLMStudent(refused.watch(complete)), f"llm:{model}"

    def _not_run(self, session: EvalSession, case: CaseResult, refused: Refusals) -> CaseResult:
        """``case`` as ``skip`` when the budget refused its first model call (module doc), else as it is."""
        if not refused.messages:
            return case
        clients = [session.memoized(STUDENT_CLIENT), JUDGE.runner(session).client if JUDGE.ready(session) else None]
        if any(r.case_id == case.id and r.tier == case.tier for c in clients if c is not None for r in c.records):
            return case  # a call of this case was sent or served: the budget stopped it mid-case, an error
        message = "not run: " + session.redactor.text(refused.messages[0])
        return replace(case, outcome="skip", failed_stage=None, message=message, metrics={})

    def _check(self, session: EvalSession, item: DialogueItem) -> GoldCheck | None:
        level = session.tier_options(self).retrieval
        return None if level == "off" else GoldCheck(session.gold_space, item, level)

    def _hint(
        self, session: EvalSession, item: DialogueItem, transcript: Transcript, tier: str, trial: int, refused: Refusals
    ) -> HintVerdict | None:
        if not JUDGE.ready(session):
            return None
        runner = JUDGE.runner(session)
        judge = LLMHintJudge(
            runner.client, runner.config.model, forbidden=item.forbidden, case_id=item.id, tier=tier, trial=trial
        )
        return judge_hints([transcript], refused.watch(judge)).get(item.id)

    def _replay(
        self, session: EvalSession, item: DialogueItem, tier: str, trial: int, refused: Refusals
    ) -> tuple[Transcript, str]:
        simulator, name = self._student(session, item, tier, trial, refused)
        system = _Redacting(session.system, session.redacted, session.calling)
        return replay(system, item, simulator, limit=session.tier_options(self).limit_for(item)), name

    def _usage(self, session: EvalSession, case_id: str, tier: str) -> dict[str, Any]:
        """The model calls of this case (LLM student and hint judge), summed, under ``usage``."""
        parts = []
        student = session.memoized(STUDENT_CLIENT)
        if session.tier_options(self).simulator == "llm" and student is not None:
            parts.append(student.usage_for(case_id, tier))
        judge = JUDGE.usage(session, case_id, tier) if JUDGE.ready(session) else None
        if judge is not None:
            parts.append(judge)
        total: dict[str, Any] = {}
        for part in parts:
            for key, value in part.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    total[key] = total.get(key, 0) + value
        return {"usage": total} if total.get("calls") else {}


def _student_client(session: EvalSession) -> CachedChatClient:
    from rag_eval.judge.config import JudgeConfig
    from rag_eval.llm.cached import CachedChatClient  # the openai client only when an LLM student plays

    base = JUDGE.endpoint(session.config)
    if base is None:
        root = session.config.project_root
        base = JudgeConfig.from_env(cache_dir=(root or Path(".")) / ".rag_cache" / "judge")
    cfg = simulator_config(base, concurrency=session.config.concurrency)
    missing = simulator_missing(cfg)
    if missing:
        raise ConfigError(f'[dialogue.case] simulator = "llm": {missing} (or set simulator = "scripted")')
    client = CachedChatClient.from_config(cfg, ledger_dir=JUDGE.ledger(session.config), redactor=session.redactor)
    if JUDGE.ready(session):  # one budget for the student and the judge: one spend, one set of calls in flight
        judge = JUDGE.runner(session).client
        client.share_budget(judge)
        client.share_endpoint(judge)  # on the judge's server: one rate limiter, one breaker
    return client


class _Redacting:
    """The system as the replay sees it: every turn it returns, with the run's secrets
    removed (the session boundary, as for retrievals and answers)."""

    def __init__(
        self, system: Any, clean: Callable[[DialogueTurn], DialogueTurn], calling: Callable[[Callable[[], Any]], Any]
    ) -> None:
        self._system = system
        self._clean = clean
        self._calling = calling  # the session's system slots (EvalSession.calling)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._system, name)

    def dialogue(self, turns: Any, context: Any) -> DialogueTurn:
        return self._clean(as_dialogue_turn(self._calling(lambda: self._system.dialogue(turns, context))))


DIALOGUE = DialogueTier()
