"""Field paths into a JSON response: ``records[].segment.id``, ``data.items[0].text``.

Grammar: dot-separated keys, each followed by ``[]`` (every element) or ``[N]`` (one
element); a leading ``?`` makes the path optional (a missing key gives null instead
of an error). A path with ``[]`` yields one value per element; ``ranked`` pairs the
id path with shallower paths by broadcasting (``records[].segment.document_id``
gives each child of ``records[].child_chunks[].id`` its record's document).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag_eval.adapters.errors import AdapterConfigError

_SEGMENT = re.compile(r"^([^.\[\]]*)((?:\[\d*\])*)$")
_BRACKET = re.compile(r"\[(\d*)\]")


class FieldError(ValueError):
    """A response lacks a configured field; the message names the path and where it broke."""


@dataclass(frozen=True)
class FieldPath:
    text: str
    steps: tuple[tuple[str, Any], ...]  # ("key", name) | ("each", None) | ("index", n)
    optional: bool = False

    @property
    def depth(self) -> int:
        return sum(1 for kind, _ in self.steps if kind == "each")

    @classmethod
    def parse(cls, text: Any, where: str) -> FieldPath:
        if not isinstance(text, str) or not text.strip("?").strip():
            raise AdapterConfigError(
                f"{where}: a field path must be a non-empty string like 'items[].id', got {text!r}"
            )
        optional = text.startswith("?")
        body = text[1:] if optional else text
        steps: list[tuple[str, Any]] = []
        for n, segment in enumerate(body.split(".")):
            m = _SEGMENT.match(segment)
            if m is None or (not m.group(1) and not (n == 0 and m.group(2))):
                raise AdapterConfigError(
                    f"{where}: bad field path {text!r} at {segment!r}: use dot-separated keys, each optionally "
                    "followed by [] (every element) or [N] (element N), e.g. 'records[].segment.id'"
                )
            if m.group(1):
                steps.append(("key", m.group(1)))
            for index in _BRACKET.findall(m.group(2)):
                steps.append(("each", None) if index == "" else ("index", int(index)))
        return cls(text, tuple(steps), optional)

    def get(self, data: Any) -> Any:
        """The value(s): nested lists, one level per ``[]``."""
        return self._walk(data, 0, "")

    def _walk(self, node: Any, i: int, trail: str) -> Any:
        if i == len(self.steps):
            return node
        kind, arg = self.steps[i]
        if kind == "key":
            if not isinstance(node, Mapping) or arg not in node:
                if self.optional:
                    return None if self._depth_from(i) == 0 else []
                got = f"keys {sorted(node)[:12]}" if isinstance(node, Mapping) else f"a {type(node).__name__}"
                raise FieldError(f"field {self.text!r}: no key {arg!r} at {trail or 'the top level'} (found {got})")
            return self._walk(node[arg], i + 1, f"{trail}.{arg}" if trail else arg)
        if node is None:  # a null list is an empty list
            if kind == "each" or self.optional:
                return [] if kind == "each" else None
        if not isinstance(node, list):
            raise FieldError(
                f"field {self.text!r}: expected a list at {trail or 'the top level'}, found {type(node).__name__}"
            )
        if kind == "index":
            if not -len(node) <= arg < len(node):
                if self.optional:
                    return None
                raise FieldError(f"field {self.text!r}: {trail}[{arg}] is out of range (the list has {len(node)})")
            return self._walk(node[arg], i + 1, f"{trail}[{arg}]")
        return [self._walk(x, i + 1, f"{trail}[{n}]") for n, x in enumerate(node)]

    def _depth_from(self, i: int) -> int:
        return sum(1 for kind, _ in self.steps[i:] if kind == "each")


def optional_path(table: Mapping[str, Any], key: str, where: str) -> FieldPath | None:
    value = table.get(key)
    return None if value is None else FieldPath.parse(value, f"{where}.{key}")


def leaves(value: Any, depth: int) -> list[tuple[tuple[int, ...], Any]]:
    """Every innermost value with its index tuple (one index per ``[]``)."""
    if depth == 0:
        return [((), value)]
    out: list[tuple[tuple[int, ...], Any]] = []
    for i, v in enumerate(value if isinstance(value, list) else []):
        out.extend(((i, *idx), x) for idx, x in leaves(v, depth - 1))
    return out


def pick(path: FieldPath, value: Any, index: tuple[int, ...], primary: str) -> Any:
    """The value of a (shallower or equal) path for the element at ``index``."""
    for level in range(path.depth):
        if not isinstance(value, list) or index[level] >= len(value):
            if path.optional:
                return None
            raise FieldError(
                f"field {path.text!r} has fewer values than {primary!r} (no element {list(index[: level + 1])})"
            )
        value = value[index[level]]
    return value
