"""The grid file (TOML), read and checked once; every message names the file and key.

    [grid]
    pipeline = "rag_app"            # rag_app | python factory "pkg.mod:make" | http | dify
    pipeline_config = "system.toml" # optional: the base --rag-pipeline-config
    pytest_args = ["-m", "retrieval"]
    split = "all"                   # tune | holdout | all (--select: tune, then holdout)
    reference = { top_k = 5, reranker = "local", chunking = "small" }   # default: the first
    k = 5                           # the cut-off of the compared recall/precision
    out = "reports/grid"            # relative to this file
    shards = 1                      # each configuration as N shard jobs, merged exactly

    [axes]                          # every combination is one configuration
    top_k = [3, 5, 10]
    reranker = ["local", "none"]
    chunking = ["small", "large"]   # names of the [blocks.chunking.*] settings blocks

    [blocks.chunking.small]
    chunk_size = 320

How a setting reaches the system: ``top_k`` is the call's ``--rag-top-k`` for every
system; a dotted name (``retrieve.body.top_n``) is set at that path of the generated
pipeline configuration (any adapter); any other name is a rag_app ``--rag-set`` or a Python
factory's ``[options]`` entry. A named block stands for all the settings it holds.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_eval.core.errors import ConfigError
from rag_eval.util.utf8 import NotUtf8Error, read_text

GRID_KEYS = ("pipeline", "pipeline_config", "pytest_args", "split", "reference", "k", "out", "shards", "select")
TOP_KEYS = ("grid", "axes", "blocks")
SPLITS = ("tune", "holdout", "all")
Scalar = str | int | float | bool
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class GridError(ConfigError):
    """The grid file cannot be used; the message names the file, the key and the fix."""


@dataclass(frozen=True)
class Configuration:
    """One combination of the axes: ``choice`` as written (axis → value), ``settings`` with
    named blocks expanded (setting → value)."""

    choice: Mapping[str, Scalar]
    settings: Mapping[str, Scalar]

    @property
    def name(self) -> str:
        return ",".join(f"{k}={_text(v)}" for k, v in self.choice.items())

    @property
    def slug(self) -> str:
        """A file-safe folder name: readable, and unique through a short hash of the name."""
        readable = _SAFE.sub("-", "_".join(f"{k}-{_text(v)}" for k, v in self.choice.items()))[:80]
        return f"{readable}-{hashlib.sha256(self.name.encode()).hexdigest()[:6]}"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "slug": self.slug, "choice": dict(self.choice), "settings": dict(self.settings)}


@dataclass(frozen=True)
class GridSpec:
    path: Path
    pipeline: str
    axes: Mapping[str, Sequence[Scalar]]
    blocks: Mapping[str, Mapping[str, Mapping[str, Scalar]]] = field(default_factory=dict)
    pipeline_config: Path | None = None
    pytest_args: tuple[str, ...] = ("-m", "retrieval")
    split: str = "all"
    reference: Mapping[str, Scalar] | None = None
    k: int = 5
    out: Path = Path("reports/grid")
    shards: int = 1
    select: str | None = None

    @property
    def where(self) -> str:
        return str(self.path)

    def configurations(self) -> list[Configuration]:
        names = list(self.axes)
        out = []
        for values in itertools.product(*(self.axes[n] for n in names)):
            choice = dict(zip(names, values))
            out.append(Configuration(choice, self._expand(choice)))
        return out

    def reference_configuration(self) -> Configuration:
        configs = self.configurations()
        if self.reference is None:
            return configs[0]
        for c in configs:
            if dict(c.choice) == dict(self.reference):
                return c
        raise GridError(
            f"{self.where}: [grid] reference = {json.dumps(dict(self.reference), ensure_ascii=False)} is not one of "
            f"the grid's configurations (one value per axis: {', '.join(self.axes)})"
        )

    def _expand(self, choice: Mapping[str, Scalar]) -> dict[str, Scalar]:
        settings: dict[str, Scalar] = {}
        for axis, value in choice.items():
            block = self.blocks.get(axis)
            if block is None:
                settings[axis] = value
            else:
                settings.update(block[str(value)])
        return settings

    def fingerprint(self) -> str:
        """What every job of this grid shares: the base configuration's bytes, args, split."""
        base = self.pipeline_config.read_bytes() if self.pipeline_config else b""
        shared = json.dumps([self.pipeline, list(self.pytest_args), self.split], sort_keys=True).encode()
        return hashlib.sha256(shared + b"\0" + base).hexdigest()[:16]


def _text(value: Scalar) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def load_grid(path: str | Path) -> GridSpec:
    """Read and check a grid file (see the module docstring for its keys)."""
    p = Path(path)
    if not p.is_file():
        raise GridError(f"{p}: no such grid file")
    try:
        data = tomllib.loads(read_text(p))
    except tomllib.TOMLDecodeError as exc:
        raise GridError(f"{p}: not valid TOML ({exc})") from None
    except NotUtf8Error as exc:
        raise GridError(str(exc)) from None
    _known(p, "the file", data, TOP_KEYS)
    grid = data.get("grid", {})
    _table(p, "[grid]", grid)
    _known(p, "[grid]", grid, GRID_KEYS)
    axes = _axes(p, data.get("axes"))
    blocks = _blocks(p, data.get("blocks", {}), axes)
    base = p.parent
    spec = GridSpec(
        path=p,
        pipeline=_pipeline(p, grid),
        axes=axes,
        blocks=blocks,
        pipeline_config=_config_path(p, base, grid.get("pipeline_config")),
        pytest_args=_args(p, grid.get("pytest_args", ["-m", "retrieval"])),
        split=_choice(p, "split", grid.get("split", "all"), SPLITS),
        reference=_reference(p, grid.get("reference"), axes),
        k=_positive(p, "k", grid.get("k", 5)),
        out=base / str(grid.get("out", "reports/grid")),
        shards=_positive(p, "shards", grid.get("shards", 1)),
        select=_select(p, grid.get("select")),
    )
    spec.reference_configuration()  # checks that the reference is in the grid
    return spec


def _known(p: Path, where: str, data: Mapping[str, Any], keys: Sequence[str]) -> None:
    unknown = sorted(set(data) - set(keys))
    if unknown:
        raise GridError(f"{p}: {where} has unknown key(s) {', '.join(map(repr, unknown))}; valid: {', '.join(keys)}")


def _table(p: Path, where: str, value: Any) -> None:
    if not isinstance(value, dict):
        raise GridError(f"{p}: {where} must be a table, got {type(value).__name__}")


def _pipeline(p: Path, grid: Mapping[str, Any]) -> str:
    value = grid.get("pipeline", "")
    if not isinstance(value, str):
        raise GridError(f'{p}: [grid] pipeline must be a string such as "rag_app" or "pkg.module:factory"')
    if not value and "pipeline_config" not in grid:
        raise GridError(
            f'{p}: [grid] names no system: set pipeline = "rag_app" (or "pkg.module:factory", "http", "dify"), '
            "or pipeline_config = a --rag-pipeline-config file that names it"
        )
    return value


def _axes(p: Path, axes: Any) -> dict[str, list[Scalar]]:
    if axes is None:
        raise GridError(f"{p}: no [axes] table: name each setting and its values, e.g. top_k = [3, 5, 10]")
    _table(p, "[axes]", axes)
    if not axes:
        raise GridError(f"{p}: [axes] is empty: name each setting and its values, e.g. top_k = [3, 5, 10]")
    out: dict[str, list[Scalar]] = {}
    for name, values in axes.items():
        if not isinstance(values, list) or not values:
            raise GridError(f"{p}: [axes] {name} must be a non-empty list of values, e.g. {name} = [1, 2]")
        for v in values:
            if not isinstance(v, (str, int, float, bool)):
                raise GridError(f"{p}: [axes] {name}: {v!r} is not a string, number or boolean")
        if len({json.dumps(v) for v in values}) != len(values):
            raise GridError(f"{p}: [axes] {name} lists a value twice: {values}")
        out[name] = list(values)
    if "top_k" in out and not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in out["top_k"]):
        raise GridError(f"{p}: [axes] top_k must hold positive integers, got {out['top_k']}")
    return out


def _blocks(p: Path, blocks: Any, axes: Mapping[str, Sequence[Scalar]]) -> dict[str, dict[str, dict[str, Scalar]]]:
    _table(p, "[blocks]", blocks)
    out: dict[str, dict[str, dict[str, Scalar]]] = {}
    for axis, named in blocks.items():
        if axis not in axes:
            raise GridError(f"{p}: [blocks.{axis}] names no axis; add {axis} = [...] to [axes] or remove the block")
        _table(p, f"[blocks.{axis}]", named)
        missing = [str(v) for v in axes[axis] if str(v) not in named]
        if missing:
            raise GridError(f"{p}: [axes] {axis} = {list(axes[axis])}: no [blocks.{axis}.{missing[0]}] settings block")
        for name, settings in named.items():
            _table(p, f"[blocks.{axis}.{name}]", settings)
            for key, value in settings.items():
                if not isinstance(value, (str, int, float, bool)):
                    raise GridError(f"{p}: [blocks.{axis}.{name}] {key}: {value!r} is not a string, number or boolean")
        out[axis] = {str(n): dict(s) for n, s in named.items()}
    return out


def _config_path(p: Path, base: Path, value: Any) -> Path | None:
    if value is None:
        return None
    path = (base / str(value)).resolve()
    if not path.is_file():
        raise GridError(f"{p}: [grid] pipeline_config = {value!r}: no such file ({path})")
    return path


def _args(p: Path, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise GridError(f'{p}: [grid] pytest_args must be a list of strings, e.g. ["-m", "retrieval"]')
    owned = [a for a in value if a.split("=", 1)[0] in OWNED_OPTIONS]
    if owned:
        raise GridError(f"{p}: [grid] pytest_args: {owned[0]} is set by the grid itself for each job; remove it")
    return tuple(value)


OWNED_OPTIONS = ("--rag-results", "--rag-split", "--rag-shard", "--rag-top-k", "--rag-pipeline-config", "--rag-set")


def _choice(p: Path, key: str, value: Any, valid: Sequence[str]) -> str:
    if value not in valid:
        raise GridError(f"{p}: [grid] {key} = {value!r}; valid: {', '.join(valid)}")
    return str(value)


def _positive(p: Path, key: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise GridError(f"{p}: [grid] {key} must be a positive integer, got {value!r}")
    return value


def _reference(p: Path, value: Any, axes: Mapping[str, Sequence[Scalar]]) -> dict[str, Scalar] | None:
    if value is None:
        return None
    _table(p, "[grid] reference", value)
    if set(value) != set(axes):
        raise GridError(f"{p}: [grid] reference must give one value for each axis ({', '.join(axes)}), got {value}")
    return {a: value[a] for a in axes}


def _select(p: Path, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or "." not in value:
        raise GridError(f'{p}: [grid] select must be a metric such as "retrieval.recall@5", got {value!r}')
    return value
