"""The judge tier: LLM-as-judge over any OpenAI-compatible endpoint.

``config`` reads where the judge lives and what it may spend; ``client`` wraps the
project's :class:`rag_app.llm.ChatClient` with a disk cache, token/cost accounting and
a budget, so every judge engine gets those for free and in one place.
"""

# Metric names the judge tier produces; kept here (no heavy imports) so that
# thresholds.toml can be validated without loading the judge clients.
NATIVE_METRICS: tuple[str, ...] = (
    "faithfulness",
    "unknown_share",
    "coverage",
    "relevance",
    "factual_f1",
    "citation_faithfulness",
)
DEEPEVAL_METRICS: tuple[str, ...] = (
    "deepeval.faithfulness",
    "deepeval.answer_relevancy",
    "deepeval.contextual_precision",
    "deepeval.contextual_recall",
    "deepeval.geval",
)
JUDGE_METRICS: tuple[str, ...] = NATIVE_METRICS + DEEPEVAL_METRICS
