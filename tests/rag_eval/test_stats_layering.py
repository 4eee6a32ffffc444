"""rag_eval/stats is the core's statistics: stdlib and numpy only — no pytest, no scipy or other
reference library (those are the test extra's), and nothing from the rest of rag_eval."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

STATS = Path(__file__).resolve().parents[2] / "rag_eval" / "stats"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_stats_imports_only_stdlib_numpy_and_itself() -> None:
    modules = sorted(STATS.glob("*.py"))
    assert len(modules) >= 9
    for path in modules:
        for name in _imports(path):
            top = name.split(".")[0]
            allowed = top in sys.stdlib_module_names or top == "numpy" or name.startswith("rag_eval.stats")
            assert allowed, (
                f"{path.name} imports {name}: rag_eval/stats may import only the stdlib, numpy and rag_eval.stats"
            )
