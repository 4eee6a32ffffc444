"""Your pipeline in process: ``pipeline = "package.module:factory"``.

``factory`` is any callable (a function or a class). It is called once per process,
with no argument if it takes none, else with one: the ``[options]`` table of the
pipeline configuration file (an empty dict without one; a factory whose parameter has a
default is then called without it, so the default holds). It returns an object with

    def retrieve(self, question: str, top_k: int | None = None) -> Retrieval   # required
    def chat(self, question, top_k=None, history=()) -> Answer                # optional
    def describe(self) -> dict                                                  # optional
    def dialogue(self, turns, context) -> DialogueTurn                          # optional (docs/dialogue.md)
    def lookup(self, ids: Collection[str]) -> Collection[str]                   # optional: which ids it holds
    stages = [["dense", "sparse"], "hybrid", "final"]                           # optional

A factory may instead return a Haystack ``Pipeline``, a LangChain retriever or
runnable, or a LlamaIndex retriever or query engine: its adapter
(``rag_eval.adapters.frameworks``) speaks this contract for it.

(``stages``: its stages in order, side-by-side ones grouped, optionally as a mapping
``{"stages": [...], "final": "final", "thresholded": "dense"}``; see rag_eval.core.stages.)
(see ``rag_eval.core.contract``; plain dicts of the same shape work too). Import, attribute
and signature problems are found before any case runs; a wrong return shape on the
first call that shows it, with the expected shape in the message.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from rag_eval.adapters.errors import AdapterConfigError
from rag_eval.adapters.frameworks import adapt, package_hint
from rag_eval.core.contract import (
    CHAT_SIGNATURE,
    RETRIEVE_SIGNATURE,
    Answer,
    ContractError,
    Retrieval,
    as_answer,
    as_retrieval,
)
from rag_eval.core.dialogue import DIALOGUE_SIGNATURE, DialogueTurn, as_dialogue_turn
from rag_eval.core.errors import ConfigError
from rag_eval.core.stages import StageSpec, parse_stages


def load_factory(target: str, where: str) -> Callable[..., Any]:
    """Import ``package.module:attribute`` and check it can be called with 0 or 1 argument."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise AdapterConfigError(
            f"{where}: {target!r} is not 'package.module:factory' (module path, a colon, a callable)"
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is a configuration error
        missing = exc.name if isinstance(exc, ModuleNotFoundError) and exc.name else ""
        hint = package_hint(missing) if missing else ""
        raise AdapterConfigError(
            f"{where}: cannot import module {module_name!r} ({type(exc).__name__}: {exc})"
            + (hint or "; is its folder on sys.path (pytest's pythonpath ini option, or an installed package)?")
        ) from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = ", ".join(n for n in dir(module) if not n.startswith("_"))[:300]
            raise AdapterConfigError(f"{where}: module {module_name!r} has no attribute {attr!r} (it has: {names})")
        obj = getattr(obj, part)
    if not callable(obj):
        raise AdapterConfigError(f"{where}: {target!r} is a {type(obj).__name__}, not a callable factory")
    if _arity(obj) is None:
        raise AdapterConfigError(
            f"{where}: {target!r} must be callable with no argument or with one (the [options] table); "
            f"its signature is {_signature(obj)}"
        )
    if inspect.isclass(obj):
        check_methods(obj, target, where)
        check_dialogue(obj, target, where)
    return obj


def check_methods(obj: Any, target: str, where: str) -> tuple[bool, bool]:
    """(answers, chat takes history): ``retrieve`` required, ``chat`` optional."""
    retrieve = getattr(obj, "retrieve", None)
    if not callable(retrieve):
        raise AdapterConfigError(f"{where}: {target} has no method retrieve; expected `{RETRIEVE_SIGNATURE}`")
    bound = inspect.isclass(obj)
    if not _accepts(retrieve, ("q", 5), bound):
        raise AdapterConfigError(
            f"{where}: {target}.retrieve{_signature(retrieve)} cannot be called as retrieve(question, top_k); "
            f"expected `{RETRIEVE_SIGNATURE}`"
        )
    chat = getattr(obj, "chat", None)
    if chat is None:
        return False, False
    if not callable(chat) or not _accepts(chat, ("q", 5), bound):
        raise AdapterConfigError(
            f"{where}: {target}.chat{_signature(chat)} cannot be called "
            f"as chat(question, top_k); expected `{CHAT_SIGNATURE}`"
        )
    return True, _accepts(chat, ("q", 5, ()), bound)


def check_dialogue(obj: Any, target: str, where: str) -> bool:
    """Whether ``obj`` has the optional dialogue call; one that cannot be called as
    ``dialogue(turns, context)`` is a configuration error."""
    dialogue = getattr(obj, "dialogue", None)
    if dialogue is None:
        return False
    if not callable(dialogue) or not _accepts(dialogue, ((), {}), inspect.isclass(obj)):
        raise AdapterConfigError(
            f"{where}: {target}.dialogue{_signature(dialogue)} cannot be called as dialogue(turns, context); "
            f"expected `{DIALOGUE_SIGNATURE}`"
        )
    return True


class PythonSystem:
    """Wraps the user's object: checks its methods once, coerces every return value."""

    def __init__(
        self, target: str, options: Mapping[str, Any], where: str, framework: Mapping[str, Any] | None = None
    ) -> None:
        factory = load_factory(target, where)
        try:
            obj = factory(dict(options)) if _takes_options(factory, options) else factory()
        except AdapterConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 - name the factory that failed
            raise AdapterConfigError(f"{where}: {target}() raised {type(exc).__name__}: {exc}") from exc
        obj = adapt(obj, target, where, framework or {})  # a framework's object: its adapter
        self.answers, self._history = check_methods(obj, target, where)
        self.converses = check_dialogue(obj, target, where)
        self.target = target
        self.obj = obj
        # how many calls the object takes at once (checked by the session); absent: one at a time
        self.concurrency = getattr(obj, "concurrency", None)
        declared = getattr(obj, "stages", None)
        try:
            self.stages: StageSpec | None = (
                parse_stages(declared, where=f"{target} .stages") if declared is not None else None
            )
        except ConfigError as exc:
            raise AdapterConfigError(f"{where}: {exc}") from None

    def retrieve(self, question: str, top_k: int | None = None) -> Retrieval:
        return as_retrieval(
            self.obj.retrieve(question, top_k), f"{self.target} retrieve() [expected `{RETRIEVE_SIGNATURE}`]"
        )

    def chat(self, question: str, top_k: int | None = None, history: Sequence[Mapping[str, str]] = ()) -> Answer:
        if not self.answers:
            raise AdapterConfigError(f"{self.target} has no chat method; expected `{CHAT_SIGNATURE}`")
        raw = self.obj.chat(question, top_k, list(history)) if self._history else self.obj.chat(question, top_k)
        return as_answer(raw, f"{self.target} chat() [expected `{CHAT_SIGNATURE}`]")

    def dialogue(self, turns: Sequence[Mapping[str, str]], context: Mapping[str, Any]) -> DialogueTurn:
        if not self.converses:
            raise AdapterConfigError(f"{self.target} has no dialogue method; expected `{DIALOGUE_SIGNATURE}`")
        raw = self.obj.dialogue([dict(t) for t in turns], dict(context))
        return as_dialogue_turn(raw, f"{self.target} dialogue() [expected `{DIALOGUE_SIGNATURE}`]")

    @property
    def can_lookup(self) -> bool:
        """Whether the object can say which ids it holds (``lookup``; an adapter's
        ``can_lookup`` may say its stores cannot)."""
        return callable(getattr(self.obj, "lookup", None)) and bool(getattr(self.obj, "can_lookup", True))

    def lookup(self, ids: Collection[str]) -> set[str]:
        """The ids among ``ids`` the object holds (``lookup`` of the contract)."""
        held = self.obj.lookup(list(ids))
        if isinstance(held, (str, bytes)) or not isinstance(held, Iterable):
            raise ContractError(f"{self.target} lookup() returned {type(held).__name__}; expected a collection of ids")
        return {str(i) for i in held}

    def describe(self) -> dict[str, Any]:
        info = self.obj.describe() if callable(getattr(self.obj, "describe", None)) else {}
        return {"adapter": "python", "factory": self.target, **dict(info or {})}


def _arity(fn: Callable[..., Any]) -> int | None:
    """1 if ``fn`` can take one positional argument (preferred), 0 if only none, else None."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 0
    for args in ((None,), ()):
        try:
            sig.bind(*args)
            return len(args)
        except TypeError:
            continue
    return None


def _takes_options(factory: Callable[..., Any], options: Mapping[str, Any]) -> bool:
    """Pass the ``[options]`` table when the factory needs one argument, or when it can
    take one and the configuration has options; a factory whose only parameter has a
    default (``class Retriever: def __init__(self, top=10)``) keeps that default when
    there is no ``[options]`` table, instead of receiving ``{}``."""
    if _arity(factory) != 1:
        return False
    if options:
        return True
    try:
        inspect.signature(factory).bind()
    except (TypeError, ValueError):
        return True  # its parameter is required (or its signature unknown): give it {}
    return False


def _accepts(method: Callable[..., Any], args: tuple[Any, ...], unbound: bool) -> bool:
    try:
        sig = inspect.signature(method)
    except (TypeError, ValueError):
        return True  # builtins without a signature: trust them
    try:
        sig.bind(*(((None,) if unbound else ()) + args))
    except TypeError:
        return False
    return True


def _signature(fn: Any) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return "(...)"
