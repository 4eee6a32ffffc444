"""Judge engines compared on agreement with people, not only on validity (issue 23, point 5).

The cases are ``bench/judge_cost.py``'s (``build_items``: the demo golden items with
evidence, key facts and a reference; answer = the reference's first two sentences, context =
the evidence paragraph and the two after it). 44 of them carry a human faithfulness label,
``tests/data/agent_labels/demo_faithfulness.jsonl`` (who and how: its README). Each judge
judges every case; ``rag_eval.labels.compare_labels`` then gives, per judge, agreement with the
labels (accuracy, κ on the 0 / 0.5 / 1 scale), the bias, and the three estimates of the true
faithfulness with 95 % intervals: judge-only, labels-only, PPI++ (λ shown).

Judges (all against the scripted OpenAI-compatible server on 127.0.0.1, so the numbers
measure the procedure, not a model; the procedure with a real model: docs/judge.md
"Checking your judge"):

* ``native (scripted: every claim yes)``: the native engine with the scripted server's
  default verdicts (``tests.support.judge_replies.native_verdict``): a maximally lenient judge;
* ``native (scripted: lexical)``: the native engine, each answer sentence judged "yes" when at
  least ``--overlap`` (0.6) of its character bigrams (CJK characters, letters, digits) occur
  in the context, else "no": a crude but case-dependent judge;
* ``deepeval (scripted)``: the deepeval engine's faithfulness metric with the scripted
  deepeval replies (``tests.support.deepeval_replies.Responder``).

    python bench/judge_agreement.py [--overlap 0.6]

Writes ``bench/results/judge_agreement.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, fmt, md_table, run_header, write_results  # noqa: E402
from judge_cost import CORPUS, GOLDEN, MODEL, build_items, make_client, native_reply  # noqa: E402

from rag_eval.judge.deepeval_engine import DeepEvalEngine  # noqa: E402
from rag_eval.judge.native import JudgeInput, NativeJudge  # noqa: E402
from rag_eval.labels.compare import LabelReport, compare_labels  # noqa: E402
from rag_eval.labels.load import load_labels  # noqa: E402
from rag_eval.stats.interval import fmt_interval  # noqa: E402
from tests.support.deepeval_replies import Responder, estimate_tokens, request_prompt_tokens  # noqa: E402
from tests.support.judge_replies import blocks, native_verdict  # noqa: E402
from tests.support.openai_server import Reply, ScriptedOpenAIServer  # noqa: E402

LABELS = REPO / "tests" / "data" / "agent_labels" / "demo_faithfulness.jsonl"
_UNIT = re.compile(r"[\u4e00-\u9fff]|[A-Za-z0-9]")
_MARKER = re.compile(r"\s*\[\d+\]\s*")


def _bigrams(text: str) -> set[str]:
    units = _UNIT.findall(text)
    return {a + b for a, b in zip(units, units[1:])}


def lexical_reply(overlap: float) -> Any:
    """The native verdict with one claim per answer sentence, "yes" when its bigrams are in the context."""

    def answer(req: dict[str, Any]) -> Reply:
        b = blocks(req)
        context = _bigrams(b.get("CONTEXT", ""))
        verdict = native_verdict(req)
        claims = []
        for i, sentence in enumerate(s for s in _MARKER.split(b.get("ANSWER", "")) if s.strip(" 。")):
            grams = _bigrams(sentence)
            yes = bool(grams) and len(grams & context) / len(grams) >= overlap
            claims.append(
                {
                    "claim": f"sentence {i + 1}",
                    "verdict": "yes" if yes else "no",
                    "chunks": [1] if yes else [],
                    "reference": "yes",
                    "reason": "bigram overlap with the context",
                }
            )
        verdict["claims"] = claims or verdict["claims"]
        content = json.dumps(verdict, ensure_ascii=False)
        return Reply(content, prompt_tokens=request_prompt_tokens(req), completion_tokens=estimate_tokens(content))

    return answer


def judge_all(srv: ScriptedOpenAIServer, cache: Path, items: Sequence[JudgeInput], engine: str) -> dict[str, float]:
    """Each case's faithfulness by one engine (a case without one is left out, and counted)."""
    with make_client(srv, cache) as client:
        judge: Any = (
            NativeJudge(client, MODEL)
            if engine == "native"
            else DeepEvalEngine(client, MODEL, metrics=("faithfulness",))
        )
        out = {}
        for item in items:
            metrics = judge.judge(item).metrics  # the deepeval engine's keys carry its name
            value = metrics.get("faithfulness", metrics.get("deepeval.faithfulness"))
            if isinstance(value, (int, float)):
                out[item.case_id] = float(value)
    return out


def report_of(values: dict[str, float]) -> LabelReport:
    cases = [
        {"id": cid, "tier": "judge", "outcome": "pass", "metrics": {"faithfulness": v}} for cid, v in values.items()
    ]
    return compare_labels(load_labels(LABELS), {"cases": cases})


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--overlap", type=float, default=0.6, help="the lexical judge's bigram share for a 'yes'")
    args = ap.parse_args(argv)
    items = build_items(GOLDEN, CORPUS)
    judges = (
        ("native (scripted: every claim yes)", "native", native_reply),
        ("native (scripted: lexical)", "native", lexical_reply(args.overlap)),
        ("deepeval (scripted)", "deepeval", Responder(realistic_tokens=True, tag_reasons=True)),
    )
    rows, out = [], {}
    with tempfile.TemporaryDirectory(prefix="judge_agreement-") as tmp, ScriptedOpenAIServer() as srv:
        for i, (name, engine, responder) in enumerate(judges):
            srv.set_default("chat", responder)
            values = judge_all(srv, Path(tmp) / str(i), items, engine)
            report = report_of(values)
            (m,) = report.metrics
            out[name] = {
                "n_cases": len(items),
                "n_judged": len(values),
                **m.to_dict(),
                "left_out": [vars(x) for x in report.left_out],
            }
            rows.append(
                [
                    name,
                    f"{m.n_labelled}/{m.n_judged}",
                    fmt(m.accuracy, 3),
                    fmt(m.kappa, 3),
                    f"{m.bias:+.3f}" if m.bias is not None else "n/a",
                    fmt_interval(m.judge_only, 3),
                    fmt_interval(m.labels_only, 3),
                    fmt_interval(m.ppi, 3),
                    fmt(m.lam, 3),
                ]
            )
    payload = {
        **run_header("judge_agreement", argv),
        "params": {"overlap": args.overlap, "labels": str(LABELS.relative_to(REPO))},
        "judges": out,
    }
    path = write_results("judge_agreement", payload)
    print(
        md_table(["judge", "labelled/judged", "accuracy", "κ", "bias", "judge-only", "labels-only", "PPI++", "λ"], rows)
    )
    print(f"\nwritten: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
