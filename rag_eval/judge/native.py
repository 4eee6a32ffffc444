"""The native LLM judge: one chat call per case, one validated JSON verdict, six metrics.

Why one call and not one per metric: cost and consistency. The claims, key-fact,
relevance, correctness and citation verdicts all read the same question, context and
answer; asking once keeps a case at one request (cached on rerun), and the verdicts
cannot disagree about what the answer says.

Output modes, best first -- OpenAI-compatible servers differ in what they accept:

=============  ==========================================================  ==============
mode           request                                                      servers
=============  ==========================================================  ==============
json_schema    ``response_format={"type": "json_schema", strict schema}``   OpenAI, vLLM
json_object    ``response_format={"type": "json_object"}``                  most others
text           no ``response_format``; tolerant parser                      anything
=============  ==========================================================  ==============

A mode the server rejects (HTTP 400/422) is skipped and the next one tried; the first
mode that gets an answer is remembered by this :class:`NativeJudge` so later cases do
not probe again. A reply that does not parse or breaks the schema gets exactly one
*repair* call (the invalid reply and the errors are shown to the judge); a second
failure is a :class:`JudgeCallError` with ``kind="malformed"`` -- the case is an error,
never a pass and never dropped from a denominator (METRICS.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from rag_app.llm import ChatError, ChatRequest, ChatResponse
from rag_eval.judge.client import JudgeCallError
from rag_eval.judge.prompt import build_messages, repair_messages
from rag_eval.judge.schema import Judgement, metrics_from, parse_reply, response_schema, validate

MODES: tuple[str, ...] = ("json_schema", "json_object", "text")
SCHEMA_NAME = "rag_judge_verdict"
_REJECT_STATUS = frozenset({400, 422})
# A 400 that is about the prompt, not about response_format: falling back cannot help.
_NOT_FORMAT_HINTS = ("context length", "context_length", "maximum context", "too many tokens", "too long")


class ChatCompleter(Protocol):
    """What the judge needs from :class:`rag_eval.judge.client.CachedChatClient`."""

    def complete(self, req: ChatRequest, *, case_id: str = ..., tier: str = ..., trial: int = ...) -> ChatResponse: ...


@dataclass(frozen=True)
class JudgeInput:
    """One case as the judge sees it.

    ``context`` is ``(label, text)`` pairs in the order and numbering ``[1..n]`` the
    generator saw (after truncation), not the retriever's raw list: faithfulness is
    judged against what the generator could have used.
    """

    case_id: str
    question: str
    context: Sequence[tuple[str, str]]
    answer: str
    key_facts: Sequence[str] = ()
    reference: str = ""


@dataclass(frozen=True)
class JudgeVerdict:
    """Metrics (keys without the ``judge.`` prefix), report details, calls made, output mode."""

    metrics: dict[str, float]
    details: dict[str, Any] = field(default_factory=dict)
    calls: int = 1
    mode: str = "json_schema"


class NativeJudge:
    """Judges cases with one chat call each (two after a repair); see the module doc."""

    def __init__(self, client: ChatCompleter, model: str, *, temperature: float = 0.0, max_tokens: int = 1500) -> None:
        if not model:
            raise ValueError("NativeJudge: model is empty; set RAG_JUDGE_MODEL")
        self.client = client
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._mode_index = 0  # index into MODES of the best mode not (yet) rejected

    @property
    def mode(self) -> str:
        """The output mode the next case will try first."""
        return MODES[self._mode_index]

    def judge(self, item: JudgeInput, *, trial: int = 0) -> JudgeVerdict:
        """Judge one case; raises :class:`JudgeCallError` (``malformed`` after a failed repair)."""
        schema = response_schema(bool(item.reference))
        messages = build_messages(item, schema)
        resp, mode, rejected = self._first_call(item, messages, schema, trial)
        judgement, errors = self._read(resp, item)
        calls, repair_errors = 1, list(errors)
        if judgement is None:
            try:
                fixed = self._call(item, repair_messages(messages, resp.content, errors), mode, schema, trial)
            except _FormatRejected as exc:  # the mode worked a moment ago; report the 400 as it is
                raise exc.error from exc.cause
            calls = 2
            judgement, errors2 = self._read(fixed, item)
            if judgement is None:
                raise JudgeCallError(
                    f"judge reply for case {item.case_id!r} (model {self.model!r}, mode {mode}) was invalid "
                    f"twice; first: {'; '.join(errors)}; after the repair request: {'; '.join(errors2)}. "
                    "Fix: use a stronger judge model (RAG_JUDGE_MODEL) or raise max_tokens if replies are cut off",
                    kind="malformed", case_id=item.case_id, attempts=calls,
                )
        details = {**judgement.details(), "mode": mode, "calls": calls, "repair_errors": repair_errors,
                   "rejected_modes": rejected}
        return JudgeVerdict(metrics=metrics_from(judgement), details=details, calls=calls, mode=mode)

    # --- calls ----------------------------------------------------------------------
    def _first_call(
        self, item: JudgeInput, messages: list[dict[str, str]], schema: dict[str, Any], trial: int
    ) -> tuple[ChatResponse, str, list[str]]:
        """Try modes from the remembered one down; remember the first that is accepted."""
        rejected: list[str] = []
        for index in range(self._mode_index, len(MODES)):
            mode = MODES[index]
            try:
                resp = self._call(item, messages, mode, schema, trial)
            except _FormatRejected as exc:
                if index == len(MODES) - 1:
                    raise exc.error from exc.cause
                rejected.append(f"{mode}: {exc.error}")
                continue
            self._mode_index = index
            return resp, mode, rejected
        raise AssertionError("unreachable: the text mode either answers or raises")

    def _call(self, item: JudgeInput, messages: list[dict[str, str]], mode: str, schema: dict[str, Any],
              trial: int) -> ChatResponse:
        req = ChatRequest(
            model=self.model, messages=messages, temperature=self.temperature, max_tokens=self.max_tokens,
            response_format=_response_format(mode, schema),
        )
        try:
            return self.client.complete(req, case_id=item.case_id, tier="judge", trial=trial)
        except (ChatError, JudgeCallError) as exc:
            error = _as_judge_error(exc, item.case_id)
            if mode != "text" and _is_format_rejection(exc):
                raise _FormatRejected(error, exc) from exc
            if error is exc:
                raise
            raise error from exc

    def _read(self, resp: ChatResponse, item: JudgeInput) -> tuple[Judgement | None, list[str]]:
        try:
            data = parse_reply(resp.content)
        except ValueError as exc:
            errors = [str(exc)]
            if resp.finish_reason == "length":
                errors.append(f"the reply was cut off at max_tokens={self.max_tokens}; write shorter reasons")
            return None, errors
        return validate(data, key_facts=list(item.key_facts), n_context=len(item.context),
                        answer=item.answer, has_reference=bool(item.reference))


class _FormatRejected(Exception):
    """The server refused this response_format; carries the error to raise if no mode is left."""

    def __init__(self, error: JudgeCallError, cause: BaseException) -> None:
        super().__init__(str(error))
        self.error = error
        self.cause = cause


def _response_format(mode: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": schema}}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def _status_code(exc: BaseException) -> int | None:
    """The HTTP status of ``exc`` or of the ChatError it wraps."""
    for cur in (exc, exc.__cause__, getattr(exc, "error", None)):
        code = getattr(cur, "status_code", None)
        if isinstance(code, int):
            return code
    return None


def _is_format_rejection(exc: BaseException) -> bool:
    """A 400/422 "client" error that is not about prompt length: maybe response_format."""
    if getattr(exc, "kind", None) != "client":
        return False
    code = _status_code(exc)
    if code is not None and code not in _REJECT_STATUS:
        return False
    text = str(exc).lower()
    return not any(hint in text for hint in _NOT_FORMAT_HINTS)


def _as_judge_error(exc: ChatError | JudgeCallError, case_id: str) -> JudgeCallError:
    if isinstance(exc, JudgeCallError):
        return exc
    return JudgeCallError(f"judge call for case {case_id!r} failed: {exc}", kind=exc.kind, case_id=case_id,
                          attempts=exc.attempts)
