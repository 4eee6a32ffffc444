"""What the framework adapters cost per case beside calling the framework directly.

Question: a Haystack pipeline, a LangChain ensemble and a LlamaIndex fusion retriever,
gated with no wrapper code (rag_eval/adapters/haystack.py, langchain.py, llamaindex.py),
how much time per call does the adapter add to the framework's own call? Target: at
most 5 % above calling the framework directly.

The systems are the tests' (tests/rag_eval/_framework_systems.py: 16 chunks, offline:
Haystack's InMemoryBM25Retriever x2 and a DocumentJoiner; LangChain's BM25Retriever
beside an InMemoryVectorStore with DeterministicFakeEmbedding in an EnsembleRetriever;
LlamaIndex's QueryFusionRetriever over two vector retrievers with MockEmbedding), the
questions the tests' golden set's six, cycled to ``--n`` calls.

Per framework and repeat, in one process, interleaved question by question in ABBA order
(direct, adapter, plain, plain, adapter, direct: so drifts in the shared machine's load
and warm caches hit every side alike), the garbage collector off while timing and run
between repeats:

* direct   the framework's own call with every stage's list, what a hand-written
           adapter calls: ``Pipeline.run(data, include_outputs_from=every component)``,
           the ensemble's retrievers' ``invoke`` and its ``weighted_reciprocal_rank``,
           the fusion's retrievers' ``retrieve`` and its ``retrieve``;
* plain    the framework's call for the final list only (``Pipeline.run(data)``,
           ``EnsembleRetriever.invoke``, ``QueryFusionRetriever.retrieve``);
* adapter  ``PythonSystem.retrieve`` of the factory: every stage's list, converted to the
           contract's records (what the gate calls).

Reported: ms per call (median over repeats) and adapter / direct, adapter / plain; and
the adapter's own work apart from the framework's (``retrieval(lists)``: the stages'
documents to the contract's items, timed over lists the framework made once), against
the direct call: the framework's own calls vary from one to the next by more than the
adapter adds, so the end-to-end ratio alone is noise on a shared machine.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, md_table, run_header, write_results  # noqa: E402

from rag_eval.adapters.python import PythonSystem  # noqa: E402
from tests.rag_eval import _framework_systems as fwsys  # noqa: E402
from tests.rag_eval._framework_gate import GOLDEN  # noqa: E402

FACTORIES = "tests.rag_eval._framework_systems"


def haystack() -> tuple[Callable[[str], Any], Callable[[str], Any]]:
    pipeline = fwsys.haystack_pipeline()
    names = set(pipeline.graph.nodes)

    def data(q: str) -> dict[str, Any]:
        return {"bm25": {"query": q}, "bm25_wide": {"query": q}}

    return (lambda q: pipeline.run(data(q), include_outputs_from=names)), (lambda q: pipeline.run(data(q)))


def langchain() -> tuple[Callable[[str], Any], Callable[[str], Any]]:
    ensemble = fwsys.langchain_ensemble()

    def direct(q: str) -> Any:
        return ensemble.weighted_reciprocal_rank([r.invoke(q) for r in ensemble.retrievers])

    return direct, ensemble.invoke


def llamaindex() -> tuple[Callable[[str], Any], Callable[[str], Any]]:
    fusion = fwsys.llamaindex_fusion()

    def direct(q: str) -> Any:
        return [r.retrieve(q) for r in fusion._retrievers], fusion.retrieve(q)

    return direct, fusion.retrieve


SYSTEMS: dict[str, tuple[Callable[[], tuple[Callable[[str], Any], Callable[[str], Any]]], str]] = {
    "haystack": (haystack, "haystack_pipeline"),
    "langchain": (langchain, "langchain_ensemble"),
    "llamaindex": (llamaindex, "llamaindex_fusion"),
}


def measure(name: str, n: int, repeats: int) -> dict[str, Any]:
    build, factory = SYSTEMS[name]
    direct, plain = build()
    sut = PythonSystem(f"{FACTORIES}:{factory}", {}, "bench")
    questions = [GOLDEN[i % len(GOLDEN)]["question"] for i in range(n)]
    for q in questions[: len(GOLDEN)]:  # warm every path
        direct(q), plain(q), sut.retrieve(q)
    rows: dict[str, list[float]] = {"direct": [], "plain": [], "adapter": []}
    calls = {"direct": direct, "plain": plain, "adapter": sut.retrieve}
    # ABBA per question (direct, adapter, adapter, direct; plain twice beside them): no side
    # always runs first or last; the collector off while timing, run between repeats, so
    # a collection pause (the frameworks copy every document) lands on neither side
    order = ("direct", "adapter", "plain", "plain", "adapter", "direct")
    for _ in range(repeats):
        total = dict.fromkeys(rows, 0.0)
        gc.collect()
        gc.disable()
        try:
            for q in questions:
                for label in order:
                    t0 = time.perf_counter()
                    calls[label](q)
                    total[label] += time.perf_counter() - t0
        finally:
            gc.enable()
        for label in rows:
            rows[label].append(total[label] / (2 * n) * 1000)
    own = _conversion_ms(sut.obj, questions, repeats)
    ms = {label: statistics.median(v) for label, v in rows.items()}
    ratios = [a / d for a, d in zip(rows["adapter"], rows["direct"])]
    return {
        "n_calls": n,
        "repeats": repeats,
        "ms_per_call": {k: round(v, 4) for k, v in ms.items()},
        "ms_per_call_each_repeat": {k: [round(x, 4) for x in v] for k, v in rows.items()},
        "adapter_over_direct": round(statistics.median(ratios), 4),
        "adapter_over_direct_each_repeat": [round(r, 4) for r in ratios],
        "adapter_over_plain": round(ms["adapter"] / ms["plain"], 4),
        "adapter_own_ms_per_call": round(own, 4),
        "adapter_own_over_direct": round(own / ms["direct"], 5),
    }


def _conversion_ms(adapter: Any, questions: list[str], repeats: int) -> float:
    """The adapter's own work on a call, apart from the framework's: ``retrieval(lists)``
    (every stage's documents to the contract's items) over lists the framework made once
    per question; the median over repeats of its mean, ms. This is what the end-to-end
    comparison's noise (the framework's own calls vary by more) cannot show."""
    made = {q: adapter.lists(q) for q in dict.fromkeys(questions)}
    per_call = [made[q] for q in questions]
    means = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        for lists in per_call:
            adapter.retrieval(lists, None)
        means.append((time.perf_counter() - t0) / len(questions) * 1000)
    return statistics.median(means)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="calls per side per repeat (default 300)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="30 calls, 2 repeats (a smoke run)")
    args = parser.parse_args(argv)
    n, repeats = (30, 2) if args.quick else (args.n, args.repeats)
    payload = run_header("framework_adapters", argv if argv is not None else sys.argv[1:])
    payload["results"] = {name: measure(name, n, repeats) for name in SYSTEMS}
    payload["load_average_at_end"] = load_average()
    rows = [
        [
            name,
            f"{r['ms_per_call']['plain']:.3f}",
            f"{r['ms_per_call']['direct']:.3f}",
            f"{r['ms_per_call']['adapter']:.3f}",
            f"{(r['adapter_over_direct'] - 1) * 100:+.1f} %",
            f"{(r['adapter_over_plain'] - 1) * 100:+.1f} %",
            f"{r['adapter_own_ms_per_call']:.4f}",
            f"{r['adapter_own_over_direct'] * 100:.2f} %",
        ]
        for name, r in payload["results"].items()
    ]
    headers = ["framework", "plain ms", "direct ms", "adapter ms", "adapter vs direct", "adapter vs plain"]
    print(md_table([*headers, "adapter's own ms", "own / direct"], rows))
    if not args.quick:
        print(f"written: {write_results('framework_adapters', payload)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
