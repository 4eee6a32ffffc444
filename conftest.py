"""Wires the evaluation gate into pytest for this repository.

Copy this line into your own repository's conftest.py to get the options, markers,
fixtures and the gate (see docs/pytest.md).
"""

pytest_plugins = ["rag_eval.pytest_plugin"]
