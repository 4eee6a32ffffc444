"""The rag_eval plugin registers itself (pytest11 entry point of rag-eval-gate); nothing
to wire here. This repository's tests live in tests/ and eval_tests/."""
