"""Read golden sets (JSONL) into ``GoldenItem``s, with file:line on every error.

Two layouts are accepted line by line: the project's own (``evidence`` groups, key
facts, tags, split, corpus) and the layout of the shared external datasets
(``gold_doc_ids``, ``answers``, ``is_impossible`` ...), which loads as it is.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from rag_eval.golden.model import (
    ACTIONS,
    SPLITS,
    EvidenceGroup,
    EvidenceRef,
    GoldenItem,
    KeyFact,
    Split,
)
from rag_eval.util.utf8 import NotUtf8Error, decode

OWN_KEYS = frozenset(
    {
        "id",
        "question",
        "history",
        "tags",
        "evidence",
        "gold_chunk_ids",
        "gold_doc_ids",
        "key_facts",
        "reference_answer",
        "answers",
        "must_contain",
        "must_not_contain",
        "expected_action",
        "split",
        "corpus",
    }
)
# The longest question (and history turn, dialogue opening, follow-up or reply) a set may
# hold, in characters (docs/golden-sets.md#limits): an embedder's time grows faster than
# linearly with length, so one pasted 5 MB question would hold the whole run.
MAX_QUESTION_CHARS = 8_000

# Keys of the shared datasets' qa.jsonl that we read or carry along as extra data.
SHARED_EXTRA_KEYS = frozenset({"qtype", "year", "is_impossible", "source_doc_id"})
# Written by the authoring commands (docs/golden-sets.md#keeping-gold-true), carried as extra
# data: where a drafted item came from, and every review decision about the item, in order.
REVIEW_KEYS = frozenset({"provenance", "review"})


class GoldenSetError(ValueError):
    """A golden set cannot be used; the message names file:line and the fix."""


def load_golden_set(path: str | Path) -> list[GoldenItem]:
    """Load every item; all errors of the file are collected and raised together."""
    path = Path(path)
    if not path.is_file():
        raise GoldenSetError(f"{path}: golden set not found (give a JSONL file with one item per line)")
    return read_items(path, parse_item, GoldenSetError, "golden set")


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


ItemT = TypeVar("ItemT", bound=_HasId)


def read_items(path: Path, parse: Callable[[Any, str], ItemT], error: type[GoldenSetError], what: str) -> list[ItemT]:
    """One item per non-blank JSONL line, parsed by ``parse(raw, "file:line")``; every bad
    line (UTF-8, JSON, fields, duplicate id, ids equal but for Unicode normalisation) is
    collected and raised together as ``error``. A UTF-8 byte-order mark is allowed."""
    items: list[ItemT] = []
    errors: list[str] = []
    seen: dict[str, int] = {}
    normal: dict[str, tuple[str, int]] = {}  # NFC form -> (id, line)
    with path.open("rb") as fh:
        for lineno, data in enumerate(fh, 1):
            where = f"{path}:{lineno}"
            line = _decoded(data, path, lineno, errors)
            if line is None or not line.strip():
                continue
            raw = _json(line, where, errors)
            if raw is _UNREAD:
                continue
            try:
                item = parse(raw, where)
            except GoldenSetError as exc:
                errors.append(str(exc))
                continue
            if item.id in seen:
                errors.append(f"{where}: duplicate id {item.id!r} (first at line {seen[item.id]}); ids must be unique")
                continue
            twin = normal.get(unicodedata.normalize("NFC", item.id))
            if twin is not None:
                errors.append(
                    f"{where}: id {item.id!r} differs from id {twin[0]!r} (line {twin[1]}) only by Unicode "
                    "normalisation (NFC/NFD): they look the same in every report; make the ids distinct"
                )
                continue
            seen[item.id] = lineno
            normal[unicodedata.normalize("NFC", item.id)] = (item.id, lineno)
            items.append(item)
    if errors:
        raise error("\n".join(errors[:50]) + (f"\n… and {len(errors) - 50} more" if len(errors) > 50 else ""))
    if not items:
        raise error(f"{path}: the {what} is empty")
    return items


def _decoded(data: bytes, path: Path, lineno: int, errors: list[str]) -> str | None:
    """A line's text (the file's byte-order mark dropped), or None with the error naming the bad byte's column."""
    try:
        return decode(data, str(path), lineno, bom=lineno == 1)
    except NotUtf8Error as exc:
        errors.append(str(exc))
        return None


_UNREAD = object()


def _json(line: str, where: str, errors: list[str]) -> Any:
    """A line's JSON value, or ``_UNREAD`` with an error (the decoder's reason and column)."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        # json's own messages may end in "at" ("Invalid control character at"): the column completes them
        reason = exc.msg[:-3] if exc.msg.endswith(" at") else exc.msg
        errors.append(f"{where}: not valid JSON ({reason} at column {exc.colno})")
    except RecursionError:
        errors.append(
            f"{where}: nested too deeply to read (arrays or objects inside each other thousands of times); "
            "an item needs a few levels"
        )
    return _UNREAD


def parse_item(raw: Any, where: str) -> GoldenItem:
    if not isinstance(raw, dict):
        raise GoldenSetError(f"{where}: each line must be a JSON object, got {type(raw).__name__}")
    if not isinstance(raw.get("id"), str) or not raw["id"].strip():
        raise GoldenSetError(f"{where}: missing or empty required field 'id' (a non-empty string)")
    item_id = raw["id"]
    # From here on every message names the item as well as its line.
    where = f"{where} (id {item_id!r})"
    if not isinstance(raw.get("question"), str) or not raw["question"].strip():
        raise GoldenSetError(f"{where}: missing or empty required field 'question' (a non-empty string)")
    check_length(raw["question"], "question", where)
    unknown = sorted(set(raw) - OWN_KEYS - SHARED_EXTRA_KEYS - REVIEW_KEYS)
    if unknown:
        raise GoldenSetError(
            f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; "
            f"valid fields: {', '.join(sorted(OWN_KEYS | SHARED_EXTRA_KEYS | REVIEW_KEYS))}"
        )
    _check_review(raw, where)
    evidence = parse_evidence(raw, where)
    tags = parse_tags(raw.get("tags", {}), where)
    action = raw.get("expected_action", "refuse" if not evidence else "answer")
    if action not in ACTIONS:
        raise GoldenSetError(f"{where}: expected_action {action!r} is not one of {', '.join(ACTIONS)}")
    if "scenario" not in tags:
        tags["scenario"] = "negative" if not evidence else "standard"
    split = raw.get("split") or derived_split(raw, evidence)
    if split not in SPLITS:
        raise GoldenSetError(f"{where}: split {split!r} is not one of {', '.join(SPLITS)}")
    corpus = raw.get("corpus") or {}
    if not isinstance(corpus, dict):
        raise GoldenSetError(f'{where}: corpus must be an object {{"name": ..., "sha256": ...}}')
    answers = _str_list(raw, "answers", where)
    reference = raw.get("reference_answer") or ""  # null for unanswerable SQuAD 2.0 items
    if not isinstance(reference, str):
        raise GoldenSetError(f"{where}: reference_answer must be a string")
    return GoldenItem(
        id=item_id,
        question=raw["question"],
        evidence=evidence,
        history=_history(raw.get("history", []), where),
        tags=tags,
        key_facts=_key_facts(raw.get("key_facts", []), where),
        reference_answer=reference,
        answers=tuple(answers),
        must_contain=tuple(_str_list(raw, "must_contain", where)),
        must_not_contain=tuple(_str_list(raw, "must_not_contain", where)),
        expected_action=action,
        split=cast(Split, split),  # checked against SPLITS above
        corpus_name=str(corpus.get("name", "")),
        corpus_sha256=str(corpus.get("sha256", "")),
        source=where.split(" (id")[0],
        extra={k: raw[k] for k in SHARED_EXTRA_KEYS | REVIEW_KEYS if k in raw},
    )


def _check_review(raw: Mapping[str, Any], where: str) -> None:
    if "provenance" in raw and not isinstance(raw["provenance"], dict):
        raise GoldenSetError(f"{where}: provenance must be an object (python -m rag_eval accept writes it)")
    review = raw.get("review", [])
    if not isinstance(review, list) or not all(isinstance(r, dict) for r in review):
        raise GoldenSetError(
            f'{where}: review is a list of decisions like {{"decision": ..., "reviewer": ..., "time": ...}}'
        )


def derived_split(raw: Mapping[str, Any], evidence: tuple[EvidenceGroup, ...]) -> str:
    """Items without a split get one from a hash of their source document, so that
    all questions about one document land in the same split (no tune/holdout leak).

    holdout iff sha256('rag-eval-split-v1|' + key) % 3 == 0, keyed by the first gold
    document's article (the part of the doc id before '#'). The salt differs from the
    shared datasets' own 'holdout-v1' rule on purpose: their public files are exactly
    the items that rule did *not* hold out, so reusing it would put everything in tune.
    """
    key = (
        raw.get("source_doc_id") or next((r.doc_id for g in evidence for r in g.any_of if r.doc_id), None) or raw["id"]
    )
    key = str(key).split("#")[0]
    digest = int(hashlib.sha256(f"rag-eval-split-v1|{key}".encode()).hexdigest(), 16)
    return "holdout" if digest % 3 == 0 else "tune"


def _ref(raw: Any, where: str) -> EvidenceRef:
    if isinstance(raw, str):
        return EvidenceRef(chunk_id=raw)
    if not isinstance(raw, dict):
        raise GoldenSetError(f'{where}: evidence entries are objects like {{"doc_id": ..., "quote": ...}}')
    unknown = set(raw) - {"chunk_id", "doc_id", "quote"}
    if unknown:
        raise GoldenSetError(f"{where}: unknown evidence key(s) {sorted(unknown)}; use chunk_id, doc_id, quote")
    for key in ("chunk_id", "doc_id", "quote"):
        if key in raw and not isinstance(raw[key], str):
            raise GoldenSetError(f"{where}: evidence {key} must be a string, got {raw[key]!r}")
    ref = EvidenceRef(chunk_id=raw.get("chunk_id"), doc_id=raw.get("doc_id"), quote=raw.get("quote"))
    if not ref.chunk_id and not ref.doc_id:
        raise GoldenSetError(f"{where}: an evidence entry needs chunk_id or doc_id")
    if ref.quote is not None and (not ref.doc_id or not ref.quote.strip()):
        raise GoldenSetError(f"{where}: a quote needs its doc_id and must not be empty")
    return ref


def parse_evidence(raw: Mapping[str, Any], where: str) -> tuple[EvidenceGroup, ...]:
    """An item's gold evidence (``evidence``, ``gold_chunk_ids``, ``gold_doc_ids``) as requirements."""
    groups: list[EvidenceGroup] = []
    ev = raw.get("evidence", [])
    if not isinstance(ev, list):
        raise GoldenSetError(f"{where}: evidence must be a list of requirements")
    for entry in ev:
        if isinstance(entry, dict) and "any_of" in entry:
            alts = entry["any_of"]
            if not isinstance(alts, list) or not alts:
                raise GoldenSetError(f"{where}: any_of must be a non-empty list")
            groups.append(EvidenceGroup(tuple(_ref(a, where) for a in alts)))
        else:
            groups.append(EvidenceGroup((_ref(entry, where),)))
    for cid in _str_list(raw, "gold_chunk_ids", where):
        groups.append(EvidenceGroup((EvidenceRef(chunk_id=cid),)))
    docs = _str_list(raw, "gold_doc_ids", where)
    if docs:
        # Shared-layout semantics: several gold docs are alternative solutions of one problem.
        groups.append(EvidenceGroup(tuple(EvidenceRef(doc_id=d) for d in docs)))
    return tuple(groups)


def parse_tags(raw: Any, where: str) -> dict[str, str]:
    """An item's ``tags``: an object, or a list of ``key:value`` strings."""
    if isinstance(raw, list):  # ["scenario:standard", "topic:sequences"] is accepted too
        out: dict[str, str] = {}
        for t in raw:
            key, sep, value = str(t).partition(":")
            out[key if sep else "tag"] = value if sep else key
        return out
    if not isinstance(raw, dict):
        raise GoldenSetError(f'{where}: tags must be an object like {{"scenario": "standard"}}')
    return {str(k): str(v) for k, v in raw.items()}


def _key_facts(raw: Any, where: str) -> tuple[KeyFact, ...]:
    if not isinstance(raw, list):
        raise GoldenSetError(f"{where}: key_facts must be a list")
    facts = []
    for f in raw:
        if isinstance(f, str):
            facts.append(KeyFact(f))
        elif isinstance(f, dict) and isinstance(f.get("fact"), str):
            src = f.get("source")
            facts.append(KeyFact(f["fact"], _ref(src, where) if src is not None else None))
        else:
            raise GoldenSetError(f'{where}: a key fact is a string or {{"fact": ..., "source": {{...}}}}')
    return tuple(facts)


def _history(raw: Any, where: str) -> tuple[dict[str, str], ...]:
    if not isinstance(raw, list) or any(
        not isinstance(t, dict) or t.get("role") not in ("user", "assistant") or not isinstance(t.get("content"), str)
        for t in raw
    ):
        raise GoldenSetError(f'{where}: history is a list of {{"role": "user"|"assistant", "content": ...}}')
    for i, turn in enumerate(raw):
        check_length(turn["content"], f"history[{i}].content", where)
    return tuple({"role": t["role"], "content": t["content"]} for t in raw)


def check_length(text: str, field: str, where: str, error: type[GoldenSetError] = GoldenSetError) -> None:
    """A text the system under test is sent is at most ``MAX_QUESTION_CHARS`` long."""
    if len(text) > MAX_QUESTION_CHARS:
        raise error(
            f"{where}: {field} is {len(text):,} characters, more than the limit of {MAX_QUESTION_CHARS:,} "
            "(docs/golden-sets.md#limits); shorten it: a question this long is a pasted document, not a question"
        )


def _str_list(raw: Mapping[str, Any], key: str, where: str) -> list[str]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise GoldenSetError(f"{where}: {key} must be a list of strings")
    return list(value)
