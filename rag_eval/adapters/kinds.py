"""The registry of adapter kinds: everything the gate knows about one kind of system, in
one declaration (``AdapterKind``), so nothing outside the adapters package names a kind.

A kind says how its system is built, which pipeline-configuration keys apply to it, which
gold modes it offers (and its default), how its system reads and chunks a local corpus
(if it can: ``gold = "corpus"`` needs that), which ``--rag-set`` settings it takes and
which keys of its description are per-process state rather than identity (a merge of
shards compares every other key). Built-in kinds are declared in
``rag_eval.adapters.builtin``; another is one module plus one :func:`register` call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag_eval.adapters.spec import PipelineSpec
    from rag_eval.core.contract import SystemUnderTest
    from rag_eval.core.records import Chunk, Document

#: keys every kind's pipeline configuration may hold
COMMON_KEYS: tuple[str, ...] = ("pipeline", "gold", "id_map", "citation_pattern", "text_max_item_chars")
#: keys of a kind whose stages the configuration declares (rag_app declares its own)
STAGE_KEYS: tuple[str, ...] = ("stages", "final_stage", "thresholded_stage")


@dataclass(frozen=True)
class SystemContext:
    """What an adapter may need besides its spec: the run's ``--rag-set`` overrides (for a
    kind that takes settings), the project root (its pyproject and cache), and the
    dataset's corpus, if any."""

    overrides: Mapping[str, Any] = field(default_factory=dict)
    project_root: Path | None = None
    corpus: Path | None = None


SystemBuilder = Callable[["PipelineSpec", SystemContext], "SystemUnderTest"]
#: the kind's own part of the spec: (choice, the file's table, where it came from, the
#: environment) -> PipelineSpec fields (target, options, framework, http), or AdapterConfigError
SpecParser = Callable[[str, Mapping[str, Any], str, "Path | None", Mapping[str, str]], dict[str, Any]]
#: ``--rag-set`` values and where each came from -> None, or ConfigError naming the bad one
SettingsCheck = Callable[[Mapping[str, str], Mapping[str, str]], None]


@dataclass(frozen=True)
class CorpusView:
    """How a system reads and chunks the dataset's local corpus, so gold located in it
    (``gold = "corpus"``) meets the ids the system returns. ``own``: the kind's system is
    this one (its reader is used in every gold mode); else the view is borrowed for
    ``gold = "corpus"`` only (a service that runs this system behind an API)."""

    read: Callable[[SystemContext], Callable[[Path], tuple[Document, ...]]]
    chunk: Callable[[SystemContext], Callable[[Sequence[Document]], list[Chunk]]]
    settings: SettingsCheck | None = None  # the ``--rag-set`` settings its chunking reads
    own: bool = True


@dataclass(frozen=True)
class AdapterKind:
    """One kind of system under test, declared once."""

    name: str
    build: SystemBuilder
    keys: tuple[str, ...]  # the pipeline-configuration keys that apply
    gold_modes: tuple[str, ...]  # the gold modes it offers, its default first
    parse: SpecParser | None = None
    corpus: CorpusView | None = None
    state_keys: tuple[str, ...] = ()  # description keys that differ per process (a merge ignores them)
    by_name: bool = True  # chosen by its bare name (python is chosen by "package.module:factory")

    @property
    def default_gold(self) -> str:
        return self.gold_modes[0]

    @property
    def settings(self) -> SettingsCheck | None:
        """The ``--rag-set`` settings its own system takes, in every gold mode (None: none)."""
        return self.corpus.settings if self.corpus is not None and self.corpus.own else None


_KINDS: dict[str, AdapterKind] = {}


def register(kind: AdapterKind) -> AdapterKind:
    """Add (or replace) a kind; ``AdapterConfigError`` for a declaration that cannot work."""
    from rag_eval.adapters.errors import AdapterConfigError
    from rag_eval.adapters.gold import GOLD_MODES

    bad = [m for m in kind.gold_modes if m not in GOLD_MODES]
    if not kind.gold_modes or bad:
        raise AdapterConfigError(
            f"adapter kind {kind.name!r}: gold_modes {kind.gold_modes!r}; name one or more of {', '.join(GOLD_MODES)}"
        )
    if "corpus" in kind.gold_modes and kind.corpus is None:
        raise AdapterConfigError(
            f"adapter kind {kind.name!r} offers gold = 'corpus' but no CorpusView: give corpus=CorpusView(...) "
            "(how its system reads and chunks the local corpus) or drop 'corpus' from gold_modes"
        )
    _KINDS[kind.name] = kind
    return kind


def get(name: str) -> AdapterKind | None:
    return _KINDS.get(name)


def all_kinds() -> tuple[AdapterKind, ...]:
    return tuple(_KINDS.values())


def named() -> tuple[str, ...]:
    """The kinds chosen by a bare name, in registration order (for "valid: ..." messages)."""
    return tuple(k.name for k in _KINDS.values() if k.by_name)


def native_kind(gold: str) -> str | None:
    """The kind a command that reads a corpus without a system (validate, corpus-hash)
    reads it as: the first whose default gold mode is ``gold`` (it reads and chunks the
    corpus as that kind's system does), else the first that offers ``gold`` and reads no
    corpus of its own (the framework's reader of the shared layout)."""
    default = next((k.name for k in _KINDS.values() if k.default_gold == gold), None)
    plain = (k.name for k in _KINDS.values() if gold in k.gold_modes and (k.corpus is None or not k.corpus.own))
    return default or next(plain, None)


def takes_settings(name: str) -> bool:
    """Whether the kind named ``name`` is a system whose settings ``--rag-set`` changes."""
    kind = _KINDS.get(name)
    return kind is not None and kind.settings is not None


def process_state(name: str, info: Mapping[str, Any]) -> dict[str, Any]:
    """The per-process state in a description, as the kind named ``name`` declares it (under
    xdist the controller's warm-up reports its own: rag_app's index build, not the workers' load)."""
    kind = _KINDS.get(name)
    return {k: info[k] for k in (kind.state_keys if kind is not None else ()) if k in info}


def state_keys_of(name: str) -> list[str]:
    """The per-process description keys the kind named ``name`` declares, sorted (a results
    file's ``run.system_state``: what a merge of its shards may find different)."""
    kind = _KINDS.get(name)
    return sorted(kind.state_keys) if kind is not None else []


def state_keys() -> frozenset[str]:
    """Every registered kind's per-process description keys (a merge cannot tell from a
    results file whose service a relayed description came from, so it ignores them all)."""
    return frozenset(key for k in _KINDS.values() for key in k.state_keys)
