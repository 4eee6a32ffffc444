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

from rag_eval.escape import terminal
from rag_eval.gates.gate import row_pulling_down
from rag_eval.judge.blame import RUN_KEY as BLAME_KEY
from rag_eval.judge.blame import summary_line
from rag_eval.outputs.fmt import as_mapping, interval_words
from rag_eval.outputs.labels import LabelRow, confidence_of, label_rows
from rag_eval.results.baseline import tier_notes
from rag_eval.results.file import case_key, case_results, run_of

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


def render_markdown(results: Mapping[str, Any], artifact_url: str | None = None, max_chars: int = 60000) -> str:
    """The summary of ``results`` (a results file's dict, with ``baseline`` when one was compared)."""
    base = results.get("baseline")
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


def _verdict_line(results: Mapping[str, Any]) -> str:
    verdict = str(results["verdict"])
    gates = results["gates"]
    failed = sum(1 for g in gates if not g["passed"])
    title = VERDICTS.get(verdict, f"rag-eval: verdict {escape(verdict)}")
    count = f" ({len(gates) - failed}/{len(gates)} gates passed)" if gates else " (no gates evaluated)"
    return f"## {title}{count if verdict in ('pass', 'fail') else ''}"


def _run_line(results: Mapping[str, Any]) -> str:
    run = results["run"]
    commit = run["commit"]
    parts = [f"commit {code(str(commit)[:12])}" if commit else "commit unknown"]
    if run.get("dirty"):
        parts[0] += " (uncommitted changes)"
    dataset = run["dataset"]
    name = escape(re.split(r"[\\/]", str(dataset).rstrip("/\\"))[-1]) if dataset else "unknown"
    parts.append(f"dataset {name}, fingerprint {code(run['dataset_fingerprint'])}")
    n_cases = sum(1 for c in results["cases"] if c["outcome"] != "skip")
    parts.append(f"{n_cases} cases run")
    if run["split"] not in (None, "all") or run["tags"]:
        parts.append(f"split {escape(run['split'])}, tags {escape(', '.join(map(str, run['tags'])) or 'none')}")
    system = run["system"]
    if system:
        shown = [f"{escape(k)} {escape(_joined(v))}" for k, v in sorted(system.items())]
        parts.append("system: " + ", ".join(shown))
    return "Run: " + " · ".join(parts)


def _no_baseline_line(results: Mapping[str, Any]) -> str:
    refused = run_of(results).get("baseline_refused")
    if refused:  # --rag-baseline-mismatch warn: say why, visibly (e.g. the PR edits the golden set)
        return f"⚠️ **Baseline not compared** (no deltas, no regression gates): {escape(shorten(refused, 600))}"
    return "No baseline compared: no deltas, no regression gates."


def _baseline_line(base: Mapping[str, Any]) -> str:
    commit = base.get("commit")
    when = f" ({escape(base.get('time'))})" if base.get("time") else ""
    what = f"commit {code(str(commit)[:12])}" if commit else escape(base.get("path"))
    counts = {k: len(v) for k, v in base["transitions"].items()}
    changes = ", ".join(
        f"{counts.get(k, 0)} {label}"
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


def _sections(results: Mapping[str, Any]) -> Iterable[_Section]:
    yield _gates_section(results)
    if results.get("labels"):
        yield _labels_section(results["labels"])
    stages = _stages_section(results)
    if stages:
        yield stages
    blame = summary_line(as_mapping(results.get("run")).get(BLAME_KEY))
    if blame:  # whose fault the failing judge cases are: the retriever's, the generator's, both
        yield _Section(["### Judge: whose fault", "", escape(blame)], [], "")
    cases = _index(results)
    base = results.get("baseline")
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


def _gates_section(results: Mapping[str, Any]) -> _Section:
    gates = results["gates"]
    base = results.get("baseline")
    deltas = {row["metric"]: row for row in base["gates"]} if base else {}
    header = ["| metric | value | Δ vs baseline | threshold | n | result |", "|---|---:|---:|---:|---:|---|"]
    if not base:
        header = ["| metric | value | threshold | n | result |", "|---|---:|---:|---:|---|"]
    rows = []
    for g in gates:
        cells = [escape(g["metric"]), _value(g["value"], str(g["key"])) + _interval(g)]
        if base:
            cells.append(_delta(deltas.get(g["metric"])))
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


def _threshold(g: Mapping[str, Any]) -> str:
    t = g["threshold"]
    if t is None:
        return "—"
    return f"{'≥' if g['op'] == 'min' else '≤'} {float(t):.4g}"


def _n(g: Mapping[str, Any]) -> str:
    errors = int(g["errors"])
    return f"{int(g['n'])}" + (f" ({errors} error{'s' if errors != 1 else ''})" if errors else "")


def _interval(g: Mapping[str, Any]) -> str:
    """`` [0.70, 0.85]`` for a tier gate; a regression gate's paired drop with its interval."""
    words = interval_words(g)
    return "" if not words else f" {words}" if g.get("ci") else f" ({words})"


def _result(g: Mapping[str, Any]) -> str:
    notes = _statistics(g)
    if g["passed"]:
        return "✅ pass" + notes
    reason = g["reason"]
    return "❌ **fail**" + (f": {escape(shorten(reason, REASON_CHARS))}" if reason else "") + notes


def _statistics(g: Mapping[str, Any]) -> str:
    """What the summary adds to the result: a rule other than estimate and its decision,
    the paired test's p (Holm-adjusted), a detectable drop larger than the tolerance."""
    out: list[str] = []
    if g.get("decide", "estimate") != "estimate" and g.get("decision"):
        out.append(f"{g['decide']}: {g['decision']}")
    if "p_value" in g:
        holm = g.get("holm") or {}
        adjusted = f", Holm p={holm['p_adjusted']:.3g}" if "p_adjusted" in holm else ""
        out.append(f"{g.get('test', 'paired test')} p={g['p_value']:.3g}{adjusted}, alpha={g['alpha']:g}")
    if g.get("one_sided"):
        out.append(f"{len(g['one_sided'])} case(s) on one side only, left out")
    if "larger than its tolerance" in str(g.get("mde_note", "")):
        out.append(str(g["mde_note"]))
    return "".join(f"<br>{escape(shorten(text, REASON_CHARS))}" for text in out)


def _labels_section(block: Mapping[str, Any]) -> _Section:
    """Judge against the human labels: agreement and the three estimates (``outputs.labels``)."""
    heading = [
        f"### Judge vs human labels ({confidence_of(block)} intervals)",
        "",
        "| metric | labelled | agreement | κ | bias | judge-only | labels-only | PPI++ | λ |",
        "|---|---|---|---:|---:|---|---|---|---:|",
    ]
    left = len(block.get("left_out") or ())
    more = "… and {n} more labelled metrics in the results file" + (
        f"; {left} label(s) left out (results file: labels.left_out)" if left else ""
    )
    return _Section(heading, label_rows(block), more, _label_row)


def _label_row(r: LabelRow) -> str:
    cells = (code(r.metric), r.labelled, r.agreement, r.kappa, r.bias, r.judge_only, r.labels_only, r.ppi, r.lam)
    return "| " + " | ".join(escape(c) if i else c for i, c in enumerate(cells)) + " |"


def _stages_section(results: Mapping[str, Any]) -> _Section | None:
    """Failing and erroring cases per tier and stage, each count out of the tier's n."""
    ran: Counter[str] = Counter()
    lost: Counter[tuple[str, str]] = Counter()
    for c in results["cases"]:
        if c["outcome"] == "skip":
            continue
        ran[c["tier"]] += 1
        if c["outcome"] in ("fail", "error"):
            stage = c["failed_stage"] or ("error" if c["outcome"] == "error" else "unknown")
            lost[(c["tier"], stage)] += 1
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
    results: Mapping[str, Any], transitions: Mapping[str, Any], cases: Mapping[str, Mapping[str, Any]]
) -> Iterable[_Section]:
    newly = transitions.get("pass_to_fail") or []
    n_passed = _baseline_passes_hint(results)
    title = f"### Newly failing cases ({len(newly)}{n_passed})"
    if not newly:
        yield _Section([title, "", "No case that passed on the baseline fails now."], [], "")
    else:
        yield _Section(
            [title, ""], newly, "- … and {n} more", lambda t: _case_line(results, cases, t, now=t.get("now"))
        )
    flaky = transitions.get("stable_to_flaky") or []
    if flaky:
        yield _Section(
            [f"### Stable pass → flaky ({len(flaky)})", ""],
            flaky,
            "- … and {n} more",
            lambda t: _case_line(results, cases, t, now="flaky"),
        )


def _baseline_passes_hint(results: Mapping[str, Any]) -> str:
    """'of N' when the no_new_failures gate ran: its n is the baseline passes that ran now."""
    for g in results["gates"]:
        if g["tier"] == "regression" and g["key"] == "no_new_failures":
            return f" of {int(g['n'])} that passed on the baseline"
    return ""


def _failed_gate_sections(results: Mapping[str, Any], cases: Mapping[str, Mapping[str, Any]]) -> Iterable[_Section]:
    """Without a baseline: every case pulling each failed gate down (``gate.pulling_down``,
    the rule of the terminal and the report), as many as fit."""
    objects = case_results(results)
    for g in results["gates"]:
        if g["passed"]:
            continue
        found = [cases[key] for key in row_pulling_down(g, objects) if key in cases]
        if found:
            yield _Section(
                [f"### Failing cases of {escape(g['metric'])}", ""],
                found,
                "- … and {n} more",
                lambda c: _case_line(results, cases, c, now=c.get("outcome")),
            )


def _case_line(
    results: Mapping[str, Any], cases: Mapping[str, Mapping[str, Any]], case: Mapping[str, Any], now: Any
) -> str:
    """One case: tier, id, outcome, failing stage, the question and (if any) the diagnosis."""
    cid = str(case["id"])
    tier = str(case["tier"])
    item = results["items"].get(cid) or {}
    question = item.get("question")
    stage = case["failed_stage"]
    full = cases.get(f"{tier}::{cid}") or case
    message = full.get("message")
    parts = [f"**{escape(tier)}** {code(cid)}", escape(now)]
    if stage:
        parts.append(f"failed stage: {escape(stage)}")
    line = "- " + " · ".join(parts)
    if question:
        line += f" — {escape(shorten(question, QUESTION_CHARS))}"
    if message and now != "flaky":
        line += f" — _{escape(shorten(message, MESSAGE_CHARS))}_"
    return line


def _index(results: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Cases by ``tier::id``: built once per rendering (a list scan per line is quadratic)."""
    return {case_key(c): c for c in results["cases"]}


# --------------------------------------------------------------------------- helpers


def _url(url: str) -> str:
    """A link target that cannot end the Markdown link or open HTML."""
    return "".join({" ": "%20", "(": "%28", ")": "%29", "<": "%3C", ">": "%3E", '"': "%22"}.get(ch, ch) for ch in url)


def _size(lines: Sequence[str]) -> int:
    return sum(len(line) + 1 for line in lines)
