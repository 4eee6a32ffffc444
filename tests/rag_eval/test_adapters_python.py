"""The Python adapter: ``--rag-pipeline package.module:factory`` and its messages."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from rag_eval.adapters import AdapterConfigError, load_spec
from rag_eval.adapters.python import PythonSystem
from rag_eval.core.contract import RETRIEVE_SIGNATURE, ContractError, Retrieval, as_answer, as_retrieval
from tests.rag_eval._plugin_sandbox import IDS, PYTEST_INI, Sandbox

MODULE = "h3_sut_module"


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Write ``h3_sut_module.py`` with the given source and make it importable."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(source: str) -> str:
        (tmp_path / f"{MODULE}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        sys.modules.pop(MODULE, None)
        return MODULE

    yield write
    sys.modules.pop(MODULE, None)


GOOD = """
class Sut:
    def __init__(self, options=None):
        self.options = options
    def retrieve(self, question, top_k=None):
        return [{"id": "c1", "text": "t", "score": 1.0, "metadata": {"doc_id": "d1"}}]
    def chat(self, question, top_k=None):
        return {"answer": "a [1]", "sources": [{"id": "c1"}], "context": [{"id": "c1", "text": "t"}]}

def make(options):
    return Sut(options)

def make_nothing():
    return object()

def make_bad_shape():
    class Bad:
        def retrieve(self, question, top_k=None):
            return "c1,c2"
    return Bad()

def two_args(a, b):
    return Sut()

class NoRetrieve:
    def search(self, question):
        return []

class OneArgRetrieve:
    def retrieve(self):
        return []

NOT_CALLABLE = 3
"""


def test_a_factory_gets_the_options_table_and_its_object_is_used(module, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    name = module(GOOD)
    config = tmp_path / "p.toml"
    config.write_text(f'pipeline = "{name}:make"\n[options]\nk = 1\n', encoding="utf-8")

    spec = load_spec(None, config)
    sut = PythonSystem(spec.target, spec.options, spec.where)

    assert (spec.kind, spec.gold, sut.obj.options, sut.answers) == ("python", "ids", {"k": 1}, True)
    assert [i.id for i in sut.retrieve("q").items] == ["c1"]
    assert sut.chat("q", 3, [{"role": "user", "content": "hi"}]).answer == "a [1]"  # no history parameter: not passed
    assert sut.describe() == {"adapter": "python", "factory": f"{name}:make"}


def test_a_class_factory_keeps_its_optional_parameters_default_without_options(module, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``class Sut: def __init__(self, options=None)`` given as the factory: no [options]
    table means no argument (options stays None, not ``{}``); a table is passed; a
    required parameter still gets ``{}``."""
    name = module(GOOD)
    assert PythonSystem(f"{name}:Sut", {}, "p.toml").obj.options is None
    assert PythonSystem(f"{name}:Sut", {"k": 2}, "p.toml").obj.options == {"k": 2}
    assert PythonSystem(f"{name}:make", {}, "p.toml").obj.options == {}


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_such_module_h3:make", "cannot import module 'no_such_module_h3' (ModuleNotFoundError"),
        (f"{MODULE}:missing", f"module '{MODULE}' has no attribute 'missing'"),
        (f"{MODULE}:NOT_CALLABLE", "is a int, not a callable factory"),
        (f"{MODULE}:two_args", "must be callable with no argument or with one"),
        (f"{MODULE}:NoRetrieve", f"has no method retrieve; expected `{RETRIEVE_SIGNATURE}`"),
        (f"{MODULE}:OneArgRetrieve", "retrieve(self) cannot be called as retrieve(question, top_k)"),
        (f"{MODULE}", "is not 'package.module:factory'"),
    ],
)
def test_bad_targets_fail_at_start_up_with_the_expected_signature(module, target: str, message: str) -> None:  # type: ignore[no-untyped-def]
    module(GOOD)
    with pytest.raises(AdapterConfigError) as err:
        load_spec(target if ":" in target else target + ":", None)
    assert message in str(err.value)


def test_a_function_factory_returning_the_wrong_object_fails_when_built(module) -> None:  # type: ignore[no-untyped-def]
    module(GOOD)
    spec = load_spec(f"{MODULE}:make_nothing", None)
    with pytest.raises(AdapterConfigError) as err:
        PythonSystem(spec.target, spec.options, spec.where)
    assert f"has no method retrieve; expected `{RETRIEVE_SIGNATURE}`" in str(err.value)


def test_a_wrong_return_shape_shows_the_expected_shape(module) -> None:  # type: ignore[no-untyped-def]
    module(GOOD)
    sut = PythonSystem(f"{MODULE}:make_bad_shape", {}, "--rag-pipeline")
    with pytest.raises(ContractError) as err:
        sut.retrieve("q")
    assert "retrieve() [expected `def retrieve(self, question: str, top_k: int | None = None) -> Retrieval`]" in str(
        err.value
    )
    assert "returned str 'c1,c2'; expected Retrieval(items=" in str(err.value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"items": [{"text": "no id"}]}, "retrieve() items[0]: item has no 'id'"),
        ({"hits": []}, "mapping has no 'items' list"),
        ([{"id": "c1", "score": "high"}], "'score' must be a finite number or null"),
    ],
)
def test_retrieval_shapes_are_checked_item_by_item(value: object, message: str) -> None:
    with pytest.raises(ContractError) as err:
        as_retrieval(value)
    assert message in str(err.value)


def test_contract_records_round_trip_through_dicts() -> None:
    r = as_retrieval({"items": [{"id": "a", "doc_id": "d", "score": 2}], "stages": {"bm25": [{"chunk_id": "a"}]}})
    assert Retrieval.from_dict(r.to_dict()) == r
    assert r.items[0].doc_id == "d" and r.stages["bm25"][0].id == "a"
    assert as_answer(as_answer({"answer": "x", "retrieval": r.to_dict()}).to_dict()).retrieval == r


# --------------------------------------------------------------------------- through the plugin


def python_sandbox(sandbox: Sandbox, source: str) -> None:
    (sandbox.root / "pytest.ini").write_text(PYTEST_INI + "pythonpath = .\n", encoding="utf-8")
    (sandbox.root / "sandbox_sut.py").write_text(textwrap.dedent(source), encoding="utf-8")


def test_the_gate_runs_the_example_pipeline_in_process(sandbox: Sandbox) -> None:
    config = sandbox.root / "mine.toml"
    config.write_text(f'gold = "text"\n[options]\ncorpus = "{sandbox.dataset / "corpus.jsonl"}"\n', encoding="utf-8")

    result = sandbox.run(
        "-m",
        "retrieval or deterministic",
        "--rag-pipeline",
        "examples.my_pipeline:make_pipeline",
        "--rag-pipeline-config",
        str(config),
    )

    results = sandbox.results()
    assert results["run"]["system"]["adapter"] == "python"
    assert results["run"]["system"]["generator"] == "keyword-first-sentence"
    cases = sandbox.cases()
    assert set(cases) == set(IDS) and "error" not in {c["outcome"] for c in cases.values()}
    assert results["metrics"]["retrieval.doc.recall@5"] > 0.5
    assert {c["outcome"] for c in sandbox.cases("deterministic").values()} <= {"pass", "fail"}
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)


def test_a_factory_that_builds_the_wrong_object_stops_the_run(sandbox: Sandbox) -> None:
    python_sandbox(sandbox, "def make():\n    return 42\n")

    result = sandbox.run("-m", "retrieval", "--rag-pipeline", "sandbox_sut:make")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: rag-eval pipeline: --rag-pipeline sandbox_sut:make: sandbox_sut:make has no method retrieve; expected `{RETRIEVE_SIGNATURE}`*"
        ]
    )


def test_an_unimportable_pipeline_is_a_usage_error(sandbox: Sandbox) -> None:
    result = sandbox.run("-m", "retrieval", "--rag-pipeline", "nowhere_h3.mod:make")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: rag-eval pipeline: --rag-pipeline: cannot import module 'nowhere_h3.mod'*"])


def test_a_retrieval_only_object_skips_the_answer_tiers_with_a_reason(sandbox: Sandbox) -> None:
    python_sandbox(
        sandbox,
        """
        class Sut:
            def retrieve(self, question, top_k=None):
                return {"items": [{"id": "set", "metadata": {"doc_id": "set"}}]}
        """,
    )
    sandbox.write_thresholds("[retrieval]\nerror_rate = { max = 0.0 }\n")

    result = sandbox.run("-m", "retrieval or deterministic", "--rag-pipeline", "sandbox_sut:Sut", "-rs")

    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*retrieval-only: it has no chat endpoint or method*"])
    assert sandbox.cases("deterministic") == {}  # the tier does not apply: no case recorded, no gate


def test_there_is_no_default_system_and_the_ini_default_yields_to_the_file(module, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    module(GOOD)
    with pytest.raises(
        AdapterConfigError, match="no system under test: name it with --rag-pipeline, the ini key rag_eval_pipeline"
    ):
        load_spec(None, None)
    assert load_spec(None, None, default="rag_app").kind == "rag_app"
    config = tmp_path / "pipe.toml"
    config.write_text(f'pipeline = "{MODULE}:make"\n', encoding="utf-8")
    assert load_spec(None, config, default="rag_app").target == f"{MODULE}:make"  # the file names its system
    assert load_spec("rag_app", None, default="http").kind == "rag_app"  # the command line wins
