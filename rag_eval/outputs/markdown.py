"""The Markdown summary of a results file: for $GITHUB_STEP_SUMMARY and a PR comment.

What a reviewer needs on the pull request page without opening an artifact: the
verdict, what was measured (commit, dataset, system), every gate with its n and its
change against the baseline, where the failing cases failed, and which cases stopped
passing. Every piece of user or model text (questions, messages, system names) is
escaped for GitHub Markdown and kept on one line, and long lists are cut with
"… and N more" so the text stays under ``max_chars`` (a PR comment holds 65,536).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval.core.case import CaseResult
from rag_eval.gates.gate import row_pulling_down
from rag_eval.gates.result import NO_NEW_FAILURES, GateResult
from rag_eval.judge.blame import RUN_KEY as BLAME_KEY
from rag_eval.judge.blame import summary_line
from rag_eval.outputs.header import run_optional
from rag_eval.outputs.labels import LabelRow, confidence_of, label_rows
from rag_eval.outputs.reasons import Statistics
from rag_eval.outputs.writers import Context, register
from rag_eval.results.baseline import tier_notes
from rag_eval.results.model import RunResults
from rag_eval.util.escape import terminal

MARKER = "<!-- rag-eval-summary -->"
QUESTION_CHARS = 120
MESSAGE_CHARS = 160
REASON_CHARS = 120
COUNT_KEYS = frozenset({"fail_count", "flaky_count", "no_new_failures"})
VERDICTS: dict[str, str] = {
    "pass": "✅ rag-eval gate: PASSED",
    "fail": "❌ rag-eval gate: FAILED",
    "incomplete": "⚠️ rag-eval gate: INCOMPLETE (the run was stopped; no verdict)",
    "shard": "ℹ️ rag-eval: one shard (gates are evaluated on the merged results)",
}
# HTML-significant characters become entities; of the ASCII punctuation CommonMark lets
# be backslash-escaped, these would otherwise start code, emphasis, links, table
# cells, GitHub maths or strikethrough. One translate pass does both.
_INERT = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", **{ch: "\\" + ch for ch in "\\`*_[]|$~"}})
_WHITESPACE = re.compile(r"\s+")
# "@name" mentions a user and "#12" links an issue (both notify from a PR comment);
# "recall@5" and "C#" do neither, so they stay as they are.
_MENTION = re.compile(r"(?<![A-Za-z0-9])([@#])(?=[A-Za-z0-9])")


def escape(text: Any) -> str:
    """User text as inert, one-line GitHub Markdown.

    ``<``, ``>``, ``&`` become entities (no HTML, no ``<script>``), Markdown punctuation
    is backslash-escaped, newlines and runs of whitespace become one space, and a
    zero-width space after the ``@`` of ``@name`` and the ``#`` of ``#12`` keeps a
    question from mentioning a user or linking an issue from the PR comment. Control,
    zero-width and bidi characters are shown as their ``\\u....`` escapes
    (``escape.terminal``): a right-to-left override in a question cannot reverse the
    rest of the summary.
    """
    s = terminal(_WHITESPACE.sub(" ", str(text)).strip(), keep_newlines=False).translate(_INERT)
    return _MENTION.sub(_mention, s) if ("@" in s or "#" in s) else s


def _mention(m: re.Match[str]) -> str:
    return m.group(1) + "\u200b"


_CODE_SAFE = re.compile(r"[A-Za-z0-9._:/+=-]+")


def code(text: Any) -> str:
    """A code span for ids and hashes; escaped plain text when the value has other
    characters (backslash escapes do not work inside a code span)."""
    s = str(text)
    return f"`{s}`" if _CODE_SAFE.fullmatch(s) else escape(s)


def shorten(text: Any, limit: int) -> str:
    """Cut before escaping, so that no entity or escape is cut in half."""
    s = _WHITESPACE.sub(" ", str(text)).strip()
    return s if len(s) <= limit else s[: max(limit - 1, 0)].rstrip() + "…"


def render_markdown(results: RunResults, artifact_url: str | None = None, max_chars: int = 60000) -> str:
    """The summary of ``results`` (with ``baseline`` when one was compared)."""
    base = results.baseline
    head = [
        MARKER,
        _verdict_line(results),
        "",
        _run_line(results),
        "",
        _baseline_line(base) if base else _no_baseline_line(results),
    ]
    tail = ["", f"Full report and results: [artifact]({_url(artifact_url)})"] if artifact_url else []
    budget = max_chars - _size(head) - _size(tail)
    body: list[str] = []
    for section in _sections(results):
        used = _fit_section(section, budget - _size(body))
        if not used:
            break
        body.extend(used)
    text = "\n".join(head + body + tail) + "\n"
    if len(text) > max_chars:  # only when max_chars is smaller than the fixed lines
        text = text[: max(max_chars - 2, 0)] + "…\n"
    return text


# --------------------------------------------------------------------------- header


def _verdict_line(results: RunResults) -> str:
    verdict = results.verdict
    gates = results.gates
    failed = sum(1 for g in gates if not g.passed)
    title = VERDICTS[verdict]
    count = f" ({len(gates) - failed}/{len(gates)} gates passed)" if gates else " (no gates evaluated)"
    return f"## {title}{count if verdict in ('pass', 'fail') else ''}"


def _run_line(results: RunResults) -> str:
    run = results.run
    commit = run["commit"]
    parts = [f"commit {code(str(commit)[:12])}" if commit else "commit unknown"]
    if run["dirty"]:
        parts[0] += " (uncommitted changes)"
    dataset = run["dataset"]
    name = escape(re.split(r"[\\/]", str(dataset).rstrip("/\\"))[-1]) if dataset else "unknown"
    parts.append(f"dataset {name}, fingerprint {code(run['dataset_fingerprint'])}")
    n_cases = sum(1 for c in results.cases if c.outcome != "skip")
    parts.append(f"{n_cases} cases run")
    if run["split"] not in (None, "all") or run["tags"]:
        parts.append(f"split {escape(run['split'])}, tags {escape(', '.join(map(str, run['tags'])) or 'none')}")
    system = run["system"]
    if system:
        shown = [f"{escape(k)} {escape(_joined(v))}" for k, v in sorted(system.items())]
        parts.append("system: " + ", ".join(shown))
    return "Run: " + " · ".join(parts)


def _no_baseline_line(results: RunResults) -> str:
    refused = run_optional(results.run)["baseline_refused"]
    if refused:  # --rag-baseline-mismatch warn: say why, visibly (e.g. the PR edits the golden set)
        return f"⚠️ **Baseline not compared** (no deltas, no regression gates): {escape(shorten(refused, 600))}"
    return "No baseline compared: no deltas, no regression gates."


def _baseline_line(base: Mapping[str, Any]) -> str:
    commit = base.get("commit")
    when = f" ({escape(base.get('time'))})" if base.get("time") else ""
    what = f"commit {code(str(commit)[:12])}" if commit else escape(base["path"])
    changes = ", ".join(
        f"{len(base['transitions'][k])} {label}"
        for k, label in (
            ("pass_to_fail", "newly failing"),
            ("fail_to_pass", "fixed"),
            ("stable_to_flaky", "stable → flaky"),
            ("new", "new"),
            ("removed", "removed"),
        )
    )
    return f"Baseline: {what}{when}, same dataset fingerprint · cases: {changes}{_tier_note(base)}"


def _tier_note(base: Mapping[str, Any]) -> str:
    """Tiers only one run ran are a difference of selection, not new or removed cases."""
    notes = tier_notes(base)
    return " · " + "; ".join(escape(n) for n in notes) if notes else ""


def _joined(value: Any) -> str:
    # A mixed run reports several values for one component.
    return " / ".join(map(str, value)) if isinstance(value, list) else str(value)


# --------------------------------------------------------------------------- sections


@dataclass(frozen=True)
class _Section:
    """A heading (with a table header, if any) and rows that may be cut with ``more``
    ("… and {n} more"), so that a long list never pushes the text over the limit.

    Rows are rendered by ``fmt`` only when they fit: 5,000 failing cases cost the
    escaping of the ~200 that are shown, not of all of them.
    """

    heading: Sequence[str]
    rows: Sequence[Any]
    more: str
    fmt: Callable[[Any], str] = str


def _sections(results: RunResults) -> Iterable[_Section]:
    yield _gates_section(results)
    if results.labels:
        yield _labels_section(results.labels)
    stages = _stages_section(results)
    if stages:
        yield stages
    blame = summary_line(run_optional(results.run)[BLAME_KEY])
    if blame:  # whose fault the failing judge cases are: the retriever's, the generator's, both
        yield _Section(["### Judge: whose fault", "", escape(blame)], [], "")
    cases = {c.key: c for c in results.cases}
    base = results.baseline
    if base:
        yield from _transition_sections(results, base["transitions"], cases)
    else:
        yield from _failed_gate_sections(results, cases)


def _fit_section(section: _Section, budget: int) -> list[str]:
    """As many rows as fit in ``budget`` characters; [] when not even the heading does."""
    lines = ["", *section.heading]
    more_room = len(section.more.format(n=len(section.rows))) + 1
    used = _size(lines)
    if used + (more_room if section.rows else 0) > budget:
        return []
    for i, item in enumerate(section.rows):
        row = section.fmt(item)
        reserve = more_room if i < len(section.rows) - 1 else 0
        if used + len(row) + 1 + reserve > budget:
            lines.append(section.more.format(n=len(section.rows) - i))
            return lines
        lines.append(row)
        used += len(row) + 1
    return lines


def _gates_section(results: RunResults) -> _Section:
    gates = results.gates
    base = results.baseline
    deltas = {row["metric"]: row for row in base["gates"]} if base else {}
    header = ["| metric | value | Δ vs baseline | threshold | n | result |", "|---|---:|---:|---:|---:|---|"]
    if not base:
        header = ["| metric | value | threshold | n | result |", "|---|---:|---:|---:|---|"]
    rows = []
    for g in gates:
        cells = [escape(g.metric), _value(g.value, g.key) + _interval(g)]
        if base:
            cells.append(_delta(deltas.get(g.metric)))
        cells += [_threshold(g), _n(g), _result(g)]
        rows.append("| " + " | ".join(cells) + " |")
    if not gates:
        return _Section(["### Gates", "", "No gates were evaluated."], [], "")
    return _Section(["### Gates", ""] + header, rows, "| … and {n} more gates | | | | |" + (" |" if base else ""))


def _value(value: Any, key: str) -> str:
    if value is None:
        return "n/a"
    if key in COUNT_KEYS and float(value).is_integer():
        return str(int(value))
    return f"{float(value):.4f}"


def _delta(row: Mapping[str, Any] | None) -> str:
    if not row or row["delta"] is None:
        return "—" if not row else f"— (baseline n/a, n={row['baseline_n']})"
    return f"{row['delta']:+.4f} (was {row['baseline']:.4f}, n={row['baseline_n']})"


def _threshold(g: GateResult) -> str:
    if g.threshold is None:
        return "—"
    return f"{'≥' if g.op == 'min' else '≤'} {float(g.threshold):.4g}"


def _n(g: GateResult) -> str:
    return f"{g.n}" + (f" ({g.errors} error{'s' if g.errors != 1 else ''})" if g.errors else "")


def _interval(g: GateResult) -> str:
    """`` [0.70, 0.85]`` for a tier gate; a regression gate's paired drop with its interval."""
    stats = Statistics.of(g)
    words = stats.interval_text
    return "" if not words else f" {words}" if stats.ci else f" ({words})"


def _result(g: GateResult) -> str:
    notes = _statistics(Statistics.of(g))
    if g.passed:
        return "✅ pass" + notes
    reason = g.reason
    return "❌ **fail**" + (f": {escape(shorten(reason, REASON_CHARS))}" if reason else "") + notes


def _statistics(s: Statistics) -> str:
    """What the summary adds to the result: a rule other than estimate and its decision,
    the paired test's p (Holm-adjusted), a detectable drop larger than the tolerance."""
    out: list[str] = []
    if s.decide != "estimate" and s.decision:
        out.append(f"{s.decide}: {s.decision}")
    if s.p_value is not None:
        adjusted = f", Holm p={s.holm_p:.3g}" if s.holm_p is not None else ""
        out.append(f"{s.test} p={s.p_value:.3g}{adjusted}, alpha={s.alpha:g}")
    if s.one_sided:
        out.append(f"{len(s.one_sided)} case(s) on one side only, left out")
    if "larger than its tolerance" in s.mde_note:
        out.append(s.mde_note)
    return "".join(f"<br>{escape(shorten(text, REASON_CHARS))}" for text in out)


def _labels_section(block: Mapping[str, Any]) -> _Section:
    """Judge against the human labels: agreement and the three estimates (``outputs.labels``)."""
    heading = [
        f"### Judge vs human labels ({confidence_of(block)} intervals)",
        "",
        "| metric | labelled | agreement | κ | bias | judge-only | labels-only | PPI++ | λ |",
        "|---|---|---|---:|---:|---|---|---|---:|",
    ]
    left = len(block["left_out"])
    more = "… and {n} more labelled metrics in the results file" + (
        f"; {left} label(s) left out (results file: labels.left_out)" if left else ""
    )
    return _Section(heading, label_rows(block), more, _label_row)


def _label_row(r: LabelRow) -> str:
    cells = (code(r.metric), r.labelled, r.agreement, r.kappa, r.bias, r.judge_only, r.labels_only, r.ppi, r.lam)
    return "| " + " | ".join(escape(c) if i else c for i, c in enumerate(cells)) + " |"


def _stages_section(results: RunResults) -> _Section | None:
    """Failing and erroring cases per tier and stage, each count out of the tier's n."""
    ran: Counter[str] = Counter()
    lost: Counter[tuple[str, str]] = Counter()
    for c in results.cases:
        if c.outcome == "skip":
            continue
        ran[c.tier] += 1
        if c.outcome in ("fail", "error"):
            stage = c.failed_stage or ("error" if c.outcome == "error" else "unknown")
            lost[(c.tier, stage)] += 1
    if not ran:
        return None
    rows = [
        f"| {escape(tier)} | {escape(stage)} | {count} | {ran[tier]} |"
        for (tier, stage), count in sorted(lost.items(), key=lambda kv: (kv[0][0], -kv[1], kv[0][1]))
    ]
    heading = ["### Failing cases per stage", ""]
    if not rows:
        return _Section(heading + [f"No case failed ({sum(ran.values())} cases run)."], [], "")
    return _Section(
        heading + ["| tier | failed stage | cases | of n |", "|---|---|---:|---:|"],
        rows,
        "| … and {n} more stages | | | |",
    )


def _transition_sections(
    results: RunResults, transitions: Mapping[str, Any], cases: Mapping[str, CaseResult]
) -> Iterable[_Section]:
    newly = transitions["pass_to_fail"]
    n_passed = _baseline_passes_hint(results)
    title = f"### Newly failing cases ({len(newly)}{n_passed})"
    if not newly:
        yield _Section([title, "", "No case that passed on the baseline fails now."], [], "")
    else:
        yield _Section(
            [title, ""],
            newly,
            "- … and {n} more",
            lambda t: _case_line(results, cases.get(t["key"]), t["id"], t["tier"], t["failed_stage"], t["now"]),
        )
    flaky = transitions["stable_to_flaky"]
    if flaky:
        yield _Section(
            [f"### Stable pass → flaky ({len(flaky)})", ""],
            flaky,
            "- … and {n} more",
            lambda t: _case_line(results, cases.get(t["key"]), t["id"], t["tier"], t["failed_stage"], "flaky"),
        )


def _baseline_passes_hint(results: RunResults) -> str:
    """'of N' when the no_new_failures gate ran: its n is the baseline passes that ran now."""
    for g in results.gates:
        if g.kind == "regression" and g.key == NO_NEW_FAILURES:
            return f" of {g.n} that passed on the baseline"
    return ""


def _failed_gate_sections(results: RunResults, cases: Mapping[str, CaseResult]) -> Iterable[_Section]:
    """Without a baseline: every case pulling each failed gate down (``gate.pulling_down``,
    the rule of the terminal and the report), as many as fit."""
    for g in results.gates:
        if g.passed:
            continue
        found = [cases[key] for key in row_pulling_down(g.to_dict(), results.cases) if key in cases]
        if found:
            yield _Section(
                [f"### Failing cases of {escape(g.metric)}", ""],
                found,
                "- … and {n} more",
                lambda c: _case_line(results, c, c.id, c.tier, c.failed_stage, c.outcome),
            )


def _case_line(results: RunResults, case: CaseResult | None, cid: str, tier: str, stage: Any, now: str) -> str:
    """One case: tier, id, outcome, failing stage, the question and (if any) the diagnosis."""
    question = (results.items.get(cid) or {}).get("question")
    message = case.message if case is not None else ""
    parts = [f"**{escape(tier)}** {code(cid)}", escape(now)]
    if stage:
        parts.append(f"failed stage: {escape(stage)}")
    line = "- " + " · ".join(parts)
    if question:
        line += f" — {escape(shorten(question, QUESTION_CHARS))}"
    if message and now != "flaky":
        line += f" — _{escape(shorten(message, MESSAGE_CHARS))}_"
    return line


# --------------------------------------------------------------------------- helpers


def _url(url: str) -> str:
    """A link target that cannot end the Markdown link or open HTML."""
    return url.translate(_URL_ESCAPES)


_URL_ESCAPES = str.maketrans({" ": "%20", "(": "%28", ")": "%29", "<": "%3C", ">": "%3E", '"': "%22"})


def _size(lines: Sequence[str]) -> int:
    return sum(len(line) + 1 for line in lines)


class MarkdownWriter:
    """The ``markdown`` format: appended to its file, as ``$GITHUB_STEP_SUMMARY`` expects."""

    name = "markdown"
    append = True

    def render(self, results: RunResults, context: Context) -> bytes:
        text = render_markdown(results, artifact_url=context.artifact_url)
        return (text if text.endswith("\n") else text + "\n").encode("utf-8")


register(MarkdownWriter())
