"""What each authoring command does, from parsed arguments to files and terminal lines
(``rag_eval.authoring.cli`` parses; this module reads, calls and writes)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rag_eval.authoring.drafting import Ask, Retrieve
from rag_eval.core.records import Chunk, Document
from rag_eval.golden.load import GoldenSetError, load_golden_set
from rag_eval.golden.model import GoldenItem
from rag_eval.util.escape import terminal
from rag_eval.util.person_files import refuse_existing, refuse_overlap, write_atomic

NEGATIVE_TOP_K = 5  # chunks of the system's retrieval a negative draft is checked against
EVIDENCE_FILES = ("evidence-candidates.jsonl", "evidence-review.html")  # what evidence writes into --out


def corpus_documents(
    corpus: str | None, dataset: str | None, option: str = "--corpus"
) -> tuple[tuple[Document, ...], Path]:
    """The documents of ``--corpus PATH`` or of ``--dataset DIR``'s corpus (corpus/, corpus.jsonl or *.md)."""
    from rag_eval.corpus import load_documents

    if corpus:
        path = Path(corpus)
    elif dataset:
        root = Path(dataset)
        found = [p for p in (root / "corpus", root / "corpus.jsonl") if p.exists()]
        path = found[0] if found else root
        if not found and not any(root.glob("*.md")):
            raise GoldenSetError(f"--dataset {root}: no corpus (corpus/, corpus.jsonl or *.md); or give {option} PATH")
    else:
        raise GoldenSetError(
            f"no corpus: give {option} PATH (a folder of Markdown notes or a corpus.jsonl) or --dataset DIR"
        )
    docs = load_documents(path)
    if not docs:
        raise GoldenSetError(f"{option} {path}: no document in it (Markdown files *.md or a corpus.jsonl)")
    return docs, path


def existing_items(golden: str | None, dataset: str | None) -> tuple[list[GoldenItem], Path | None]:
    """The golden set's items, when one is given or the dataset has one (else none)."""
    from rag_eval.dataset import GOLDEN_NAMES

    if golden:
        return load_golden_set(golden), Path(golden)
    if dataset:
        for name in GOLDEN_NAMES:
            if (Path(dataset) / name).is_file():
                return load_golden_set(Path(dataset) / name), Path(dataset) / name
    return [], None


def draft_command(args: argparse.Namespace) -> int:
    from rag_eval.authoring.cli import parse_scenarios
    from rag_eval.authoring.client import DraftClientConfig, draft_client
    from rag_eval.authoring.drafting import Drafter, DraftSpec
    from rag_eval.authoring.drafts import drafts_jsonl
    from rag_eval.authoring.passages import MIN_CONTENT_CHARS, passage_pool
    from rag_eval.authoring.quote import check_threshold
    from rag_eval.judge.config import load_prices

    docs, corpus = corpus_documents(args.corpus, args.dataset)
    items, golden = existing_items(args.golden_set, args.dataset)
    out = Path(args.out)
    refuse_overlap([("--out", out)], [("--corpus", corpus), ("--golden-set", golden)])
    refuse_existing("--out", out, what="drafts")
    asks = [Ask(recipe, n) for recipe, n in parse_scenarios(args.scenario).items()]
    if args.fill_gaps:
        asks = gap_plan(items, args.dimension, args.min, golden)
        if not asks:
            print(
                f"no thin cell (every cell of {' × '.join(args.dimension or ['scenario'])} has >= {args.min} items): "
                "nothing to draft"
            )
            return 0
    cfg = DraftClientConfig.from_env(
        cache_dir=Path(args.cache_dir),
        fresh=args.fresh,
        prices=load_prices(args.prices) if args.prices else {},
        budget_usd=args.budget_usd,
        budget_tokens=args.budget_tokens,
    )
    spec = DraftSpec(
        model=cfg.endpoint.model,
        asks=asks,
        seed=args.seed,
        lang=args.lang,
        near_dup=check_threshold(args.near_dup, "--near-dup"),
        max_tokens=args.max_tokens,
        concurrency=cfg.policy.concurrency,
    )
    pool = passage_pool(docs, args.seed, args.min_chars if args.min_chars is not None else MIN_CONTENT_CHARS)
    retrieve = system_retrieval(args.pipeline, args.pipeline_config, corpus)
    with draft_client(cfg) as client:
        outcome = Drafter(docs, pool, client, spec, items, retrieve).run()
        calls = sum(1 for r in client.records if not r.cached)
        cached = sum(1 for r in client.records if r.cached)
    for line in outcome.rejected[:20]:
        print(f"  {terminal(line, False)}")
    if len(outcome.rejected) > 20:
        print(f"  … and {len(outcome.rejected) - 20} more")
    print("counts: " + ", ".join(f"{k} {v}" for k, v in sorted(outcome.counts.items())))
    print(f"model calls: {calls} made, {cached} answered from the cache ({cfg.cache_dir})")
    if not outcome.drafts:
        print(f"no draft written (nothing kept; the counts above say why): {out} not created")
        return 1
    write_atomic(out, drafts_jsonl(outcome.drafts))
    shown = terminal(str(out), False)
    print(f"{len(outcome.drafts)} draft(s): {shown} (review them: python -m rag_eval review {shown})")
    return 1 if outcome.errors or any(k.startswith("stopped") for k in outcome.counts) else 0


def system_retrieval(pipeline: str | None, config: str | None, corpus: Path) -> Retrieve | None:
    """The texts a system retrieves for a question (its top 5), when ``--pipeline`` or
    ``--pipeline-config`` names one; the system is built once, before any model call."""
    if not pipeline and not config:
        return None
    from rag_eval.adapters import SystemContext, build_system
    from rag_eval.adapters.spec import load_spec

    system = build_system(load_spec(pipeline, config), SystemContext(project_root=Path.cwd(), corpus=corpus))

    def retrieve(question: str) -> list[str]:
        return [item.text for item in system.retrieve(question, NEGATIVE_TOP_K).items if item.text]

    return retrieve


def gap_plan(items: list[GoldenItem], dimensions: list[str], minimum: int, golden: Path | None) -> list[Ask]:
    """Per thin cell, ``minimum`` minus its count drafts of its scenario (``standard`` when
    scenario is no dimension), tagged with its other values; a scenario no recipe writes is skipped."""
    from rag_eval.authoring.recipes import RECIPES
    from rag_eval.golden.coverage import MISSING, coverage_cells

    if golden is None:
        raise GoldenSetError("--fill-gaps needs the golden set whose gaps to fill: give --golden-set FILE")
    asks = []
    for cell in coverage_cells(items, dimensions or ["scenario"], minimum):
        values = {d: v for d, v in cell.values if v != MISSING}
        recipe = values.pop("scenario", "standard")
        if cell.thin and recipe in RECIPES:
            asks.append(Ask(recipe, minimum - cell.count, values))
    return asks


def review_command(args: argparse.Namespace) -> int:
    from rag_eval.authoring.drafts import load_drafts
    from rag_eval.authoring.page import render_drafts_page, write_page

    path = Path(args.drafts)
    out = Path(args.out) if args.out else path.with_suffix(".html")
    refuse_overlap([("--out", out)], [("DRAFTS", path)])
    drafts = load_drafts(path)
    write_page(out, render_drafts_page(drafts, str(path)))
    print(
        f"review page: {terminal(str(out), False)} ({len(drafts)} draft(s); "
        "export the decisions, then python -m rag_eval accept DECISIONS --into GOLDEN)"
    )
    return 0


def accept_command(args: argparse.Namespace) -> int:
    from rag_eval.authoring.accept import Merger, read_golden_lines
    from rag_eval.authoring.decisions import load_decisions
    from rag_eval.authoring.quote import check_threshold
    from rag_eval.golden.resolve import ChunkLookup

    decisions_path, into = Path(args.decisions), Path(args.into)
    lookup = None
    inputs: list[tuple[str, Path | None]] = [("DECISIONS", decisions_path)]
    if args.corpus or args.dataset:
        docs, corpus = corpus_documents(args.corpus, args.dataset)
        lookup = ChunkLookup(docs, [])
        inputs.append(("--corpus", corpus))
    refuse_overlap([("--into", into)], inputs)
    decisions = load_decisions(decisions_path)
    merger = Merger(read_golden_lines(into), into, lookup, check_threshold(args.near_dup, "--near-dup"), args.id_prefix)
    merge = merger.apply(decisions)
    for line in merge.refused:
        print(f"refused: {terminal(line, False)}")
    for line in merge.skipped:
        print(f"skipped: {terminal(line, False)}")
    if merge.added or merge.updated:
        into.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(into, merge.text().encode("utf-8"))
    print(
        f"{terminal(str(into), False)}: {len(merge.added)} item(s) added, {len(merge.updated)} updated, "
        f"{merge.rejected} draft(s) rejected by the reviewer, {len(merge.refused)} refused, "
        f"{len(merge.skipped)} skipped"
    )
    return 1 if merge.refused else 0


def evidence_command(args: argparse.Namespace) -> int:
    from rag_eval.authoring.evidence import find_candidates
    from rag_eval.authoring.page import render_evidence_page, write_page
    from rag_eval.golden.resolve import ChunkLookup
    from rag_eval.results.file import ResultsFileError, load_results

    try:
        runs = [(str(p), load_results(Path(p))) for p in args.results]
    except ResultsFileError as exc:
        raise GoldenSetError(str(exc)) from None
    run = runs[0][1].get("run") or {}
    golden = Path(args.golden_set or run.get("golden_set") or "")
    if not golden.is_file():
        raise GoldenSetError(f"the run's golden set {golden} is not there: give --golden-set FILE")
    items = {i.id: i for i in load_golden_set(golden)}
    dataset = args.dataset or run.get("dataset")
    docs: tuple[Document, ...] = ()
    chunks: list[Chunk] = []
    if dataset and Path(dataset).is_dir():
        system = run.get("system") or {}
        if system.get("gold") == "corpus":
            docs, chunks = _corpus_chunks(Path(dataset), system.get("adapter"))
        else:
            try:
                docs, _ = corpus_documents(None, dataset)
            except GoldenSetError:
                docs = ()
    out = Path(args.out)
    refuse_overlap(
        [("--out", out), *((f"--out's {name}", out / name) for name in EVIDENCE_FILES)],
        [*((f"RESULTS {p}", p) for p in args.results), ("--golden-set", golden)],
    )
    found = find_candidates(runs, items, ChunkLookup(docs, []), chunks)
    lines = [c.to_dict(items.get(c.case)) for c in found.candidates]
    import json

    out.mkdir(parents=True, exist_ok=True)
    write_atomic(
        out / EVIDENCE_FILES[0],
        "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode("utf-8"),
    )
    page = write_page(out / EVIDENCE_FILES[1], render_evidence_page(lines, ", ".join(args.results)))
    print(
        f"{len(lines)} evidence candidate(s) await review ({found.decided} already decided, "
        f"{found.without_text} shown chunk(s) whose text no file holds)"
    )
    print(
        f"review page: {terminal(str(page), False)} (export the decisions, then "
        f"python -m rag_eval accept DECISIONS --into {terminal(str(golden), False)})"
    )
    return 0


def _corpus_chunks(dataset: Path, adapter: object) -> tuple[tuple[Document, ...], list[Chunk]]:
    """The dataset's documents and chunks as the run's ``gold = "corpus"`` adapter read and
    chunked them (its kind from run.system.adapter; else the kind whose own mode corpus is)."""
    from rag_eval.adapters import PipelineSpec, SystemContext, corpus_chunker, corpus_reader, kinds
    from rag_eval.dataset import find_paths

    paths = find_paths(dataset)
    if paths.corpus is None:
        return (), []
    kind = kinds.get(adapter) if isinstance(adapter, str) else None
    name = kind.name if kind is not None and "corpus" in kind.gold_modes else kinds.native_kind("corpus")
    spec, context = PipelineSpec(name or "", gold="corpus"), SystemContext(corpus=paths.corpus)
    docs = corpus_reader(spec, context)(paths.corpus)
    chunker = corpus_chunker(spec, context)
    return docs, (list(chunker(docs)) if chunker else [])
