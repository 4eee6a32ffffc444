"""What the judge tier costs: LLM calls and tokens per case, parallel speed-up, rerun calls.

Questions (all against the scripted OpenAI-compatible server on 127.0.0.1 with a fixed
latency per call, default 50 ms, so numbers depend on the judge code and not on a
provider):

1. Calls and tokens per case for faithfulness + relevance + coverage: the native
   engine (``NativeJudge``: one call per case returns every metric) against the deepeval
   engine (``DeepEvalEngine`` with faithfulness + answer_relevancy + contextual_recall;
   contextual_recall is deepeval's coverage-like metric and needs the reference answer)
   over the same ``--n`` cases (default 50).
1b. The claim-level diagnosis (issue 24): calls and tokens per case of the native judge
   with the diagnosis against the same judge without it (the pre-diagnosis prompt and
   schema, read from git history by ``bench/_prediagnosis.py``), over the same cases, with
   one claim per answer clause (``bench/_claims_cost.py``), in ``json_schema`` mode and in
   ``json_object`` mode (the server refuses json_schema once per run, as llama-cpp-python
   does; the mode where a verdict at the 20-claim cap gets a second call); second calls
   counted. Then the demo pipeline's judge tier over every answerable demo item in
   ``json_object`` mode: judge calls per case (target <= 1.2). RAGChecker's calls on the
   same cases from its documented formula, 2 + (k + 1) * (ceil(a / 5) + ceil(r / 5)) with
   a = answer claims, r = reference claims (here the key facts), k = context chunks;
   with ``--ragchecker-python`` RAGChecker itself runs on the same cases against the
   same server (``bench/_ragchecker_run.py`` in its own venv) and its calls are counted.
2. Wall time of ``--parallel-n`` (200) native-judge cases with 1 worker vs ``--workers``
   (4) threads, each thread with its own ``CachedChatClient`` (and ``LLMClient``) on a
   fresh cache directory shared by the run's workers -- the ``pytest -n 4`` set-up.
   Speed-up = wall(1) / wall(4); at a fixed per-call latency the ideal is ~4.
3. Calls made by an unchanged rerun over the same cache directories (target 0).

Cases: items of ``golden_sets/demo_maths/golden.jsonl`` that have evidence and key facts,
in file order. Context = 3 chunks of the demo corpus: the paragraph holding the first
evidence quote and the two paragraphs after it in the same document (the chunk order a
generator would see, the supporting chunk first). Answer = the reference answer's first
two sentences with ``[1]`` / ``[2]`` markers (ASCII brackets already in the text, e.g. the
interval ``[0,2]``, become full-width so they are not read as citations). Key facts and reference from the item.
Case ``i`` of the parallel part is item ``i mod n_items`` with trial ``i // n_items``, so
no two cases share a cache key.

Token accounting: the scripted replies report usage from
``tests.support.deepeval_replies.estimate_tokens`` (1 token per CJK character, 1 per 4
other characters; the JSON schema sent as ``response_format`` counts as prompt), the
same estimator for both engines, so tokens follow prompt size. Completion tokens follow
the scripted replies, which are shorter than a real judge's reasons would be; prompt
tokens are the number to compare.

    python bench/judge_cost.py [--n 50] [--parallel-n 200] [--workers 4] [--latency 0.05]

Writes ``bench/results/judge_cost.json`` and prints a Markdown table. Caches live in a
temporary directory deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _claims_cost import (  # noqa: E402
    ClaimsResponder,
    answer_claims,
    demo_judge_calls,
    print_diagnosis_table,
    ragchecker_calls,
    ragchecker_run,
)  # noqa: E402
from _common import REPO, load_average, md_table, ratio, read_jsonl, run_header, write_results  # noqa: E402
from _prediagnosis import prediagnosis_judge  # noqa: E402

from rag_eval.judge.deepeval_engine import DeepEvalEngine, _deepeval  # noqa: E402
from rag_eval.judge.native import JudgeInput, JudgeVerdict, NativeJudge  # noqa: E402
from rag_eval.llm.cached import CachedChatClient  # noqa: E402
from rag_eval.llm.client import LLMClient  # noqa: E402
from rag_eval.llm.endpoint import Endpoint  # noqa: E402
from rag_eval.llm.policy import CallPolicy  # noqa: E402
from tests.support.deepeval_replies import Responder, estimate_tokens, request_prompt_tokens  # noqa: E402
from tests.support.judge_replies import native_verdict  # noqa: E402
from tests.support.openai_server import Reply, ScriptedOpenAIServer  # noqa: E402

GOLDEN = REPO / "golden_sets" / "demo_maths" / "golden.jsonl"
CORPUS = REPO / "golden_sets" / "demo_maths" / "corpus"
MODEL = "judge-m"
DEEPEVAL_METRICS: tuple[str, ...] = ("faithfulness", "answer_relevancy", "contextual_recall")
_SENTENCE_END = re.compile(r"(?<=[。；！？])")


# --- cases -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Paragraph:
    doc_id: str
    label: str  # "book §section" as a generator's source list would name it
    text: str


def corpus_paragraphs(corpus: Path) -> dict[str, list[Paragraph]]:
    """Body paragraphs per document (headings, page markers and front matter skipped)."""
    out: dict[str, list[Paragraph]] = {}
    for path in sorted(corpus.glob("*.md")):
        raw = path.read_text(encoding="utf-8")
        book = re.search(r"^book:\s*(.+)$", raw, re.M)
        body = raw.split("---", 2)[2] if raw.startswith("---") else raw
        section, paras = "", []
        for block in re.split(r"\n\s*\n", body):
            block = block.strip()
            if block.startswith("#"):
                section = block.lstrip("#").strip()
                continue
            if not block or block.startswith("<!--"):
                continue
            block = re.sub(r"^<!--.*?-->\s*", "", block).strip()
            if block:
                paras.append(Paragraph(path.stem, f"{book.group(1) if book else path.stem} {section}", block))
        out[path.stem] = paras
    return out


def build_items(golden: Path, corpus: Path) -> list[JudgeInput]:
    """One synthetic judged case per golden item that has evidence, key facts and a reference."""
    paras = corpus_paragraphs(corpus)
    items: list[JudgeInput] = []
    for row in read_jsonl(golden):
        if not (row.get("evidence") and row.get("key_facts") and row.get("reference_answer")):
            continue
        ev = row["evidence"][0]
        ev = ev["any_of"][0] if "any_of" in ev else ev  # alternatives: the first one is enough here
        doc = paras.get(ev["doc_id"], [])
        hit = next((i for i, p in enumerate(doc) if ev["quote"] in p.text), None)
        if hit is None:  # quote not verbatim (whitespace): fall back to the best character overlap
            hit = max(range(len(doc)), key=lambda i: len(set(ev["quote"]) & set(doc[i].text)), default=None)
        if hit is None:
            raise SystemExit(f"{golden}: item {row['id']!r} cites doc_id {ev['doc_id']!r} not in {corpus}")
        chosen = doc[hit : hit + 3] if hit + 3 <= len(doc) else doc[max(0, len(doc) - 3) :]
        # An interval like "[0,2]" reads as citation markers [0], [2] to the judge's marker
        # parser (rag_eval.judge.schema.answer_markers), so the answer writes it with
        # full-width brackets; the reference keeps the original text.
        text = re.sub(r"\[([^\[\]]*)\]", r"［\1］", row["reference_answer"])
        sentences = [s.strip() for s in _SENTENCE_END.split(text) if s.strip()][:2]
        answer = "".join(f"{s.rstrip('。；')} [{i}]。" for i, s in enumerate(sentences, 1))
        items.append(
            JudgeInput(
                case_id=row["id"],
                question=row["question"],
                context=tuple((p.label, p.text) for p in chosen),
                answer=answer,
                key_facts=tuple(k["fact"] for k in row["key_facts"]),
                reference=row["reference_answer"],
            )
        )
    return items


# --- scripted judge replies with realistic usage ----------------------------------------
def native_reply(req: dict[str, Any]) -> Reply:
    """The native judge's scripted verdict, with usage estimated from the request's size."""
    content = json.dumps(native_verdict(req), ensure_ascii=False)
    return Reply(content, prompt_tokens=request_prompt_tokens(req), completion_tokens=estimate_tokens(content))


def make_client(srv: ScriptedOpenAIServer, cache_dir: Path) -> CachedChatClient:
    chat = LLMClient(
        Endpoint("RAG_JUDGE", base_url=srv.base_url, model=MODEL, api_key="sk-bench-judge"),
        CallPolicy(timeout=30.0, max_retries=0),
    )
    return CachedChatClient(chat, cache_dir)


# --- measurements -----------------------------------------------------------------------
def run_engine(
    srv: ScriptedOpenAIServer,
    cache_dir: Path,
    items: Sequence[JudgeInput],
    make_engine: Callable[[CachedChatClient], Any],
) -> dict[str, Any]:
    """Judge every item once; calls counted at the server, tokens from the client's records."""
    before = srv.calls("chat")
    start = time.perf_counter()
    with make_client(srv, cache_dir) as client:
        engine = make_engine(client)
        verdicts: list[JudgeVerdict] = [engine.judge(item) for item in items]
        records = list(client.records)
    wall = time.perf_counter() - start
    server_calls = srv.calls("chat") - before
    n = len(items)
    fresh = [r for r in records if not r.cached]
    prompt = sum(r.prompt_tokens for r in fresh)
    completion = sum(r.completion_tokens for r in fresh)
    per_case_calls = sorted({v.calls for v in verdicts})
    claims = [len(v.details.get("claims", [])) for v in verdicts]
    return {
        "cases": n,
        "server_calls": server_calls,
        "client_calls": len(records),
        "cached_calls": len(records) - len(fresh),
        "calls_per_case": server_calls / n,
        "engine_calls_per_case": len(records) / n,
        "calls_per_case_values": per_case_calls,
        "prompt_tokens_per_case": prompt / n,
        "completion_tokens_per_case": completion / n,
        "total_tokens_per_case": (prompt + completion) / n,
        "wall_s": wall,
        "metrics": sorted({k for v in verdicts for k in v.metrics}),
        "modes": sorted({v.mode for v in verdicts}),
        "judge_calls_per_case": sum(v.calls for v in verdicts) / n,  # the verdicts' own count: no refused probe
        "claims_per_case": sum(claims) / n,
        "claims_max": max(claims, default=0),
        "claims_second_calls": sum(1 for v in verdicts if "claims_second_call" in v.details),
    }


def diagnosis_comparison(srv: ScriptedOpenAIServer, root: Path, items: Sequence[JudgeInput]) -> dict[str, Any]:
    """The native judge with the claim-level diagnosis vs without it (the pre-diagnosis
    prompt and schema from git history), in json_schema mode and in json_object mode (the
    server refuses json_schema, as llama-cpp-python does); RAGChecker's calls on the same
    cases from its call formula. Every run on a fresh cache."""
    runs: dict[str, Any] = {}
    for name, reject in (("json_schema", False), ("json_object", True)):
        srv.set_default("chat", ClaimsResponder(reject_json_schema=reject))
        runs[f"with_{name}"] = run_engine(srv, root / f"diag-{name}", items, lambda c: NativeJudge(c, MODEL))
        srv.set_default("chat", ClaimsResponder(reject_json_schema=reject))
        with prediagnosis_judge():
            runs[f"without_{name}"] = run_engine(srv, root / f"prediag-{name}", items, lambda c: NativeJudge(c, MODEL))
    claims = [len(answer_claims(it.answer)) for it in items]
    rc = [ragchecker_calls(a, len(it.key_facts), len(it.context)) for a, it in zip(claims, items)]
    runs["ragchecker_formula"] = {
        "source": "formula",
        "calls_per_case": sum(rc) / len(rc),
        "calls_per_case_values": sorted(set(rc)),
        "answer_claims_per_case": sum(claims) / len(claims),
        "reference_claims_per_case": sum(len(it.key_facts) for it in items) / len(items),
        "k_per_case": sum(len(it.context) for it in items) / len(items),
        "formula": "2 + (k + 1) * (ceil(answer_claims / 5) + ceil(reference_claims / 5)); reference claims = key facts",
    }
    srv.set_default("chat", ClaimsResponder(reject_json_schema=True))
    runs["demo_json_object"] = demo_judge_calls(srv.base_url, MODEL, root / "demo")
    return runs


def parallel_native(
    srv: ScriptedOpenAIServer, cache_dir: Path, items: Sequence[JudgeInput], n_cases: int, workers: int
) -> dict[str, Any]:
    """``n_cases`` native-judge cases split round-robin over ``workers`` threads, each with its own client."""
    cases = [(items[i % len(items)], i // len(items)) for i in range(n_cases)]
    shards = [cases[w::workers] for w in range(workers)]

    def work(shard: list[tuple[JudgeInput, int]]) -> int:
        with make_client(srv, cache_dir) as client:
            judge = NativeJudge(client, MODEL)
            for item, trial in shard:
                judge.judge(item, trial=trial)
            return sum(1 for r in client.records if not r.cached)

    before = srv.calls("chat")
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        fresh_calls = sum(pool.map(work, shards))
    wall = time.perf_counter() - start
    return {
        "workers": workers,
        "cases": n_cases,
        "wall_s": wall,
        "server_calls": srv.calls("chat") - before,
        "client_fresh_calls": fresh_calls,
        "ms_per_case": wall / n_cases * 1e3,
    }


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=50, help="cases for the native-vs-deepeval comparison")
    ap.add_argument("--parallel-n", type=int, default=200, help="native-judge cases for the 1-vs-N worker timing")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--latency", type=float, default=0.05, help="seconds the scripted server waits per call")
    ap.add_argument(
        "--ragchecker-python",
        default="",
        help="Python of a venv with ragchecker installed: run RAGChecker on the same cases too",
    )
    args = ap.parse_args(argv)

    items_all = build_items(GOLDEN, CORPUS)
    if len(items_all) < args.n:
        raise SystemExit(f"{GOLDEN}: only {len(items_all)} usable items, --n {args.n} asked; lower --n")
    items = items_all[: args.n]
    header = run_header("judge_cost", argv)
    ctx_chars = [sum(len(t) for _, t in it.context) for it in items]

    with tempfile.TemporaryDirectory(prefix="judge_cost-") as tmp, ScriptedOpenAIServer(latency=args.latency) as srv:
        root = Path(tmp)
        # 1. native vs deepeval over the same cases (separate caches: nothing is shared).
        srv.set_default("chat", native_reply)
        native = run_engine(srv, root / "native", items, lambda c: NativeJudge(c, MODEL))
        srv.set_default("chat", Responder(realistic_tokens=True, tag_reasons=True))
        t0 = time.perf_counter()
        _deepeval()  # one-off import (~seconds): kept out of the per-case wall time, reported apart
        deepeval_import_s = time.perf_counter() - t0
        deepeval = run_engine(
            srv, root / "deepeval", items, lambda c: DeepEvalEngine(c, MODEL, metrics=DEEPEVAL_METRICS)
        )

        # 1b. with vs without the claim-level diagnosis (issue 24), and RAGChecker's formula.
        diagnosis = diagnosis_comparison(srv, root, items)
        if args.ragchecker_python:
            diagnosis["ragchecker_run"] = ragchecker_run(srv, root, items, args.ragchecker_python, MODEL)

        # 2. 1 worker vs N workers, each run on its own fresh cache directory.
        srv.set_default("chat", native_reply)
        serial = parallel_native(srv, root / "par1", items_all, args.parallel_n, 1)
        parallel = parallel_native(srv, root / f"par{args.workers}", items_all, args.parallel_n, args.workers)

        # 3. unchanged reruns over the same cache directories.
        rerun_native = run_engine(srv, root / "native", items, lambda c: NativeJudge(c, MODEL))
        srv.set_default("chat", Responder(realistic_tokens=True, tag_reasons=True))
        rerun_deepeval = run_engine(
            srv, root / "deepeval", items, lambda c: DeepEvalEngine(c, MODEL, metrics=DEEPEVAL_METRICS)
        )
        srv.set_default("chat", native_reply)
        rerun_parallel = parallel_native(srv, root / f"par{args.workers}", items_all, args.parallel_n, args.workers)

    for name, run in (("native", native), ("deepeval", deepeval)):
        if run["cached_calls"]:  # byte-identical requests from different cases, answered once
            print(
                f"note: {name}: {run['cached_calls']} of {run['client_calls']} requests on the first run were "
                "identical to an earlier case's (e.g. deepeval's truths prompt holds only the context, and some "
                "cases share a context) and came from the cache",
                file=sys.stderr,
            )
    speedup = ratio(serial["wall_s"], parallel["wall_s"])
    result = {
        **header,
        "load_average_at_end": load_average(),
        "params": {
            "n": args.n,
            "parallel_n": args.parallel_n,
            "workers": args.workers,
            "latency_s": args.latency,
            "deepeval_metrics": list(DEEPEVAL_METRICS),
            "token_estimate": "1 per CJK char + 1 per 4 other chars (tests.support.deepeval_replies)",
            "context_chars_mean": sum(ctx_chars) / len(ctx_chars),
        },
        "deepeval_import_s": deepeval_import_s,
        "native": native,
        "deepeval": deepeval,
        "deepeval_over_native": {
            "calls": ratio(deepeval["calls_per_case"], native["calls_per_case"]),
            "prompt_tokens": ratio(deepeval["prompt_tokens_per_case"], native["prompt_tokens_per_case"]),
            "total_tokens": ratio(deepeval["total_tokens_per_case"], native["total_tokens_per_case"]),
        },
        "diagnosis": diagnosis,
        "diagnosis_over_prediagnosis": {
            mode: {
                k: ratio(diagnosis[f"with_{mode}"][k], diagnosis[f"without_{mode}"][k])
                for k in (
                    "calls_per_case",
                    "prompt_tokens_per_case",
                    "completion_tokens_per_case",
                    "total_tokens_per_case",
                )
            }
            for mode in ("json_schema", "json_object")
        },
        "parallel": {
            "serial": serial,
            "parallel": parallel,
            "speedup": speedup,
            "ideal_speedup": float(args.workers),
            "efficiency": speedup / args.workers,
        },
        "rerun": {
            "native_server_calls": rerun_native["server_calls"],
            "deepeval_server_calls": rerun_deepeval["server_calls"],
            "parallel_server_calls": rerun_parallel["server_calls"],
            "native_wall_s": rerun_native["wall_s"],
            "deepeval_wall_s": rerun_deepeval["wall_s"],
            "parallel_wall_s": rerun_parallel["wall_s"],
        },
    }
    path = write_results("judge_cost", result)

    rows: list[list[Any]] = [
        [
            "native (1 call: faithfulness+relevance+coverage+F1+citations)",
            native["engine_calls_per_case"],
            native["calls_per_case"],
            native["prompt_tokens_per_case"],
            native["completion_tokens_per_case"],
            native["total_tokens_per_case"],
            native["wall_s"] / args.n * 1e3,
            rerun_native["server_calls"],
        ],
        [
            f"deepeval ({' + '.join(DEEPEVAL_METRICS)})",
            deepeval["engine_calls_per_case"],
            deepeval["calls_per_case"],
            deepeval["prompt_tokens_per_case"],
            deepeval["completion_tokens_per_case"],
            deepeval["total_tokens_per_case"],
            deepeval["wall_s"] / args.n * 1e3,
            rerun_deepeval["server_calls"],
        ],
        [
            "deepeval / native",
            ratio(deepeval["engine_calls_per_case"], native["engine_calls_per_case"]),
            result["deepeval_over_native"]["calls"],
            result["deepeval_over_native"]["prompt_tokens"],
            ratio(deepeval["completion_tokens_per_case"], native["completion_tokens_per_case"]),
            result["deepeval_over_native"]["total_tokens"],
            ratio(deepeval["wall_s"], native["wall_s"]),
            "–",
        ],
    ]
    print(f"\n### Judge cost per case ({args.n} demo_maths cases, scripted server, {args.latency * 1e3:.0f} ms/call)\n")
    print(
        md_table(
            [
                "engine",
                "requests/case",
                "LLM calls/case",
                "prompt tok/case",
                "completion tok/case",
                "total tok/case",
                "wall ms/case",
                "rerun calls",
            ],
            rows,
        )
    )
    print_diagnosis_table(diagnosis, deepeval, f"deepeval ({' + '.join(DEEPEVAL_METRICS)})", args.n)
    print(f"\n### Native judge, {args.parallel_n} cases: 1 vs {args.workers} workers\n")
    print(
        md_table(
            ["workers", "wall s", "ms/case", "server calls", "speed-up (ideal)", "rerun calls"],
            [
                [1, serial["wall_s"], serial["ms_per_case"], serial["server_calls"], "1.00", "–"],
                [
                    args.workers,
                    parallel["wall_s"],
                    parallel["ms_per_case"],
                    parallel["server_calls"],
                    f"{speedup:.2f} ({args.workers})",
                    rerun_parallel["server_calls"],
                ],
            ],
        )
    )
    print(
        f"\nrequests/case: chat requests the engine issued; LLM calls/case: those that reached the server "
        f"(the rest were identical requests served by the cache). Tokens count server calls only. "
        f"deepeval import ({deepeval_import_s:.1f} s, once per process) is not in wall ms/case."
    )
    print(f"\nwrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
