"""The dialogue tier inside an evaluation session: replays, students, the hint judge.

``EvalSession.run_case("dialogue", item)`` replays a dialogue item once against the
system's dialogue call; ``run_case("passk", item)`` replays it k times (``[passk.case]
k`` or ``--rag-passk-k``), each with a fresh student and no shared memory or cache entry.
The scripted student plays unless ``[dialogue.case] simulator = "llm"``: then the LLM
student words the replies through the ``RAG_SIMULATOR_*`` endpoint on the judge's client
(cache, budget, redaction; ``rag_eval.dialogue.llm``). ``hint_success`` is judged when
the judge is configured (``RAG_JUDGE_*``), on the same client as the judge tier.
"""

from __future__ import annotations

from rag_eval.dialogue.records import as_dialogue_turn

import time
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_eval.dialogue.llm import LLMHintJudge, simulator_config, simulator_missing, student_completion
from rag_eval.dialogue.metrics import HintVerdict, judge_hints
from rag_eval.dialogue.model import RETRIEVAL_CHECKS, SIMULATORS, DialogueItem
from rag_eval.dialogue.records import DIALOGUE_SIGNATURE
from rag_eval.dialogue.replay import replay
from rag_eval.dialogue.simulator import LLMStudent, ScriptedStudent, Simulator
from rag_eval.dialogue.transcript import Transcript
from rag_eval.dialogue.verdict import verdict
from rag_eval.errors import ConfigError
from rag_eval.evaluate.dialogue import DialogueCaseConfig, GoldCheck, dialogue_case, dialogue_passk_case
from rag_eval.results.case import CaseResult

if TYPE_CHECKING:
    from rag_eval.judge.client import CachedChatClient
    from rag_eval.session import EvalSession


class DialogueTier:
    def __init__(self, session: EvalSession) -> None:
        self.session = session

    # --- configuration ------------------------------------------------------------------
    def skip_reason(self) -> str | None:
        system = self.session.system
        converses = getattr(system, "converses", None)
        if converses is None:
            converses = callable(getattr(system, "dialogue", None))
        if converses:
            return None
        return (
            f"the system under test ({self.session.config.pipeline.where}) has no dialogue call "
            f"(`{DIALOGUE_SIGNATURE}`), so the dialogue tier does not apply"
        )

    @cached_property
    def config(self) -> DialogueCaseConfig:
        thresholds = self.session.config.thresholds
        options = dict(thresholds.case_rules("dialogue").options) if thresholds is not None else {}
        cfg = DialogueCaseConfig(
            clarification_limit=options.get("clarification_limit"),
            retrieval=str(options.get("retrieval", "chunk")),
            simulator=str(options.get("simulator", "scripted")),
        )
        if cfg.retrieval not in RETRIEVAL_CHECKS or cfg.simulator not in SIMULATORS:  # thresholds.py checks these
            raise ConfigError(f"[dialogue.case]: retrieval {cfg.retrieval!r} / simulator {cfg.simulator!r} not valid")
        return cfg

    @property
    def judged(self) -> bool:
        """Whether hint success is judged: the judge is configured."""
        judge = self.session.config.judge
        return judge is not None and judge.missing_reason() is None

    @cached_property
    def student_client(self) -> CachedChatClient:
        from rag_eval.judge.client import CachedChatClient
        from rag_eval.judge.config import JudgeConfig

        base = self.session.config.judge
        if base is None:
            root = self.session.config.project_root
            base = JudgeConfig.from_env(cache_dir=(root or Path(".")) / ".rag_cache" / "judge")
        cfg = simulator_config(base)
        missing = simulator_missing(cfg)
        if missing:
            raise ConfigError(f"[dialogue.case] simulator = \"llm\": {missing} (or set simulator = \"scripted\")")
        return CachedChatClient.from_config(cfg, ledger_dir=self.session.config.judge_ledger, redactor=self.session.redactor)

    def student(self, item: DialogueItem, tier: str, trial: int) -> tuple[Simulator, str]:
        if self.config.simulator == "scripted":
            return ScriptedStudent(), "scripted"
        client = self.student_client
        model = client.client.endpoint.model
        complete = student_completion(client, model, case_id=item.id, tier=tier, trial=trial)
        return LLMStudent(complete), f"llm:{model}"

    # --- cases --------------------------------------------------------------------------
    def run(self, tier: str, item: DialogueItem, t0: float) -> CaseResult:
        if tier not in ("dialogue", "passk"):
            raise ValueError(f"a dialogue item runs in the dialogue or passk tier, not {tier!r}")
        reason = self.skip_reason()
        if reason is not None:
            return CaseResult(id=item.id, tier=tier, outcome="skip", message=reason, tags=dict(item.tags),
                              split=item.split, duration=time.perf_counter() - t0)
        from rag_eval.session import _with_system

        case = self._one(item, t0) if tier == "dialogue" else self._replays(item, t0)
        return _with_system(case, self.session.system_info)

    def _check(self, item: DialogueItem) -> GoldCheck | None:
        return None if self.config.retrieval == "off" else GoldCheck(self.session.gold_space, item, self.config.retrieval)

    def _hint(self, item: DialogueItem, transcript: Transcript, tier: str, trial: int) -> HintVerdict | None:
        if not self.judged:
            return None
        runner = self.session.judge_runner
        judge = LLMHintJudge(runner.client, runner.config.model, forbidden=item.forbidden, case_id=item.id,
                             tier=tier, trial=trial)
        return judge_hints([transcript], judge).get(item.id)

    def _replay(self, item: DialogueItem, tier: str, trial: int) -> tuple[Transcript, str]:
        simulator, name = self.student(item, tier, trial)
        system = _Redacting(self.session.system, self.session.redactor)
        return replay(system, item, simulator, limit=self.config.limit_for(item)), name

    def _one(self, item: DialogueItem, t0: float) -> CaseResult:
        transcript, name = self._replay(item, "dialogue", 0)
        hint = self._hint(item, transcript, "dialogue", 0)
        return dialogue_case(
            item, transcript, limit=self.config.limit_for(item), check=self._check(item), hint=hint,
            judged=self.judged, simulator=name, duration=time.perf_counter() - t0, extra=self._usage(item.id, "dialogue"),
        )

    def _replays(self, item: DialogueItem, t0: float) -> CaseResult:
        _, k, _ = self.session.passk_settings()
        transcripts: list[Transcript] = []
        verdicts = []
        name = "scripted"
        for trial in range(k):  # independent: a fresh student, its own cache entries (trial index)
            transcript, name = self._replay(item, "passk", trial)
            check = self._check(item)
            if check is not None and transcript.finished:
                check.mark(transcript)
            hint = self._hint(item, transcript, "passk", trial)
            transcripts.append(transcript)
            verdicts.append(verdict(transcript, retrieval_check=check, hint=hint if self.judged else None))
        extra = {"simulator": name, "clarification_limit": self.config.limit_for(item), **self._usage(item.id, "passk")}
        return dialogue_passk_case(item, transcripts, verdicts, k=k, duration=time.perf_counter() - t0, extra=extra)

    def _usage(self, case_id: str, tier: str) -> dict[str, Any]:
        """The model calls of this case (LLM student and hint judge), summed, under ``usage``."""
        parts = []
        if self.config.simulator == "llm" and "student_client" in self.__dict__:
            parts.append(self.student_client.usage_for(case_id, tier))
        if self.judged and "judge_runner" in self.session.__dict__:
            parts.append(self.session.judge_runner.usage_for(case_id, tier))
        total: dict[str, Any] = {}
        for part in parts:
            for key, value in part.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    total[key] = total.get(key, 0) + value
        return {"usage": total} if total.get("calls") else {}


class _Redacting:
    """The system as the replay sees it: every turn it returns, with the run's secrets
    removed (the session boundary, as for retrievals and answers)."""

    def __init__(self, system: Any, redactor: Any) -> None:
        self._system = system
        self._redactor = redactor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._system, name)

    def dialogue(self, turns: Any, context: Any) -> Any:
        from rag_eval.session import redacted

        return redacted(as_dialogue_turn(self._system.dialogue(turns, context)), self._redactor)
