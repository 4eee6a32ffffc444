"""The built-in adapter kinds, one declaration each (see rag_eval.adapters.kinds). Every
function here imports its adapter only when that kind is chosen, so choosing ``http``
imports nothing of rag_app (nor of the demo extra)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_eval.adapters.errors import AdapterConfigError
from rag_eval.adapters.kinds import COMMON_KEYS, STAGE_KEYS, AdapterKind, CorpusView, SystemContext, register

if TYPE_CHECKING:
    from rag_eval.adapters.rag_app import RagAppSystem
    from rag_eval.adapters.spec import PipelineSpec
    from rag_eval.core.contract import SystemUnderTest
    from rag_eval.core.records import Chunk, Document


# --- rag_app, in process ---------------------------------------------------------------
def _rag_app_system(context: SystemContext) -> RagAppSystem:
    from rag_eval.adapters.rag_app import RagAppSystem

    return RagAppSystem(context.overrides, context.project_root, context.corpus)


def _rag_app(spec: PipelineSpec, context: SystemContext) -> SystemUnderTest:
    return _rag_app_system(context)


def _rag_app_reader(context: SystemContext) -> Callable[[Path], tuple[Document, ...]]:
    return _rag_app_system(context).corpus_documents


def _rag_app_chunker(context: SystemContext) -> Callable[[Sequence[Document]], list[Chunk]]:
    return _rag_app_system(context).corpus_chunks


def _rag_app_settings(overrides: Mapping[str, str], where: Mapping[str, str]) -> None:
    from rag_eval.adapters.rag_app import check_overrides

    check_overrides(overrides, where)


#: rag_app reads and chunks the corpus with its own loader and settings (``--rag-set``)
RAG_APP_CORPUS = CorpusView(_rag_app_reader, _rag_app_chunker, _rag_app_settings)


# --- your Python object ----------------------------------------------------------------
def _python(spec: PipelineSpec, context: SystemContext) -> SystemUnderTest:
    from rag_eval.adapters.python import PythonSystem

    return PythonSystem(spec.target, spec.options, spec.where, spec.framework)


def _python_spec(
    choice: str, data: Mapping[str, Any], source: str, path: Path | None, env: Mapping[str, str]
) -> dict[str, Any]:
    from rag_eval.adapters.python import load_factory

    options = data.get("options", {})
    framework = data.get("framework", {})
    for key, table in (("options", options), ("framework", framework)):
        if not isinstance(table, Mapping):
            raise AdapterConfigError(f"{source}: [{key}] must be a table")
    load_factory(choice, source)
    return {"target": choice, "options": dict(options), "framework": dict(framework)}


# --- a service over HTTP, Dify ---------------------------------------------------------
def _http(spec: PipelineSpec, context: SystemContext) -> SystemUnderTest:
    from rag_eval.adapters.http import HttpSystem

    assert spec.http is not None  # the kind's parser read the [http] / [dify] table
    return HttpSystem(spec.http)


def _http_spec(
    choice: str, data: Mapping[str, Any], source: str, path: Path | None, env: Mapping[str, str]
) -> dict[str, Any]:
    from rag_eval.adapters.http_config import HttpConfig

    if path is None:
        raise AdapterConfigError(
            "--rag-pipeline http needs --rag-pipeline-config FILE.toml with a [retrieve] url and field paths "
            "(see examples/rag_app_http.toml and docs/adapters.md)"
        )
    return {"http": HttpConfig.parse(data, source, env)}


def _dify_spec(
    choice: str, data: Mapping[str, Any], source: str, path: Path | None, env: Mapping[str, str]
) -> dict[str, Any]:
    from rag_eval.adapters.dify import dify_config

    table = data.get("dify", {})
    if not isinstance(table, Mapping):
        raise AdapterConfigError(f"{source}: [dify] must be a table")
    return {"http": dify_config(table, source, env)}


RAG_APP = register(
    AdapterKind(
        "rag_app",
        _rag_app,
        COMMON_KEYS,  # rag_app declares its own stages
        ("corpus", "ids", "text"),
        corpus=RAG_APP_CORPUS,
        # where this process's index lives and what building it did: not which system it is
        state_keys=("vector_store", "index_built", "embeddings_computed", "embeddings_cached"),
    )
)
PYTHON = register(
    AdapterKind(
        "python",
        _python,
        (*COMMON_KEYS, *STAGE_KEYS, "options", "framework"),
        ("ids", "text"),
        parse=_python_spec,
        by_name=False,
    )
)
HTTP = register(
    AdapterKind(
        "http",
        _http,
        (*COMMON_KEYS, *STAGE_KEYS, "http", "retrieve", "chat", "info", "dialogue"),
        # corpus: rag_app behind its HTTP API (examples/rag_app_http.toml), the corpus chunked as rag_app chunks it
        ("ids", "text", "corpus"),
        parse=_http_spec,
        corpus=CorpusView(_rag_app_reader, _rag_app_chunker, _rag_app_settings, own=False),
        state_keys=("info_error",),  # the [info] call failed this time
    )
)
DIFY = register(AdapterKind("dify", _http, (*COMMON_KEYS, *STAGE_KEYS, "dify"), ("ids", "text"), parse=_dify_spec))
