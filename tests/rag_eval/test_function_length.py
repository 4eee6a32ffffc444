"""No function or method of rag_eval/ is longer than 80 lines (the project's standard).

The rule: a function's length is counted from its ``def`` line to the last line of its body,
both included; decorators are not counted (nor is anything after the body). Nested functions
and methods are measured on their own, and count towards the function that holds them too.
A function over the limit is split into smaller ones; this test names each one to split.
"""

from __future__ import annotations

import ast
from pathlib import Path

import rag_eval

MAX_LINES = 80
PACKAGE = Path(rag_eval.__file__).parent


def function_lengths(source: str) -> list[tuple[str, int, int]]:
    """(qualified name, def line, length) of every function and method in ``source``."""
    found: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                end = child.end_lineno if child.end_lineno is not None else child.lineno
                found.append((name, child.lineno, end - child.lineno + 1))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def test_function_lengths_counts_def_to_end_of_body_without_decorators() -> None:
    source = "@decorator\n@other\ndef f():\n    x = 1\n\n    return x\n\n\nclass C:\n    def m(self):\n        pass\n"
    assert function_lengths(source) == [("f", 3, 4), ("C.m", 10, 2)]


def test_no_function_in_rag_eval_is_over_80_lines() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert modules, f"no module found under {PACKAGE}"
    too_long = [
        f"{path.relative_to(PACKAGE.parent)}:{line} {name} is {length} lines"
        for path in modules
        for name, line, length in function_lengths(path.read_text(encoding="utf-8"))
        if length > MAX_LINES
    ]
    assert not too_long, (
        f"functions over {MAX_LINES} lines (def line to the end of the body, decorators excluded); "
        "split each into smaller functions:\n" + "\n".join(too_long)
    )
