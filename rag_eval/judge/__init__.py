"""The judge: LLM-as-judge engines, prompts and verdict schema over any OpenAI-compatible
endpoint. The tier that runs it on cases is ``rag_eval.tiers.judge`` (its runner:
``rag_eval.tiers.judge.runner.JudgeRunner``).

``config`` reads where the judge lives, how long it may take and what it may spend; every
engine's calls go through ``rag_eval.llm`` (``llm.cached``: a disk cache, token/cost
accounting and a budget around :class:`rag_eval.llm.client.LLMClient`), so every judge
engine gets those for free and in one place.
"""

from rag_eval.metrics.claims import KEYS as CLAIM_METRICS

# Metric names the judge tier produces; kept here (no heavy imports) so that
# thresholds.toml can be validated without loading the judge clients. The claim-level
# ones (retriever / generator diagnosis) come from rag_eval.metrics.claims.
NATIVE_METRICS: tuple[str, ...] = (
    "faithfulness",
    "unknown_share",
    "coverage",
    "relevance",
    "factual_f1",
    "citation_faithfulness",
    *CLAIM_METRICS,
)
# deepeval's metrics the engine can run; the default leaves out GEval (it needs criteria).
DEEPEVAL_ENGINE_METRICS: tuple[str, ...] = (
    "faithfulness",
    "answer_relevancy",
    "contextual_precision",
    "contextual_recall",
    "geval",
)
DEEPEVAL_DEFAULT_METRICS: tuple[str, ...] = DEEPEVAL_ENGINE_METRICS[:4]
DEEPEVAL_METRICS: tuple[str, ...] = tuple(f"deepeval.{m}" for m in DEEPEVAL_ENGINE_METRICS)
JUDGE_METRICS: tuple[str, ...] = NATIVE_METRICS + DEEPEVAL_METRICS
