"""Read dialogue sets (JSONL, one dialogue item per line) with file:line, field and fix on every error.

The format is documented in docs/dialogue.md and docs/dialogue-set.schema.json; gold
evidence, tags, split and corpus are read exactly as for golden items
(``rag_eval.golden.load``), so one evidence format serves both.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from rag_eval.core.dialogue import DIALOGUE_ACTIONS, HINT_LEVELS, DialogueAction, HintLevel
from rag_eval.dialogue.leak import check_forbidden_phrases
from rag_eval.dialogue.model import DEFAULT_CLARIFICATION_LIMIT, Condition, DialogueItem, ExpectedTurn, KnownFact
from rag_eval.golden.load import GoldenSetError, check_length, derived_split, parse_evidence, parse_tags, read_items
from rag_eval.golden.model import SPLITS, Split

KEYS = frozenset(
    {
        "id",
        "opening",
        "context",
        "target_intent",
        "known",
        "conditions",
        "expected_turns",
        "follow_ups",
        "cannot_answer",
        "forbidden",
        "evidence",
        "material",
        "clarification_limit",
        "split",
        "tags",
        "corpus",
    }
)
TURN_KEYS = frozenset({"action", "asks", "hint_level", "intent"})
MATERIAL = ("sufficient", "insufficient")


class DialogueSetError(GoldenSetError):
    """A dialogue set cannot be used; the message names file:line, the field and the fix."""


def load_dialogue_set(path: str | Path) -> list[DialogueItem]:
    """Load every dialogue; all errors of the file are collected and raised together."""
    path = Path(path)
    if not path.is_file():
        raise DialogueSetError(f"{path}: dialogue set not found (give a JSONL file with one dialogue per line)")
    return read_items(path, parse_dialogue, DialogueSetError, "dialogue set")


def parse_dialogue(raw: Any, where: str) -> DialogueItem:
    """One dialogue item from its JSON object; ``where`` is "file:line" for messages."""
    if not isinstance(raw, dict):
        raise DialogueSetError(f"{where}: each line must be a JSON object, got {type(raw).__name__}")
    if not isinstance(raw.get("id"), str) or not raw["id"].strip():
        raise DialogueSetError(f"{where}: missing or empty required field 'id' (a non-empty string)")
    source = where
    where = f"{where} (id {raw['id']!r})"
    unknown = sorted(set(raw) - KEYS)
    if unknown:
        raise DialogueSetError(
            f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; valid fields: {', '.join(sorted(KEYS))}"
        )
    opening = raw.get("opening")
    if not isinstance(opening, str) or not opening.strip():
        raise DialogueSetError(f"{where}: missing or empty required field 'opening' (the student's first message)")
    check_length(opening, "opening", where, DialogueSetError)
    context = raw.get("context", {})
    if not isinstance(context, dict):
        raise DialogueSetError(
            f'{where}: context must be an object, e.g. {{"problem": "..."}} (the learning context on screen)'
        )
    target_intent = raw.get("target_intent")
    if target_intent is not None and (not isinstance(target_intent, str) or not target_intent.strip()):
        raise DialogueSetError(f"{where}: target_intent must be a non-empty string or absent")
    known = tuple(_known(k, f"{where} known[{i}]") for i, k in enumerate(_list(raw, "known", where)))
    conditions = tuple(_condition(c, f"{where} conditions[{i}]") for i, c in enumerate(_list(raw, "conditions", where)))
    _unique_names(known, conditions, where)
    limit = _clarification_limit(raw, where)
    names = {c.name for c in conditions}
    turns = tuple(
        _turn(t, f"{where} expected_turns[{i}]", names) for i, t in enumerate(_list(raw, "expected_turns", where))
    )
    follow_ups = tuple(_strings(raw, "follow_ups", where))
    for i, text in enumerate(follow_ups):
        check_length(text, f"follow_ups[{i}]", where, DialogueSetError)
    evidence = parse_evidence(raw, where)
    material = raw.get("material", "sufficient" if evidence else "insufficient")
    if material not in MATERIAL:
        raise DialogueSetError(f"{where}: material {material!r} is not one of {', '.join(MATERIAL)}")
    _check_script(turns, follow_ups, limit, bool(evidence), where)
    forbidden = _forbidden(raw, where)
    cannot = _cannot_answer(raw, where)
    split = raw.get("split") or derived_split(raw, evidence)
    if split not in SPLITS:
        raise DialogueSetError(f"{where}: split {split!r} is not one of {', '.join(SPLITS)}")
    corpus = raw.get("corpus") or {}
    if not isinstance(corpus, dict):
        raise DialogueSetError(f'{where}: corpus must be an object {{"name": ..., "sha256": ...}}')
    return DialogueItem(
        id=raw["id"],
        opening=opening,
        expected_turns=turns,
        context=context,
        target_intent=target_intent,
        known=known,
        conditions=conditions,
        follow_ups=follow_ups,
        cannot_answer=cannot,
        forbidden=forbidden,
        evidence=evidence,
        material_sufficient=material == "sufficient",
        clarification_limit=limit,
        split=cast(Split, split),  # checked against SPLITS above
        tags=parse_tags(raw.get("tags", {}), where),
        corpus_name=str(corpus.get("name", "")),
        corpus_sha256=str(corpus.get("sha256", "")),
        source=source,
    )


def _clarification_limit(raw: Mapping[str, Any], where: str) -> int:
    limit = raw.get("clarification_limit", DEFAULT_CLARIFICATION_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise DialogueSetError(
            f"{where}: clarification_limit must be a positive integer "
            f"(default {DEFAULT_CLARIFICATION_LIMIT}), got {limit!r}"
        )
    return limit


def _forbidden(raw: Mapping[str, Any], where: str) -> tuple[str, ...]:
    forbidden = tuple(_strings(raw, "forbidden", where))
    try:
        check_forbidden_phrases(forbidden)
    except (TypeError, ValueError) as exc:
        raise DialogueSetError(f"{where}: forbidden: {exc}") from None
    return forbidden


def _cannot_answer(raw: Mapping[str, Any], where: str) -> str:
    cannot = raw.get("cannot_answer", "")
    if not isinstance(cannot, str):
        raise DialogueSetError(
            f"{where}: cannot_answer must be a string (what the student says to a question they cannot answer)"
        )
    return cannot


def _check_script(
    turns: tuple[ExpectedTurn, ...], follow_ups: tuple[str, ...], limit: int, evidence: bool, where: str
) -> None:
    if not turns:
        raise DialogueSetError(f"{where}: expected_turns is empty; label at least the first system turn")
    if turns[-1].action == "clarify":
        raise DialogueSetError(
            f"{where}: expected_turns[{len(turns) - 1}] is the last turn and 'clarify'; "
            "add the turn that follows the student's reply (answer or state_limits)"
        )
    n_clarify = sum(t.action == "clarify" for t in turns)
    if n_clarify > limit:
        raise DialogueSetError(
            f"{where}: {n_clarify} clarifying turns exceed clarification_limit={limit}; remove turns or raise the limit"
        )
    # The student speaks between turns: after a clarifying turn with a condition reply,
    # after any other turn with the next follow-up, so every non-final non-clarify turn needs one.
    pushes = sum(t.action != "clarify" for t in turns[:-1])
    if pushes != len(follow_ups):
        raise DialogueSetError(
            f"{where}: {len(follow_ups)} follow-up(s) for {pushes} "
            "answer/state_limits turn(s) that another turn follows; "
            "give exactly one follow-up message per such turn, in order"
        )
    if not evidence and any(t.action == "answer" for t in turns):
        raise DialogueSetError(
            f"{where}: no gold evidence but an expected 'answer' turn; "
            "add evidence, or expect 'state_limits' (no material)"
        )


def _turn(raw: Any, where: str, conditions: set[str]) -> ExpectedTurn:
    if not isinstance(raw, dict):
        raise DialogueSetError(
            f'{where}: an expected turn is an object like {{"action": "clarify", "asks": ["problem"]}}'
        )
    unknown = sorted(set(raw) - TURN_KEYS)
    if unknown:
        raise DialogueSetError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; valid keys: {', '.join(sorted(TURN_KEYS))}"
        )
    action = raw.get("action")
    if action not in DIALOGUE_ACTIONS:
        raise DialogueSetError(f"{where}: action {action!r} is not one of {', '.join(DIALOGUE_ACTIONS)}")
    asks = tuple(_strings(raw, "asks", where))
    if asks and action != "clarify":
        raise DialogueSetError(f"{where}: 'asks' belongs on clarify turns only (this turn is {action!r})")
    missing = [a for a in asks if a not in conditions]
    if missing:
        raise DialogueSetError(
            f"{where}: asks {missing} not among the item's conditions ({', '.join(sorted(conditions)) or 'none'}); "
            "declare each in 'conditions'"
        )
    level = raw.get("hint_level")
    if level is not None and (action != "answer" or level not in HINT_LEVELS):
        raise DialogueSetError(
            f"{where}: hint_level {level!r} must be one of {', '.join(HINT_LEVELS)}, on answer turns only"
        )
    intent = raw.get("intent")
    if intent is not None and (not isinstance(intent, str) or not intent.strip()):
        raise DialogueSetError(f"{where}: intent must be a non-empty string")
    return ExpectedTurn(cast(DialogueAction, action), asks, cast("HintLevel | None", level), intent)


def _condition(raw: Any, where: str) -> Condition:
    if not isinstance(raw, dict) or set(raw) - {"name", "keywords", "reply"}:
        raise DialogueSetError(f'{where}: a condition is {{"name": str, "keywords": [str, ...], "reply": str or null}}')
    name, keywords = _name_and_keywords(raw, where)
    reply = raw.get("reply")
    if reply is not None and (not isinstance(reply, str) or not reply.strip()):
        raise DialogueSetError(
            f"{where}: reply must be the student's answer (a non-empty string), or null when they cannot answer"
        )
    if reply is not None:
        check_length(reply, "reply", where, DialogueSetError)
    return Condition(name, keywords, reply)


def _known(raw: Any, where: str) -> KnownFact:
    if not isinstance(raw, dict) or set(raw) - {"name", "value", "keywords"}:
        raise DialogueSetError(f'{where}: a known fact is {{"name": str, "value": str, "keywords": [str, ...]}}')
    name, keywords = _name_and_keywords(raw, where)
    if not isinstance(raw.get("value"), str) or not raw["value"].strip():
        raise DialogueSetError(f"{where}: value must be what the student already said (a non-empty string)")
    return KnownFact(name, raw["value"], keywords)


def _name_and_keywords(raw: Mapping[str, Any], where: str) -> tuple[str, tuple[str, ...]]:
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise DialogueSetError(f"{where}: missing or empty 'name'")
    keywords = _strings(raw, "keywords", where)
    if not keywords or any(not k.strip() for k in keywords):
        raise DialogueSetError(
            f"{where}: keywords must list the words (Chinese and English) that a question asking for {name!r} contains"
        )
    return name, tuple(keywords)


def _unique_names(known: tuple[KnownFact, ...], conditions: tuple[Condition, ...], where: str) -> None:
    names = [k.name for k in known] + [c.name for c in conditions]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise DialogueSetError(
            f"{where}: name(s) {dupes} used twice across known and conditions; each name must be unique"
        )


def _list(raw: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise DialogueSetError(f"{where}: {key} must be a list")
    return value


def _strings(raw: Mapping[str, Any], key: str, where: str) -> list[str]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DialogueSetError(f"{where}: {key} must be a list of strings")
    return list(value)
