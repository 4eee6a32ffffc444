"""The judge: LLM-as-judge engines, prompts and verdict schema over any OpenAI-compatible
endpoint. The tier that runs it on cases is ``rag_eval.tiers.judge`` (its runner:
``rag_eval.tiers.judge.runner.JudgeRunner``).

``config`` reads where the judge lives, how long it may take and what it may spend; every
engine's calls go through ``rag_eval.llm`` (``llm.cached``: a disk cache, token/cost
accounting and a budget around :class:`rag_eval.llm.client.LLMClient`), so every judge
engine gets those for free and in one place.

The native judge's metrics are declared once each (``registry``: the verdict field, its
prompt part and schema, the metric's value and direction; the built-in ones: ``fields``).
"""

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


def judge_metric_names() -> tuple[str, ...]:
    """The metric names the judge tier produces: the registered native ones
    (``rag_eval.judge.registry``, the built-in and any registered since) and deepeval's.
    Light (no judge client is imported), so thresholds.toml is checked without one."""
    from rag_eval.judge.registry import metric_names

    return metric_names() + DEEPEVAL_METRICS
