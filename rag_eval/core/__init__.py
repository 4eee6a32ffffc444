"""The ground floor: the types every other part of rag_eval speaks, importing nothing of
rag_eval outside this package.

* ``contract`` — what a system under test returns (``Retrieval``, ``RetrievedItem``,
  ``Answer``) and the checks that turn a returned mapping into them;
* ``dialogue`` — the dialogue call of the contract (``DialogueRequest``, ``DialogueTurn``)
  and the action and hint-level names it uses;
* ``records`` — the adapters' typed records (documents, chunks, hits, stage results);
* ``stages`` — a system's declared retrieval stages;
* ``case`` — ``CaseResult``, the record of one evaluated case;
* ``errors`` — the framework's own errors, each message saying the fix.

The names a system or a tier author imports are re-exported here, so
``from rag_eval.core import Answer, Retrieval, RetrievedItem, CaseResult`` is the stable
spelling whichever module of this package defines them.
"""

from __future__ import annotations

from rag_eval.core.case import CaseResult
from rag_eval.core.contract import Answer, ContractError, Retrieval, RetrievedItem, SystemUnderTest
from rag_eval.core.dialogue import DialogueRequest, DialogueSystem, DialogueTurn
from rag_eval.core.errors import ConfigError, RagEvalError, ServiceError

__all__ = [
    "Answer",
    "CaseResult",
    "ConfigError",
    "ContractError",
    "DialogueRequest",
    "DialogueSystem",
    "DialogueTurn",
    "RagEvalError",
    "Retrieval",
    "RetrievedItem",
    "ServiceError",
    "SystemUnderTest",
]
