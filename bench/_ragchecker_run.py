"""Run RAGChecker on cases against an OpenAI-compatible server; print its metrics as JSON.

Run by ``bench/judge_cost.py --ragchecker-python PATH`` with the Python of a separate
venv holding ``ragchecker`` (its dependencies -- torch, spacy, litellm -- stay out of
the project's venvs), while the scripted server answers with
``_claims_cost.ragchecker_reply``:

    python bench/_ragchecker_run.py CASES.json BASE_URL MODEL

litellm is told to use its bundled model cost map (``LITELLM_LOCAL_MODEL_COST_MAP``) and
the Hugging Face hub to stay offline, so the run makes no call outside 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import sys


def main(argv: list[str]) -> int:
    cases, base_url, model = argv
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-ragchecker")
    from ragchecker import RAGChecker, RAGResults
    from ragchecker.metrics import all_metrics

    with open(cases, encoding="utf-8") as f:
        results = RAGResults.from_json(f.read())
    checker = RAGChecker(
        extractor_name=f"openai/{model}",
        checker_name=f"openai/{model}",
        extractor_api_base=base_url,
        checker_api_base=base_url,
        batch_size_extractor=8,
        batch_size_checker=8,
    )
    metrics = checker.evaluate(results, all_metrics)
    claims = [(len(r.response_claims or []), len(r.gt_answer_claims or [])) for r in results.results]
    print(json.dumps({"metrics": metrics, "claims": claims}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
