r"""Which system the gate evaluates: ``--rag-pipeline`` / ``rag_eval_pipeline`` plus the
optional ``--rag-pipeline-config`` TOML file, read and checked once at start-up.

    pipeline = "http"            # rag_app | http | dify | "package.module:factory" (no default)
    gold = "corpus"              # a mode the kind offers, default its own (rag_eval.adapters.kinds)
    id_map = "ids.csv"           # service id -> gold chunk_id / doc_id, relative to this file
    stages = [["dense", "sparse"], "hybrid", "final"]   # the system's stages (rag_eval.core.stages)
    final_stage = "final"        # which list the answer sees (default: the last stage)
    thresholded_stage = "dense"  # optional: the score-thresholded stage, for negatives
    citation_pattern = '\[(\d+)\]'   # optional: the system's inline citation syntax
    text_max_item_chars = 2000   # gold = "text": longer items count at document level only
    [options]                    # python: passed to the factory
    [framework]                  # python: options of a Haystack / LangChain / LlamaIndex adapter
    [http] [retrieve] [chat]     # http: see rag_eval.adapters.http_config
    [dialogue]                   # http, optional: the dialogue call (docs/dialogue.md)
    [info]                       # http, optional: the service's self-description for run.system
    [dify]                       # dify: see rag_eval.adapters.dify

The command line wins over the file's ``pipeline``, and the file over the ini key
``rag_eval_pipeline``. There is no default system: this repository's pyproject names
``rag_app`` in its own ini.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_eval.adapters import builtin as _builtin  # noqa: F401 - registers the built-in kinds
from rag_eval.adapters import kinds
from rag_eval.adapters.errors import AdapterConfigError
from rag_eval.adapters.gold import IdMapEntry, load_id_map
from rag_eval.adapters.http_config import HttpConfig
from rag_eval.citations import DEFAULT_PATTERN, CitationFormat
from rag_eval.core.errors import ConfigError
from rag_eval.core.stages import StageSpec, parse_stages
from rag_eval.util.utf8 import NotUtf8Error, read_text


@dataclass(frozen=True)
class PipelineSpec:
    """A checked pipeline choice; ``describe`` is safe to write into results."""

    kind: str  # a registered kind (rag_eval.adapters.kinds): rag_app | python | http | dify | ...
    gold: str = ""  # "": the kind's default gold mode
    config_path: Path | None = None
    target: str = ""  # python: "package.module:factory"
    options: Mapping[str, Any] = field(default_factory=dict)
    # python: the [framework] table, for a factory that returns a Haystack, LangChain or LlamaIndex object
    framework: Mapping[str, Any] = field(default_factory=dict)
    id_map: Mapping[str, IdMapEntry] = field(default_factory=dict)
    http: HttpConfig | None = None
    stages: StageSpec | None = None  # declared in the file; else the system's own, else inferred
    citations: CitationFormat = CitationFormat()
    text_max_item_chars: int = 2000

    def __post_init__(self) -> None:
        kind = kinds.get(self.kind)
        if not self.gold and kind is not None:
            object.__setattr__(self, "gold", kind.default_gold)

    @property
    def where(self) -> str:
        return (
            f"--rag-pipeline-config {self.config_path}"
            if self.config_path
            else f"--rag-pipeline {self.target or self.kind}"
        )

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"adapter": self.kind, "gold": self.gold}
        if self.http is not None:
            out.update(self.http.describe())
        if self.target:
            out["factory"] = self.target
        if self.citations.pattern != DEFAULT_PATTERN:
            out["citation_pattern"] = self.citations.pattern
        return out


def load_spec(
    pipeline: str | None, config: str | Path | None, env: Mapping[str, str] = os.environ, default: str | None = None
) -> PipelineSpec:
    """Parse and check everything that can be checked without calling the system.

    Which system: ``pipeline`` (the command line), else the file's ``pipeline``, else
    ``default`` (the ini key rag_eval_pipeline); the framework itself has no default."""
    data: dict[str, Any] = {}
    path = Path(config) if config else None
    if path is not None:
        if not path.is_file():
            raise AdapterConfigError(f"--rag-pipeline-config {path}: no such file")
        try:
            data = tomllib.loads(read_text(path))
        except tomllib.TOMLDecodeError as exc:
            raise AdapterConfigError(f"--rag-pipeline-config {path}: not valid TOML ({exc})") from None
        except NotUtf8Error as exc:
            raise AdapterConfigError(f"--rag-pipeline-config {exc}") from None
        except RecursionError:
            raise AdapterConfigError(f"--rag-pipeline-config {path}: not valid TOML (nested too deeply)") from None
    source = str(path) if path else "--rag-pipeline"
    choice = str(pipeline or data.get("pipeline") or default or "").strip()
    if not choice:
        raise AdapterConfigError(
            "no system under test: name it with --rag-pipeline, the ini key rag_eval_pipeline (e.g. "
            'rag_eval_pipeline = "rag_app" in [tool.pytest.ini_options]) or pipeline = ... in --rag-pipeline-config; '
            f"valid: {', '.join(kinds.named())}, or 'package.module:factory' for your own Python object"
        )
    kind = kinds.get("python" if ":" in choice else choice)
    if kind is None or (":" not in choice and not kind.by_name):
        raise AdapterConfigError(
            f"pipeline {choice!r} (from {'--rag-pipeline' if pipeline else source}) is unknown; valid: "
            f"{', '.join(kinds.named())}, or 'package.module:factory' for your own Python object"
        )
    unknown = sorted(set(data) - set(kind.keys))
    if unknown:
        raise AdapterConfigError(
            f"{source}: key(s) {', '.join(map(repr, unknown))} do not apply to pipeline {choice!r}; "
            f"valid here: {', '.join(kind.keys)}"
        )
    gold = _gold(kind, data, source, choice)
    id_map: dict[str, IdMapEntry] = {}
    if data.get("id_map"):
        map_path = Path(str(data["id_map"]))
        if not map_path.is_absolute() and path is not None:
            map_path = path.parent / map_path
        id_map = load_id_map(map_path)
    common = _common(data, source)
    own = kind.parse(choice, data, source, path, env) if kind.parse is not None else {}
    return PipelineSpec(kind.name, gold, path, id_map=id_map, **common, **own)


def _gold(kind: kinds.AdapterKind, data: Mapping[str, Any], source: str, choice: str) -> str:
    """The file's ``gold``, else the kind's default; one the kind does not offer is refused."""
    gold = str(data.get("gold", kind.default_gold))
    if gold not in kind.gold_modes:
        why = (
            " (gold located in the local corpus needs the corpus chunked as the system chunks it, and this "
            "adapter cannot do that)"
            if gold == "corpus"
            else ""
        )
        raise AdapterConfigError(
            f"{source}: gold = {gold!r} is not offered by pipeline {choice!r}{why}; "
            f"valid here: {', '.join(kind.gold_modes)}"
        )
    return gold


def _common(data: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The keys every adapter shares: declared stages, citation syntax, text-mode bound."""
    out: dict[str, Any] = {}
    try:
        if "stages" in data:
            out["stages"] = parse_stages(
                data["stages"], data.get("final_stage"), data.get("thresholded_stage"), f"{source} stages"
            )
        elif "final_stage" in data or "thresholded_stage" in data:
            raise ConfigError(f"{source}: final_stage / thresholded_stage need a 'stages' list naming the stages")
        if "citation_pattern" in data:
            out["citations"] = CitationFormat(str(data["citation_pattern"]))
    except (ConfigError, ValueError) as exc:  # re.error is a ValueError
        raise AdapterConfigError(f"{source}: {exc}") from None
    if "text_max_item_chars" in data:
        value = data["text_max_item_chars"]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise AdapterConfigError(f"{source}: text_max_item_chars must be a whole number >= 1, got {value!r}")
        out["text_max_item_chars"] = value
    return out
