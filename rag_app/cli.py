"""Command line: ``python -m rag_app ingest [PATH]``, ``ask QUESTION``, ``chat``, ``demo``, ``serve``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from rag_app.errors import RagAppError
from rag_app.index.progress import ENV as PROGRESS_ENV
from rag_app.pipeline import RagPipeline
from rag_app.settings import Settings
from rag_app.types import ChatResult, Trace

DEMO_QUESTIONS: tuple[str, ...] = (
    "二次函数的顶点式怎么理解？",
    "等比数列前n项和公式在公比等于1时是什么？",
    "诱导公式的口诀是什么意思？",
    "What is the law of cosines used for?",
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_app", description=__doc__)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a setting")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    p_ingest = sub.add_parser("ingest", help="build (or reuse) the index for a corpus")
    p_ingest.add_argument("path", nargs="?", help="corpus folder or file (default: settings.corpus_path)")
    p_ingest.add_argument(
        "--progress",
        choices=("auto", "on", "off"),
        default=None,
        help=f"embedding progress on stderr: auto = only on a terminal (default; also {PROGRESS_ENV})",
    )
    p_ask = sub.add_parser("ask", help="answer one question and show sources and per-stage hits")
    p_ask.add_argument("question")
    p_ask.add_argument("--top-k", type=int, default=None)
    p_ask.add_argument("--json", action="store_true", help="print the full result as JSON")
    p_ask.add_argument("--corpus", default=None)
    p_chat = sub.add_parser(
        "chat", help="a tutoring conversation: one student message per line (rag_app/dialogue/repl.py)"
    )
    p_chat.add_argument("--problem", default=None, help="the problem on the student's screen (context['problem'])")
    p_chat.add_argument("--book", default=None, help="the book the student is working in (context['book'])")
    p_chat.add_argument("--json", action="store_true", help="print each tutor turn as one JSON line")
    p_chat.add_argument("--corpus", default=None)
    sub.add_parser("demo", help="run a few demo questions over the demo corpus")
    p_serve = sub.add_parser("serve", help="serve the HTTP API (POST /api/retrieve, POST /api/chat, GET /api/health)")
    p_serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p_serve.add_argument("--port", type=int, default=8000, help="port (0 picks a free one; default 8000)")
    p_serve.add_argument("--corpus", default=None)
    p_serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also accept this Host header (repeatable; '*' = any). Default: localhost, 127.0.0.1, ::1",
    )
    p_serve.add_argument(
        "--max-body-bytes", type=int, default=1 << 20, help="largest request body (default 1 MiB; 413)"
    )
    p_serve.add_argument(
        "--request-timeout",
        type=float,
        default=10.0,
        help="seconds for a request's head, and again for its body (default 10; 408)",
    )
    p_serve.add_argument(
        "--max-pending", type=int, default=16, help="requests waiting for the pipeline (default 16; 503)"
    )
    p_serve.add_argument(
        "--queue-timeout",
        type=float,
        default=120.0,
        help="seconds a request may wait for the pipeline (default 120; 503)",
    )
    p_serve.add_argument("--max-connections", type=int, default=512, help="open connections (default 512; 503)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    try:
        settings = Settings.load(overrides=_parse_overrides(args.set))
        if args.command == "ingest":
            with _progress_env(args.progress):
                return _ingest(settings, args.path)
        if args.command == "ask":
            pipe = RagPipeline(settings, corpus_path=args.corpus)
            result = pipe.chat(args.question, top_k=args.top_k)
            if args.json:
                print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
            else:
                print(format_chat(result))
            return 0
        if args.command == "serve":
            return _serve(settings, args)
        if args.command == "chat":
            from rag_app.dialogue.repl import run_chat

            context = {k: v for k, v in (("problem", args.problem), ("book", args.book)) if v}
            return run_chat(RagPipeline(settings, corpus_path=args.corpus), context, as_json=args.json)
        pipe = RagPipeline(settings)
        _print_info(pipe)
        for q in DEMO_QUESTIONS:
            print("=" * 72)
            print(format_chat(pipe.chat(q)))
        return 0
    except RagAppError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _parse_overrides(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects NAME=VALUE, got {item!r}")
        out[name.strip()] = value.strip()
    return out


@contextmanager
def _progress_env(choice: str | None) -> Iterator[None]:
    """``RAG_PROGRESS`` set to ``choice`` while the pipeline builds its index, then restored."""
    previous = os.environ.get(PROGRESS_ENV)
    if choice is not None:
        os.environ[PROGRESS_ENV] = choice
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(PROGRESS_ENV, None)
        else:
            os.environ[PROGRESS_ENV] = previous


def _ingest(settings: Settings, path: str | None) -> int:
    pipe = RagPipeline(settings, corpus_path=path)
    print(format_index_line(pipe))
    _print_info(pipe)
    return 0


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    from rag_app.http_app import LOCAL_HOSTS, Limits  # noqa: PLC0415 - the server stack loads only for serve
    from rag_app.http_server import env_secrets, make_server  # noqa: PLC0415
    from rag_app.redact import RedactingFilter, Redactor  # noqa: PLC0415

    # Everything that reaches stderr (rag_app's, uvicorn's and the SDK's log lines, tracebacks)
    # leaves without a key, in any encoding.
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactingFilter(Redactor(env_secrets())))
    try:
        limits = Limits(
            allowed_hosts=(*LOCAL_HOSTS, *(h.strip().lower() for h in args.allow_host if h.strip())),
            max_body_bytes=args.max_body_bytes,
            max_question_chars=settings.max_question_chars,
            request_timeout=args.request_timeout,
            max_pending=args.max_pending,
            queue_timeout=args.queue_timeout,
            max_connections=args.max_connections,
        )
    except ValueError as exc:
        print(f"error: python -m rag_app serve: {exc}", file=sys.stderr)
        return 2
    pipe = RagPipeline(settings, corpus_path=args.corpus)
    try:
        server = make_server(pipe, args.host, args.port, limits)
    except OSError as exc:
        print(
            f"error: cannot serve on {args.host}:{args.port}: {exc}; pick another --port (0 = any free one)",
            file=sys.stderr,
        )
        return 2
    _print_info(pipe)
    # One parseable line on stdout, flushed: scripts and tests wait for it (or poll /api/health).
    print(
        f"serving rag_app on {server.url} (POST /api/retrieve, POST /api/chat, POST /api/dialogue, GET /api/health)",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def format_index_line(pipe: RagPipeline) -> str:
    """What ``ingest`` did: built or reused, sizes, embeddings computed vs read from the cache."""
    stats = pipe.index.stats
    sizes = f"{stats.n_docs} docs, {stats.n_parents} parents, {stats.n_children} children"
    if stats.built:
        work = (
            f"{stats.embeddings_computed} embeddings computed, {stats.embeddings_cached} read from the embedding cache"
        )
    else:
        work = "no embedding needed"
    state = "built" if stats.built else "reused"
    return f"index {pipe.index.fingerprint} {state}: {sizes}, {work}, {stats.seconds:.1f} s"


def _print_info(pipe: RagPipeline) -> None:
    info = pipe.info
    print(
        f"embedder {info.embedder} (threshold {info.similarity_threshold}), reranker {info.reranker}, "
        f"generator {info.generator}"
    )


def format_chat(result: ChatResult) -> str:
    """Human-readable answer, sources and per-stage hits for the terminal."""
    lines = [f"Q: {result.question}", f"A ({result.generator}): {result.answer}"]
    if result.degraded:
        lines.append(f"(degraded: {result.degradation_reason})")
    if result.sources:
        lines.append("Sources:")
        for s in result.sources:
            pages = f", p{s.page_start}-{s.page_end}" if s.page_start is not None else ""
            lines.append(f"  [{s.n}] {s.book} - {s.section}{pages}  ({s.chunk_id})")
    lines.append(format_trace(result.trace))
    return "\n".join(lines)


def format_trace(trace: Trace, per_stage: int = 5) -> str:
    lines = ["Stages:"]
    for stage in trace.stages:
        top = ", ".join(f"{h.rank}:{h.chunk_id}({h.score:.3f})" for h in stage.hits[:per_stage])
        more = f" … +{len(stage.hits) - per_stage}" if len(stage.hits) > per_stage else ""
        lines.append(f"  {stage.name:<10} {len(stage.hits):>3} hits {stage.seconds * 1000:7.1f} ms  {top}{more}")
    return "\n".join(lines)
