"""deepeval as a second judge engine, running on the project's own judge client.

Why wrap deepeval instead of letting it call OpenAI itself: the judge tier promises one
place for caching, retries, timeouts, token/cost accounting and the budget
(:class:`~rag_eval.llm.cached.CachedChatClient`). deepeval's metrics only need "an LLM
that turns a prompt into text or into a pydantic object", so a small
``DeepEvalBaseLLM`` subclass routes every deepeval prompt through that client. A rerun
of an unchanged suite is then served from the cache, and deepeval's calls show up in the
same per-case token ledger as the native judge's.

What deepeval must not do here (checked against deepeval 4.3.1):

* talk to the network: telemetry (PostHog) is switched off with
  ``DEEPEVAL_TELEMETRY_OPT_OUT``; the PyPI version check only runs when
  ``DEEPEVAL_UPDATE_WARNING_OPT_IN=1``; tracing spans around ``generate`` are dropped
  because no trace is active; no OpenAI client is ever built because every metric gets
  our model object (so no ``OPENAI_API_KEY`` is needed);
* read a ``.env`` file from the working directory (``DEEPEVAL_DISABLE_DOTENV``);
* write into the repository: with telemetry on, ``import deepeval`` creates
  ``.deepeval/`` in the current directory; ``DEEPEVAL_CACHE_FOLDER`` (the hidden dir's
  location) is pointed at a temp dir as a second guard. We call ``metric.measure``, never
  ``assert_test``/``evaluate``, which are what write test-run files;
* route decisions to a hosted "System One" model: ``eval_mode="llm"`` is passed to every
  metric that takes it, whatever ``DEEPEVAL_EVAL_MODE`` says.

Metrics run with ``async_mode=False`` so their calls go through the client one after
another, in a deterministic order (stable cache keys, readable request logs). Errors are
never turned into a score: any failure inside a metric raises :class:`JudgeCallError`.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rag_eval.core.errors import ConfigError, unknown_name
from rag_eval.judge import DEEPEVAL_DEFAULT_METRICS, DEEPEVAL_ENGINE_METRICS
from rag_eval.judge.native import JudgeInput, JudgeVerdict
from rag_eval.llm.cached import DEFAULT_TIER, CachedChatClient, JudgeCallError
from rag_eval.llm.messages import ChatError, ChatRequest

METRICS: tuple[str, ...] = DEEPEVAL_ENGINE_METRICS
DEFAULT_METRICS: tuple[str, ...] = DEEPEVAL_DEFAULT_METRICS
# Metrics that compare against a reference answer: deepeval requires expected_output.
_NEEDS_REFERENCE = frozenset({"contextual_precision", "contextual_recall"})
# Metrics that read the retrieval context: deepeval rejects an empty one.
_NEEDS_CONTEXT = frozenset({"faithfulness", "contextual_precision", "contextual_recall", "geval"})
# Per-metric intermediate results worth keeping in the verdict details for debugging.
_DETAIL_ATTRS: tuple[str, ...] = ("truths", "claims", "statements", "verdicts", "evaluation_steps")
JUDGE_TIER = DEFAULT_TIER


def prepare_environment() -> None:
    """Set deepeval's switches before its first import (module doc says why each one).

    ``setdefault`` so an operator can still override a value deliberately.
    """
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
    os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")
    os.environ.setdefault("DEEPEVAL_UPDATE_WARNING_OPT_IN", "0")
    os.environ.setdefault("DEEPEVAL_CACHE_FOLDER", str(Path(tempfile.gettempdir()) / "rag_eval-deepeval"))
    os.environ.setdefault("DEEPEVAL_EVAL_MODE", "llm")


@functools.lru_cache(maxsize=1)
def _deepeval() -> dict[str, Any]:
    """Import deepeval once, lazily: it costs ~3-4 s, so only a run that uses it pays."""
    prepare_environment()
    try:
        import deepeval  # noqa: F401 - imported for its version and side-effect-free setup
        from deepeval.metrics import (
            AnswerRelevancyMetric,
            ContextualPrecisionMetric,
            ContextualRecallMetric,
            FaithfulnessMetric,
            GEval,
        )
        from deepeval.models import DeepEvalBaseLLM
        from deepeval.test_case import LLMTestCase, SingleTurnParams
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError(
            f"the deepeval judge engine needs the 'deepeval' package ({exc}); "
            "install it (pip install deepeval) or use the native judge engine"
        ) from exc

    class ClientLLM(DeepEvalBaseLLM):
        """deepeval's model interface on top of :class:`CachedChatClient`.

        ``case_id``/``trial``/``tier`` are set per case so the cache key carries the trial
        index and the accounting lands on the right case of the right tier.
        """

        def __init__(self, client: CachedChatClient, model: str, max_tokens: int | None = None) -> None:
            self.client, self.model_name, self.case_id, self.trial, self.tier = client, model, "", 0, JUDGE_TIER
            self.max_tokens = max_tokens
            super().__init__(model)

        def load_model(self, *args: Any, **kwargs: Any) -> ClientLLM:
            return self

        def get_model_name(self, *args: Any, **kwargs: Any) -> str:
            return self.model_name

        def generate(self, prompt: str, schema: type[Any] | None = None, **kwargs: Any) -> Any:
            # Never let TypeError/AttributeError escape: deepeval treats a TypeError from
            # generate(schema=...) as "this model takes no schema" and silently calls again.
            try:
                return self._generate(prompt, schema)
            except (JudgeCallError, ChatError):
                raise
            except (TypeError, AttributeError) as exc:
                raise RuntimeError(f"deepeval adapter bug: {exc!r}") from exc

        async def a_generate(self, prompt: str, schema: type[Any] | None = None, **kwargs: Any) -> Any:
            # Metrics run with async_mode=False; this exists because the base class demands it.
            return self.generate(prompt, schema, **kwargs)

        def _generate(self, prompt: str, schema: type[Any] | None) -> Any:
            if not isinstance(prompt, str):
                raise JudgeCallError(
                    f"deepeval passed a {type(prompt).__name__} prompt (multimodal?) for case "
                    f"{self.case_id!r}; only text prompts are supported",
                    kind="malformed",
                    case_id=self.case_id,
                )
            # max_tokens bounds a reply: without it a local server generates up to its context size
            req = ChatRequest(
                self.model_name, [{"role": "user", "content": prompt}], temperature=0.0, max_tokens=self.max_tokens
            )
            resp = self.client.complete(req, case_id=self.case_id, tier=self.tier, trial=self.trial, accept=_has_text)
            if schema is None:
                return resp.content
            return parse_into(schema, resp.content, case_id=self.case_id)

    return {
        "version": getattr(deepeval, "__version__", "?"),
        "ClientLLM": ClientLLM,
        "LLMTestCase": LLMTestCase,
        "Params": SingleTurnParams,
        "faithfulness": FaithfulnessMetric,
        "answer_relevancy": AnswerRelevancyMetric,
        "contextual_precision": ContextualPrecisionMetric,
        "contextual_recall": ContextualRecallMetric,
        "geval": GEval,
    }


def _has_text(content: str) -> str | None:
    """deepeval parses the text itself; an empty reply is never worth caching."""
    return None if content.strip() else "the reply is empty"


def first_json_object(text: str) -> Any:
    """The first decodable ``{...}`` in ``text`` (ignores code fences and chatter around it)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            return decoder.raw_decode(text, start)[0]
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
    raise ValueError("no JSON object found")


def parse_into(schema: type[Any], content: str, *, case_id: str = "") -> Any:
    """Validate the model's text against deepeval's pydantic ``schema``.

    Strict on purpose: deepeval's own loose path drops out-of-vocabulary verdicts
    silently, which would change a score without anyone noticing.
    """
    name = getattr(schema, "__name__", str(schema))
    try:
        return schema.model_validate(first_json_object(content))
    except Exception as exc:  # noqa: BLE001 - ValueError or pydantic ValidationError
        snippet = content[:200].replace("\n", " ")
        raise JudgeCallError(
            f"judge reply for case {case_id!r} does not fit deepeval schema {name}: {exc}; "
            f"reply starts {snippet!r}. Use a stronger judge model (RAG_JUDGE_MODEL) or the native engine",
            kind="malformed",
            case_id=case_id,
        ) from exc


def _cause_kind(exc: BaseException) -> str:
    """The judge error kind behind ``exc`` (deepeval may wrap our error), else "malformed"."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, (JudgeCallError, ChatError)):
            return str(cur.kind)
        cur = cur.__cause__ or cur.__context__
    return "malformed"


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


class DeepEvalEngine:
    """Scores a case with deepeval metrics; metric keys are ``deepeval.<name>``."""

    def __init__(
        self,
        client: CachedChatClient,
        model: str,
        metrics: Sequence[str] = DEFAULT_METRICS,
        geval_criteria: str | None = None,
        max_tokens: int | None = None,
    ) -> None:
        for name in metrics:
            if name not in METRICS:
                raise unknown_name("deepeval metric", name, METRICS, "DeepEvalEngine(metrics=...)")
        if not metrics:
            raise ConfigError(f"DeepEvalEngine(metrics=()) is empty; choose from {', '.join(METRICS)}")
        if "geval" in metrics and not (geval_criteria or "").strip():
            raise ConfigError(
                "DeepEvalEngine: metric 'geval' needs geval_criteria (the rubric text); "
                "pass geval_criteria=... or drop 'geval' from metrics"
            )
        if not model:
            raise ConfigError("DeepEvalEngine(model='') is empty; set RAG_JUDGE_MODEL")
        self.client = client
        self.model = model
        self.metrics: tuple[str, ...] = tuple(dict.fromkeys(metrics))
        self.geval_criteria = geval_criteria
        self.max_tokens = max_tokens
        self._de = _deepeval()  # import now, so a missing package fails at setup, not mid-run

    @property
    def deepeval_version(self) -> str:
        return str(self._de["version"])

    def _metric(self, name: str, llm: Any) -> Any:
        cls = self._de[name]
        if name == "geval":
            p = self._de["Params"]
            return cls(
                name="rag_eval rubric",
                criteria=self.geval_criteria,
                model=llm,
                async_mode=False,
                evaluation_params=[p.INPUT, p.ACTUAL_OUTPUT, p.RETRIEVAL_CONTEXT],
            )
        return cls(model=llm, async_mode=False, include_reason=True, eval_mode="llm")

    @staticmethod
    def _check_counts(key: str, metric: Any, n_contexts: int, case_id: str) -> None:
        """One verdict per judged item, or the score's denominator silently changed.

        deepeval does not check this itself: a judge that answers 2 verdicts for 3 claims
        would get a score over 2 claims.
        """
        verdicts = getattr(metric, "verdicts", None)
        if verdicts is None:
            return
        items = {
            "deepeval.faithfulness": getattr(metric, "claims", None),
            "deepeval.answer_relevancy": getattr(metric, "statements", None),
            "deepeval.contextual_precision": [None] * n_contexts,
        }.get(key)
        if items is not None and len(verdicts) != len(items):
            raise JudgeCallError(
                f"deepeval metric {key} for case {case_id!r}: judge gave {len(verdicts)} verdicts for "
                f"{len(items)} items; a score over a different count would be wrong. Use a stronger judge "
                "model (RAG_JUDGE_MODEL) or the native engine",
                kind="malformed",
                case_id=case_id,
            )

    def _calls_for(self, case_id: str, since: int, tier: str = JUDGE_TIER) -> list[Any]:
        return [r for r in self.client.records[since:] if r.case_id == case_id and r.tier == tier]

    def judge(
        self, item: JudgeInput, *, trial: int = 0, expected_output: str = "", tier: str = JUDGE_TIER
    ) -> JudgeVerdict:
        """Run every selected metric on ``item``; raise :class:`JudgeCallError` on any failure."""
        reference = expected_output or item.reference
        contexts = [text for _label, text in item.context]
        test_case = self._de["LLMTestCase"](
            input=item.question,
            actual_output=item.answer,
            retrieval_context=contexts or None,
            expected_output=reference or None,
        )
        llm = self._de["ClientLLM"](self.client, self.model, self.max_tokens)
        llm.case_id, llm.trial, llm.tier = item.case_id, trial, tier
        start = len(self.client.records)
        scores: dict[str, float] = {}
        details: dict[str, Any] = {
            "engine": "deepeval",
            "deepeval_version": self.deepeval_version,
            "skipped": {},
            "metrics": {},
        }
        for name in self.metrics:
            key = f"deepeval.{name}"
            if name in _NEEDS_REFERENCE and not reference:
                details["skipped"][key] = "no reference answer (expected_output) for this case"
                continue
            if name in _NEEDS_CONTEXT and not contexts:
                details["skipped"][key] = "empty retrieval context"
                continue
            before = len(self.client.records)
            metric = self._metric(name, llm)
            try:
                score = metric.measure(test_case, _show_indicator=False)
            except Exception as exc:  # noqa: BLE001 - every failure becomes a judge error
                raise JudgeCallError(
                    f"deepeval metric {key} failed for case {item.case_id!r} (trial {trial}): "
                    f"{type(exc).__name__}: {exc}",
                    kind=_cause_kind(exc),
                    case_id=item.case_id,
                ) from exc
            self._check_counts(key, metric, len(contexts), item.case_id)
            value = metric.score if metric.score is not None else score
            if value is None:
                raise JudgeCallError(
                    f"deepeval metric {key} returned no score for case {item.case_id!r}",
                    kind="malformed",
                    case_id=item.case_id,
                )
            scores[key] = float(value)
            info: dict[str, Any] = {
                "score": float(value),
                "reason": metric.reason,
                "calls": len(self._calls_for(item.case_id, before, tier)),
            }
            for attr in _DETAIL_ATTRS:
                if getattr(metric, attr, None) is not None:
                    info[attr] = _jsonable(getattr(metric, attr))
            details["metrics"][key] = info
        records = self._calls_for(item.case_id, start, tier)
        details["cached_calls"] = sum(1 for r in records if r.cached)
        details["prompt_tokens"] = sum(r.prompt_tokens for r in records)
        details["completion_tokens"] = sum(r.completion_tokens for r in records)
        return JudgeVerdict(metrics=scores, details=details, calls=len(records), mode="text")
