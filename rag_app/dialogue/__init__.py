"""The tutor: a dialogue policy over the pipeline (clarify, state limits, layered hints,
answer interception). ``RagPipeline.dialogue(turns, context)`` is the entry point."""

from rag_app.dialogue.policy import CLARIFICATION_LIMIT, TutorPolicy

__all__ = ["CLARIFICATION_LIMIT", "TutorPolicy"]
