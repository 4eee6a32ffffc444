# The plugin sandbox of tests/rag_eval (a small corpus and golden set, offline), shared.
from tests.rag_eval.conftest import sandbox, sandbox_cache

__all__ = ["sandbox", "sandbox_cache"]
