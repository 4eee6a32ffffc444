"""Which system the gate evaluates: ``--pipeline`` / ``rag_eval_pipeline`` plus the
optional ``--pipeline-config`` TOML file, read and checked once at start-up.

    pipeline = "http"            # rag_app (default) | http | dify | "package.module:factory"
    gold = "corpus"              # corpus | ids | text (see rag_eval.adapters.gold)
    id_map = "ids.csv"           # service id -> gold chunk_id / doc_id, relative to this file
    [options]                    # python: passed to the factory
    [http] [retrieve] [chat]     # http: see rag_eval.adapters.http_config
    [info]                       # http, optional: the service's self-description for run.system
    [dify]                       # dify: see rag_eval.adapters.dify

The command line wins over the file's ``pipeline``.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from rag_eval.adapters.errors import AdapterConfigError
from rag_eval.adapters.gold import GOLD_MODES, IdMapEntry, load_id_map
from rag_eval.adapters.http_config import HttpConfig

BUILTIN: tuple[str, ...] = ("rag_app", "http", "dify")
KEYS_BY_KIND: dict[str, tuple[str, ...]] = {
    "rag_app": ("pipeline", "gold", "id_map"),
    "python": ("pipeline", "gold", "id_map", "options"),
    "http": ("pipeline", "gold", "id_map", "http", "retrieve", "chat", "info"),
    "dify": ("pipeline", "gold", "id_map", "dify"),
}
DEFAULT_GOLD: dict[str, str] = {"rag_app": "corpus", "python": "ids", "http": "ids", "dify": "ids"}


@dataclass(frozen=True)
class PipelineSpec:
    """A checked pipeline choice; ``describe`` is safe to write into results."""

    kind: str  # rag_app | python | http | dify
    gold: str = "corpus"
    config_path: Path | None = None
    target: str = ""  # python: "package.module:factory"
    options: Mapping[str, Any] = field(default_factory=dict)
    id_map: Mapping[str, IdMapEntry] = field(default_factory=dict)
    http: HttpConfig | None = None

    @property
    def where(self) -> str:
        return f"--pipeline-config {self.config_path}" if self.config_path else f"--pipeline {self.target or self.kind}"

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"adapter": self.kind, "gold": self.gold}
        if self.http is not None:
            out.update(self.http.describe())
        if self.target:
            out["factory"] = self.target
        return out


def load_spec(pipeline: str | None, config: str | Path | None, env: Mapping[str, str] = os.environ) -> PipelineSpec:
    """Parse and check everything that can be checked without calling the system."""
    data: dict[str, Any] = {}
    path = Path(config) if config else None
    if path is not None:
        if not path.is_file():
            raise AdapterConfigError(f"--pipeline-config {path}: no such file")
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise AdapterConfigError(f"--pipeline-config {path}: not valid TOML ({exc})") from None
    source = str(path) if path else "--pipeline"
    choice = str(pipeline or data.get("pipeline") or "rag_app").strip()
    kind = "python" if ":" in choice else choice
    if kind not in KEYS_BY_KIND:
        raise AdapterConfigError(
            f"pipeline {choice!r} (from {'--pipeline' if pipeline else source}) is unknown; valid: "
            f"{', '.join(BUILTIN)}, or 'package.module:factory' for your own Python object"
        )
    unknown = sorted(set(data) - set(KEYS_BY_KIND[kind]))
    if unknown:
        raise AdapterConfigError(
            f"{source}: key(s) {', '.join(map(repr, unknown))} do not apply to pipeline {choice!r}; "
            f"valid here: {', '.join(KEYS_BY_KIND[kind])}"
        )
    gold = str(data.get("gold", DEFAULT_GOLD[kind]))
    if gold not in GOLD_MODES:
        raise AdapterConfigError(f"{source}: gold = {gold!r}; valid: {', '.join(GOLD_MODES)}")
    id_map: dict[str, IdMapEntry] = {}
    if data.get("id_map"):
        map_path = Path(str(data["id_map"]))
        if not map_path.is_absolute() and path is not None:
            map_path = path.parent / map_path
        id_map = load_id_map(map_path)
    spec = PipelineSpec(kind, gold, path, id_map=id_map)
    if kind == "python":
        from rag_eval.adapters.python import load_factory

        options = data.get("options", {})
        if not isinstance(options, Mapping):
            raise AdapterConfigError(f"{source}: [options] must be a table")
        load_factory(choice, source)
        return PipelineSpec(kind, gold, path, choice, dict(options), id_map)
    if kind == "http":
        if path is None:
            raise AdapterConfigError(
                "--pipeline http needs --pipeline-config FILE.toml with a [retrieve] url and field paths "
                "(see examples/rag_app_http.toml and docs/adapters.md)"
            )
        return PipelineSpec(kind, gold, path, id_map=id_map, http=HttpConfig.parse(data, source, env))
    if kind == "dify":
        from rag_eval.adapters.dify import dify_config

        table = data.get("dify", {})
        if not isinstance(table, Mapping):
            raise AdapterConfigError(f"{source}: [dify] must be a table")
        return PipelineSpec(kind, gold, path, id_map=id_map, http=dify_config(table, source, env))
    return spec
