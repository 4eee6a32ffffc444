"""The results schema, assembled: the core (``schema_core.json``: run, metrics, gates, the
case's common fields) plus each registered tier's fragment (``Tier.schema_fragment``).

A fragment is a JSON object with any of:

``$defs``
    definitions it adds (its details, e.g. ``passkDetails``); a name already defined by the
    core or another tier is an error;
``details``
    ``if``/``then`` entries that say which of its ``$defs`` a case of the tier holds, e.g.
    ``{"if": {"properties": {"tier": {"const": "passk"}}, "required": ["tier"]},
    "then": {"properties": {"details": {"$ref": "#/$defs/passkDetails"}}}}``;
``run``
    properties it adds under the results' ``run`` (its ``Tier.run_block``, e.g. ``judge_blame``);
``results``
    top-level properties it adds (its ``Tier.results_block``);
``metrics``
    the bounds of its numbers: ``case``, the schema of a case's ``metrics`` object (e.g.
    ``{"$ref": "#/$defs/rateMetrics"}``: every one a rate), and ``aggregate``, the schema of
    each ``<tier>.<key>`` of ``metrics`` and of its ``metrics_n`` value (e.g.
    ``{"$ref": "#/$defs/nullableRate"}``); ``<tier>.measured_count`` stays a count. The
    bounds themselves are the core's ``$defs`` (``rate``, ``count``, ``duration``, ``amount``).

``rag_eval/results.schema.json`` is the schema assembled from the built-in tiers: the file
that ships and that external readers validate with; ``tests/rag_eval/test_results_schema.py``
rebuilds it and compares (``python -m rag_eval.results.schema`` writes it). A run validates
against the schema of the tiers registered in it, so a tier of a project's own is checked
by its own fragment.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rag_eval import tiers
from rag_eval.core.errors import ConfigError

CORE_PATH = Path(__file__).resolve().parent / "schema_core.json"  # package data
SHIPPED_PATH = Path(__file__).resolve().parent.parent / "results.schema.json"  # package data: the assembled file
FRAGMENT_KEYS = ("$defs", "details", "run", "results", "metrics")


def core() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CORE_PATH.read_text(encoding="utf-8"))
    return data


def assemble(base: Mapping[str, Any], fragments: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """``base`` (the core) with each (tier name, fragment) added, in the order given."""
    out = copy.deepcopy(dict(base))
    defs = out["$defs"]
    entries = defs["case"]["allOf"][0]["else"]["allOf"]
    run = defs["run"]["properties"]
    top = out["properties"]
    for name, fragment in fragments:
        unknown = sorted(set(fragment) - set(FRAGMENT_KEYS))
        if unknown:
            raise ConfigError(
                f"tier {name!r}: its schema fragment has {', '.join(map(repr, unknown))}; "
                f"a fragment takes {', '.join(FRAGMENT_KEYS)} (rag_eval.results.schema)"
            )
        for key, into in (("$defs", defs), ("run", run), ("results", top)):
            for item, value in (fragment.get(key) or {}).items():
                if item in into:
                    raise ConfigError(
                        f"tier {name!r}: its schema fragment's {key} {item!r} is already defined; "
                        "give it a name of its own"
                    )
                into[item] = copy.deepcopy(value)
        entries.extend(copy.deepcopy(list(fragment.get("details") or ())))
        _bound_metrics(out, name, fragment.get("metrics") or {})
    return out


def _bound_metrics(schema: dict[str, Any], tier: str, bounds: Mapping[str, Any]) -> None:
    """A tier's cases' ``metrics`` are ``bounds["case"]``; every ``<tier>.<key>`` aggregate
    but ``<tier>.measured_count`` (a count) is ``bounds["aggregate"]``."""
    if "case" in bounds:
        schema["$defs"]["case"]["allOf"].append(
            {
                "if": {"properties": {"tier": {"const": tier}}, "required": ["tier"]},
                "then": {"properties": {"metrics": copy.deepcopy(bounds["case"])}},
            }
        )
    if "aggregate" in bounds:
        pattern = f"^{re.escape(tier)}\\.(?!measured_count$)"
        top = schema["properties"]
        top["metrics"].setdefault("patternProperties", {})[pattern] = copy.deepcopy(bounds["aggregate"])
        top["metrics_n"].setdefault("patternProperties", {})[pattern] = {
            "$ref": "#/$defs/metricValue",
            "properties": {"value": copy.deepcopy(bounds["aggregate"])},
        }


def results_schema() -> dict[str, Any]:
    """The schema of the tiers registered now (the built-in ones: the shipped file)."""
    return assemble(core(), ((t.name, t.schema_fragment()) for t in tiers.all_tiers()))


def schema_text(schema: Mapping[str, Any]) -> str:
    """The schema as the shipped file holds it."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # python -m rag_eval.results.schema: rewrite the shipped file
    SHIPPED_PATH.write_text(schema_text(results_schema()), encoding="utf-8")
    print(f"wrote {SHIPPED_PATH}")
