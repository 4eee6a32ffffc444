"""A generator that asks an OpenAI-compatible chat model (through :class:`rag_app.llm.ChatClient`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from rag_app.generation.prompt import build_messages
from rag_app.generation.sources import REFUSAL_TEXT
from rag_app.llm import ChatClient
from rag_app.types import Chunk, Usage

log = logging.getLogger(__name__)


class OpenAIGenerator:
    """Answers from numbered context with ``[n]`` citations; name ``openai:<model>``.

    Temperature is low (``Settings.temperature``, 0.1 by default) but the answer is still
    not guaranteed to repeat, so ``deterministic`` is False and the evaluation may run
    repeated trials. Errors of the client (:class:`~rag_app.llm_errors.ChatError`) propagate:
    a failed answer must fail loudly, not turn into a fake refusal.
    """

    def __init__(self, client: ChatClient, model: str, temperature: float = 0.1, max_tokens: int = 600) -> None:
        if not model:
            raise ValueError("OpenAIGenerator needs a model name; set RAG_GENERATOR_MODEL")
        self.client = client
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    @property
    def deterministic(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"OpenAIGenerator(model={self.model!r}, temperature={self.temperature}, client={self.client!r})"

    def generate(
        self, question: str, context: Sequence[Chunk], history: Sequence[dict[str, str]] = ()
    ) -> tuple[str, Usage]:
        if not context:
            # Nothing to answer from: the rules say refuse, so no need to pay for a call.
            return REFUSAL_TEXT, Usage()
        return self.complete(build_messages(question, context, history))

    def complete(self, messages: Sequence[Mapping[str, str]]) -> tuple[str, Usage]:
        """One call with ready-made messages (also the tutor's turn, rag_app/generation/tutor_prompt.py)."""
        resp = self.client.complete(self.model, messages, temperature=self.temperature, max_tokens=self.max_tokens)
        if resp.finish_reason == "length":
            log.warning("reply from %s was cut at max_tokens=%d; raise max_answer_tokens", self.name, self.max_tokens)
        return resp.content.strip(), resp.usage
