"""rag_eval's import graph: no runtime import cycle (imports under ``if TYPE_CHECKING:``
and inside functions do not run at import time, so they do not count)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "rag_eval"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in ROOT.rglob("*.py")}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _top_level_imports(tree: ast.Module, name: str, is_package: bool) -> set[str]:
    """Modules imported when ``name`` is imported: its module-level imports, outside
    ``TYPE_CHECKING`` blocks, with relative imports resolved."""
    found: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If):
            todo += node.orelse if _is_type_checking(node) else node.body + node.orelse
        elif isinstance(node, ast.Try):
            todo += node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, base] if base else package)
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets: set[str] = set()
        for imported in _top_level_imports(tree, name, path.name == "__init__.py"):
            parts = imported.split(".")
            # importing a.b.c runs a, a.b and a.b.c
            targets |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & modules.keys()
        graph[name] = targets - {name}
    for name in modules:  # a submodule's import runs its package first
        parent = name.rpartition(".")[0]
        if parent in modules:
            graph[name].add(parent)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _package_cycle(component: list[str]) -> bool:
    """A package and the submodules its ``__init__`` imports: a normal, working layout
    (``rag_eval.tiers`` registering its built-in tiers, each a package of its own), not a
    cycle between floors: every module of the component is inside one of them."""
    return any(all(m == p or m.startswith(p + ".") for m in component) for p in component)


def test_the_walker_finds_a_cycle_and_ignores_type_checking_imports() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    tree = ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x\ndef f():\n    import y\nimport z\n"
    )
    assert _top_level_imports(tree, "m", False) == {"typing", "typing.TYPE_CHECKING", "z"}
    assert _top_level_imports(ast.parse("from .base import T\n"), "p", True) == {"p.base", "p.base.T"}


def test_rag_eval_has_no_runtime_import_cycle() -> None:
    graph = _graph()
    assert "rag_eval.gates.thresholds" in graph and "rag_eval.tiers" in graph["rag_eval.gates.thresholds"]
    cycles = [c for c in _cycles(graph) if not _package_cycle(c)]
    assert cycles == [], "runtime import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)
