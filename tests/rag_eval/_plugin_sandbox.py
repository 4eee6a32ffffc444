"""A tiny offline evaluation project for pytester runs of the plugin (``rag_eval.plugin``).

Each test gets its own sandbox (pytester's temporary directory) holding:

    pytest.ini          addopts that keep the inner run fast (no deepeval plugin)
    conftest.py         optional extra code (the plugin registers itself: pytest11 entry point)
    test_rag.py         a copy of eval_tests/test_rag.py (and test_golden.py on request)
    thresholds.toml     the gates
    ds/corpus.jsonl     8 short documents, 4 Chinese and 4 English
    ds/golden.jsonl     7 answerable items (shared layout, doc-level gold) + 2 negatives

Runs are offline and fast: the hashing FakeEmbedder, no reranker, and one index cache
shared by every sandbox of the outer test session (the corpus is the same, so the
index is built once per outer process and then loaded).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
EVAL_TESTS = REPO_ROOT / "eval_tests"

CORPUS: tuple[dict[str, str], ...] = (
    {
        "doc_id": "set",
        "title": "集合",
        "text": "一个含有n个元素的集合，它的子集个数为2的n次方，真子集个数为2的n次方减1。",
    },
    {"doc_id": "func", "title": "函数", "text": "函数的定义域是自变量x的取值范围，值域是函数值的集合。"},
    {"doc_id": "seq", "title": "等差数列", "text": "等差数列的通项公式是 a_n = a_1 + (n-1)d，前n项和为 n(a_1+a_n)/2。"},
    {"doc_id": "trig", "title": "三角函数", "text": "正弦函数 y=sin x 的最小正周期是 2π，值域是 [-1, 1]。"},
    {
        "doc_id": "prob",
        "title": "Probability",
        "text": "The probability of an event lies between 0 and 1. Independent events multiply their probabilities.",
    },
    {
        "doc_id": "vec",
        "title": "Vectors",
        "text": "The dot product of two vectors equals the product of their lengths and the cosine of the angle between them.",
    },
    {
        "doc_id": "deriv",
        "title": "Derivatives",
        "text": "The derivative of x squared is two x. The derivative measures the instantaneous rate of change.",
    },
    {
        "doc_id": "log",
        "title": "Logarithms",
        "text": "The logarithm of a product equals the sum of the logarithms: log(ab) = log a + log b.",
    },
)

# Every item names its split, so that --rag-split selections can be written down here
# instead of depending on the hash-derived default split.
GOLDEN: tuple[dict[str, Any], ...] = (
    {
        "id": "q-set",
        "question": "含n个元素的集合有多少个子集？",
        "gold_doc_ids": ["set"],
        "split": "tune",
        "tags": {"lang": "zh"},
    },
    {
        "id": "q-func",
        "question": "函数的定义域是什么？",
        "gold_doc_ids": ["func"],
        "split": "tune",
        "tags": {"lang": "zh"},
    },
    {
        "id": "q-seq",
        "question": "等差数列的通项公式是什么？",
        "gold_doc_ids": ["seq"],
        "split": "tune",
        "tags": {"lang": "zh"},
    },
    {
        "id": "q-trig",
        "question": "正弦函数的最小正周期是多少？",
        "gold_doc_ids": ["trig"],
        "split": "holdout",
        "tags": {"lang": "zh"},
    },
    {
        "id": "q-prob",
        "question": "What is the probability of independent events?",
        "gold_doc_ids": ["prob"],
        "split": "holdout",
        "tags": {"lang": "en"},
    },
    {
        "id": "q-vec",
        "question": "What does the dot product of two vectors equal?",
        "gold_doc_ids": ["vec"],
        "split": "holdout",
        "tags": {"lang": "en"},
    },
    {
        "id": "q-deriv",
        "question": "What is the derivative of x squared?",
        "gold_doc_ids": ["deriv"],
        "split": "tune",
        "tags": {"lang": "en"},
    },
    {
        "id": "q-neg-en",
        "question": "Who won the football world cup in 1998?",
        "gold_doc_ids": [],
        "split": "tune",
        "tags": {"lang": "en"},
    },
    {
        "id": "q-neg-zh",
        "question": "今天北京的天气怎么样？",
        "gold_doc_ids": [],
        "split": "holdout",
        "tags": {"lang": "zh"},
    },
)
IDS: tuple[str, ...] = tuple(i["id"] for i in GOLDEN)
POSITIVE_IDS: tuple[str, ...] = tuple(i["id"] for i in GOLDEN if i["gold_doc_ids"])
NEGATIVE_IDS: tuple[str, ...] = tuple(i["id"] for i in GOLDEN if not i["gold_doc_ids"])
HOLDOUT_IDS: tuple[str, ...] = tuple(i["id"] for i in GOLDEN if i["split"] == "holdout")

PASSING_THRESHOLDS = """\
[defaults]
min_cases = 3

[retrieval]
"doc.recall@5" = { min = 0.5 }
"bm25.doc.mrr" = { min = 0.1 }
pass_rate = { min = 0.5 }
error_rate = { max = 0.0 }

[deterministic]
error_rate = { max = 0.0 }
"""

PYTEST_INI = """\
[pytest]
addopts = -p no:deepeval -p no:cacheprovider
asyncio_default_fixture_loop_scope = function
rag_eval_pipeline = rag_app
"""

PLUGIN_LINE = ""  # the plugin registers itself through its pytest11 entry point

# A conftest that, around the controller's report hook, checks each case a serial run hands
# over in process (CaseRunner.run -> Controller.inbox) against its JSON round trip (what an
# xdist worker's case becomes), and writes one line per case to handover.txt.
HANDOVER_CHECK = """
import json
import pytest
from rag_eval.plugin.run import RUN
from rag_eval.core.case import CaseResult

CONFIG = []


def pytest_configure(config):
    CONFIG.append(config)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_logreport(report):
    if report.when == "call" and CONFIG:
        controller = CONFIG[-1].stash[RUN].controller  # None on an xdist worker
        for case in (controller.inbox.get(report.nodeid, []) if controller is not None else []):
            again = CaseResult.from_dict(json.loads(json.dumps(case.to_dict(), ensure_ascii=False)))
            differ = [f for f in case.__dataclass_fields__ if getattr(case, f) != getattr(again, f)]
            with open("handover.txt", "a", encoding="utf-8") as fh:
                fh.write(f"{case.key} {'same' if not differ else 'differs: ' + ','.join(differ)}\\n")
    yield
"""


def jsonl(rows: Sequence[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class Sandbox:
    """One sandbox project inside ``pytester.path``; ``run`` adds the offline settings."""

    pytester: pytest.Pytester
    cache_dir: Path

    @property
    def root(self) -> Path:
        return self.pytester.path

    @property
    def dataset(self) -> Path:
        return self.root / "ds"

    @property
    def golden_path(self) -> Path:
        return self.dataset / "golden.jsonl"

    @property
    def results_path(self) -> Path:
        return self.root / "reports" / "eval-results.json"

    def write_corpus(self, docs: Sequence[Mapping[str, Any]] = CORPUS) -> None:
        self.dataset.mkdir(exist_ok=True)
        (self.dataset / "corpus.jsonl").write_text(jsonl(docs), encoding="utf-8")

    def write_golden(self, items: Sequence[Mapping[str, Any]] = GOLDEN, *, raw_lines: Sequence[str] = ()) -> None:
        """The golden set; ``raw_lines`` are appended verbatim (for malformed lines)."""
        self.dataset.mkdir(exist_ok=True)
        self.golden_path.write_text(jsonl(items) + "".join(line + "\n" for line in raw_lines), encoding="utf-8")

    def write_thresholds(self, text: str) -> None:
        (self.root / "thresholds.toml").write_text(text, encoding="utf-8")

    def write_conftest(self, extra: str = "") -> None:
        (self.root / "conftest.py").write_text(PLUGIN_LINE + extra, encoding="utf-8")

    def handed_over(self) -> dict[str, str]:
        """What HANDOVER_CHECK (in the conftest) wrote: case key -> 'same' or what differs."""
        path = self.root / "handover.txt"
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        return dict(line.split(" ", 1) for line in lines)

    def add_judge_tests(self) -> None:
        (self.root / "test_judge.py").write_text(split_judge_test()[1], encoding="utf-8")

    def add_passk_tests(self) -> None:
        (self.root / "test_passk.py").write_text(split_tier_tests("passk")[1], encoding="utf-8")

    def add_dialogue_tests(self) -> None:
        """test_dialogue and test_passk_dialogue of eval_tests/test_rag.py, in test_dialogue.py."""
        (self.root / "test_dialogue.py").write_text(split_tier_tests("dialogue")[1], encoding="utf-8")

    def add_golden_tests(self) -> None:
        (self.root / "test_golden.py").write_text((EVAL_TESTS / "test_golden.py").read_text(encoding="utf-8"))

    def args(self, *extra: str) -> list[str]:
        # rag_app's settings are for the in-process rag_app pipeline; another pipeline
        # refuses --rag-set (it would change nothing there).
        own = any(a.startswith("--rag-pipeline") for a in extra)
        rag_set = (
            []
            if own
            else [
                "--rag-set",
                "embedder=fake",
                "--rag-set",
                "reranker=none",
                "--rag-set",
                f"cache_dir={self.cache_dir}",
            ]
        )
        return ["--rag-dataset", str(self.dataset), *rag_set, *extra]

    def run(self, *extra: str) -> pytest.RunResult:
        """An in-process run (fast: chromadb and jieba are imported once per outer process)."""
        return self.pytester.runpytest(*self.args(*extra))

    def run_subprocess(self, *extra: str) -> pytest.RunResult:
        return self.pytester.runpytest_subprocess(*self.args(*extra))

    def results(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.results_path.read_text(encoding="utf-8"))
        return data

    def cases(self, tier: str = "retrieval") -> dict[str, dict[str, Any]]:
        """The results file's cases of one tier, by golden id."""
        return {c["id"]: c for c in self.results()["cases"] if c["tier"] == tier}


def split_tier_tests(tier: str = "judge") -> tuple[str, str]:
    """eval_tests/test_rag.py with only its retrieval and deterministic tests, and with only
    the ``tier`` test: most sandbox tests count those two tiers; judge and passk tests add
    their own file."""
    text = (EVAL_TESTS / "test_rag.py").read_text(encoding="utf-8")
    header, *every = text.split("\n\n@pytest.mark.")
    # the dialogue tests (dialogue_case) are added on their own: add_dialogue_tests
    blocks = [b for b in every if "dialogue_case" not in b] if tier != "dialogue" else every
    base = [b for b in blocks if b.startswith(("retrieval", "deterministic"))]
    chosen = [b for b in blocks if b.startswith(tier) or (tier == "dialogue" and "dialogue_case" in b)]
    assert chosen, f"eval_tests/test_rag.py has no @pytest.mark.{tier} test"
    join = lambda parts: "\n\n@pytest.mark.".join([header, *parts]).rstrip("\n") + "\n"  # noqa: E731
    return join(base), join(chosen)


def split_judge_test() -> tuple[str, str]:
    return split_tier_tests("judge")


def make_sandbox(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    cache_dir: Path,
    *,
    thresholds: str | None = PASSING_THRESHOLDS,
    with_judge: bool = False,
) -> Sandbox:
    """A complete, valid sandbox; tests then overwrite the one file they break."""
    # Subprocesses (xdist workers, runpytest_subprocess) must import rag_eval too, and
    # RAG_APP_* variables of the outer shell must not change what the sandbox measures.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    for name in [n for n in os.environ if n.startswith("RAG_APP_")]:
        monkeypatch.delenv(name)
    box = Sandbox(pytester, cache_dir)
    (box.root / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    box.write_conftest()
    retrieval_and_deterministic, judge = split_judge_test()
    (box.root / "test_rag.py").write_text(retrieval_and_deterministic, encoding="utf-8")
    if with_judge:
        (box.root / "test_judge.py").write_text(judge, encoding="utf-8")
    box.write_corpus()
    box.write_golden()
    if thresholds is not None:
        box.write_thresholds(thresholds)
    return box


def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One index cache per outer session (per xdist worker), built and warmed once."""
    return _warm(tmp_path_factory.getbasetemp() / "rag-eval-sandbox-cache")


@functools.cache
def _warm(cache_dir: Path) -> Path:
    """Build the sandbox index and import everything a sandbox run imports, here.

    pytester's in-process runs restore ``sys.modules`` afterwards, dropping every module
    first imported during the run; without this, each run would re-import chromadb and
    re-initialise jieba (~5 s). Modules imported before the run are kept.
    """
    from rag_eval import golden, plugin, session  # noqa: F401 - imported to keep them loaded
    from rag_eval.adapters.rag_app import RagAppSystem
    from rag_eval.golden import validate  # noqa: F401

    corpus = cache_dir / "warm" / "corpus.jsonl"
    corpus.parent.mkdir(parents=True, exist_ok=True)
    corpus.write_text(jsonl(CORPUS), encoding="utf-8")
    overrides = {"cache_dir": str(cache_dir), "embedder": "fake", "reranker": "none"}
    system = RagAppSystem(overrides, None, corpus)
    system.retrieve(str(GOLDEN[0]["question"]))
    system.chat(str(GOLDEN[4]["question"]))
    return cache_dir


def assert_clean_error(result: pytest.RunResult, *patterns: str) -> None:
    """The run stopped on collection with our message alone: no traceback through pluggy."""
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([*patterns])
    out = result.stdout.str()
    for frame_marker in ("site-packages", "rag_eval/plugin/", "UsageError"):
        assert frame_marker not in out, out
