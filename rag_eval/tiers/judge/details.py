"""A judge case's typed details (``$defs/judgeDetails``): the model, the engine, the verdict,
usage."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JudgeDetails:
    """A judge case's ``details`` (schema ``$defs/judgeDetails``). A verdict (pass / fail)
    has ``judge`` and ``judge_calls``; a failure (error / skip) only the model, engine,
    answer and usage. ``usage_note`` says when the server reported no token usage.
    New fields (e.g. the blame lines) go here, in the schema and in to_dict/from_dict."""

    judge_model: str
    engine: str
    answer: str
    generator: str | None = None
    judge: Mapping[str, Any] | None = None
    judge_calls: int | None = None
    judge_mode: str | None = None
    usage: Mapping[str, Any] | None = None
    usage_note: str | None = None
    blame: tuple[str, ...] | None = None  # one line per claim-level finding, chain order (judge/blame.py)
    blame_side: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"answer": self.answer}
        if self.generator is not None:
            out["generator"] = self.generator
        out.update(judge_model=self.judge_model, engine=self.engine)
        if self.judge is not None:  # a verdict: judge_mode is written even when the engine names none
            out.update(judge=dict(self.judge), judge_calls=self.judge_calls, judge_mode=self.judge_mode)
        if self.blame is not None:
            out.update(blame=list(self.blame), blame_side=self.blame_side)
        if self.usage is not None:
            out["usage"] = dict(self.usage)
        if self.usage_note is not None:
            out["usage_note"] = self.usage_note
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> JudgeDetails:
        return cls(
            str(d["judge_model"]),
            str(d["engine"]),
            str(d.get("answer", "")),
            d.get("generator"),
            d.get("judge"),
            d.get("judge_calls"),
            d.get("judge_mode"),
            d.get("usage"),
            d.get("usage_note"),
            tuple(d["blame"]) if d.get("blame") is not None else None,
            d.get("blame_side"),
        )
