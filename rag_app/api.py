"""rag_app over HTTP: ``python -m rag_app serve --host 127.0.0.1 --port 8000``.

    GET  /api/health    {"status": "ok", "info": {index fingerprint, models, ...}}
    POST /api/retrieve  {"question": str, "top_k": int | null}
                        -> {question, items: [chunk], stages: {name: [{chunk_id, score, rank}]},
                            degraded, degradation_reason}
    POST /api/chat      {"question": str, "top_k": int | null, "history": [{role, content}]}
                        -> {question, answer, sources: [{n, chunk_id, doc_id, book, section,
                            page_start, page_end}], context_used: [chunk], refused, degraded,
                            degradation_reason, generator, stages, usage}
    POST /api/dialogue  {"turns": [{role, content}, ...], "context": {"problem": ..., ...}}
                        -> one tutor turn: {action, message, intent, hint_level, retrieval,
                            candidate, interception, asking, missing, sources, sufficiency,
                            reason, usage} (``DialogueTurn.to_dict()``)

A chunk is ``{chunk_id, doc_id, text, score, kind, parent_id, book, section, page_start,
page_end}``. No relevant material (an empty context) answers 404 with the same body
plus ``detail``, so a client still sees every stage; bad input answers 422 with
``{"error": "invalid_request", "detail": ...}``.

This module is the API's content: request validation (:func:`parse_request`) and the
response shapes. The HTTP side (limits, timeouts, host allow-list, the pipeline queue)
is ``rag_app/http_app.py`` (a Starlette app) served by ``rag_app/http_server.py``
(uvicorn); docs/rag_app.md ("HTTP API", "Limits") lists every limit.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from typing import Any

from rag_app.pipeline import RagPipeline
from rag_app.settings import Settings
from rag_app.types import ChatResult, Chunk, DialogueRequest, RetrievalResult, Trace

log = logging.getLogger(__name__)

REQUEST_KEYS = {
    "/api/retrieve": ("question", "top_k"),
    "/api/chat": ("question", "top_k", "history"),
    "/api/dialogue": ("turns", "context"),
}
MAX_TOP_K = 1000
MAX_QUESTION_CHARS = Settings().max_question_chars
NO_MATERIAL = "no relevant material found for this question: the context is empty"


class InvalidRequest(ValueError):
    """The request cannot be served; the message says which field and why (HTTP 422)."""


def parse_request(path: str, raw: bytes, max_question_chars: int = MAX_QUESTION_CHARS) -> dict[str, Any]:
    """Validate a JSON request body for ``path``; raise ``InvalidRequest`` naming the field.

    A question, and each student turn of a dialogue, may have at most
    ``max_question_chars`` characters (``Settings.max_question_chars``).
    """
    try:
        body = json.loads(raw.decode("utf-8")) if raw.strip() else None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"the body is not JSON ({exc})") from None
    except RecursionError:
        raise InvalidRequest(
            "the body is nested too deeply to be a request (JSON arrays or objects inside "
            "each other more than about 1000 levels)"
        ) from None
    if not isinstance(body, dict):
        raise InvalidRequest('the body must be a JSON object like {"question": "...", "top_k": 5}')
    unknown = sorted(set(body) - set(REQUEST_KEYS[path]))
    if unknown:
        raise InvalidRequest(f"unknown field(s) {unknown}; valid: {', '.join(REQUEST_KEYS[path])}")
    if path == "/api/dialogue":
        try:
            request = DialogueRequest.from_dict(body, "the body")
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None
        for i, turn in enumerate(request.turns):
            if turn.get("role") == "user":
                _check_length(f"turns[{i}].content", turn.get("content", ""), max_question_chars)
        return {"turns": request.turns, "context": request.context}
    question = body.get("question")
    if not isinstance(question, str) or not question.strip():
        raise InvalidRequest("'question' is required: a non-empty string")
    _check_length("'question'", question, max_question_chars)
    top_k = body.get("top_k")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K):
        raise InvalidRequest(
            f"'top_k' must be an integer from 1 to {MAX_TOP_K}, or null for the default; got {top_k!r}"
        )
    history = body.get("history") or []
    if not isinstance(history, list) or not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in history
    ):
        raise InvalidRequest('\'history\' must be a list of {"role": str, "content": str}')
    return {"question": question, "top_k": top_k, "history": history}


def _check_length(field: str, text: str, limit: int) -> None:
    if len(text) > limit:
        raise InvalidRequest(
            f"{field} has {len(text)} characters, more than the limit of {limit}; shorten it, or raise "
            "max_question_chars (python -m rag_app --set max_question_chars=N serve)"
        )


def chunk_json(chunk: Chunk, score: float | None) -> dict[str, Any]:
    return {
        "chunk_id": chunk.chunk_id,
        "doc_id": chunk.doc_id,
        "text": chunk.text,
        "score": score,
        "kind": chunk.kind,
        "parent_id": chunk.parent_id,
        "book": chunk.book,
        "section": chunk.section,
        "page_start": chunk.page_start,
        "page_end": chunk.page_end,
    }


def stages_json(trace: Trace) -> dict[str, list[dict[str, Any]]]:
    return {
        s.name: [{"chunk_id": h.chunk_id, "score": h.score, "rank": h.rank} for h in s.hits]
        for s in trace.stages
        if s.name != "generation"
    }


def context_scores(result: RetrievalResult, pipeline: RagPipeline) -> dict[str, float]:
    """Each context chunk's best reranked score (a parent takes its best child's)."""
    ids = {c.chunk_id for c in result.context}
    reranked = result.trace.stage("reranked")
    out: dict[str, float] = {}
    for h in reranked.hits if reranked else ():
        chunk = pipeline.index.chunks.get(h.chunk_id)
        key = h.chunk_id if h.chunk_id in ids else (chunk.parent_id if chunk is not None else None)
        if key in ids:
            out[key] = max(out.get(key, h.score), h.score)
    return out


def retrieve_json(result: RetrievalResult, pipeline: RagPipeline) -> dict[str, Any]:
    scores = context_scores(result, pipeline)
    return {
        "question": result.question,
        "items": [chunk_json(c, scores.get(c.chunk_id)) for c in result.context],
        "stages": stages_json(result.trace),
        "degraded": result.degraded,
        "degradation_reason": result.degradation_reason,
    }


def chat_json(result: ChatResult) -> dict[str, Any]:
    return {
        "question": result.question,
        "answer": result.answer,
        "sources": [s.to_dict() for s in result.sources],
        "context_used": [chunk_json(c, None) for c in result.context_used],
        "refused": result.refused,
        "degraded": result.degraded,
        "degradation_reason": result.degradation_reason,
        "generator": result.generator,
        "stages": stages_json(result.trace),
        "usage": asdict(result.usage),
    }


def answer(pipeline: RagPipeline, path: str, req: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Run the pipeline for a parsed request: (HTTP status, body). Not thread-safe: one at a time."""
    if path == "/api/retrieve":
        result = pipeline.retrieve(req["question"], req["top_k"])
        body, empty = retrieve_json(result, pipeline), not result.context
    elif path == "/api/dialogue":
        # stating limits is an answer of the tutor, not a missing resource: always 200
        body, empty = pipeline.dialogue(req["turns"], req["context"]).to_dict(), False
    else:
        chat = pipeline.chat(req["question"], req["top_k"], req["history"])
        body, empty = chat_json(chat), not chat.context_used
    if empty:
        return 404, {**body, "error": "no_relevant_material", "detail": NO_MATERIAL}
    return 200, body
