"""rag_eval's import graph: no runtime import cycle (imports under ``if TYPE_CHECKING:``
and inside functions do not run at import time, so they do not count), and the floors of
docs/architecture.md: no subpackage imports one on a higher floor (imports inside
functions count here too), and no two subpackages import each other at import time."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "rag_eval"


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(root: Path = ROOT) -> dict[str, Path]:
    return {_module_name(p, root): p for p in root.rglob("*.py")}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _top_level_imports(tree: ast.Module, name: str, is_package: bool, lazy: bool = False) -> set[str]:
    """Modules imported when ``name`` is imported: its module-level imports, outside
    ``TYPE_CHECKING`` blocks, with relative imports resolved; with ``lazy``, the imports
    inside its functions and classes too (every import that can ever run)."""
    found: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if lazy and not isinstance(node, ast.If | ast.Try | ast.Import | ast.ImportFrom):
            todo += [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)]
        elif isinstance(node, ast.If):
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


def _graph(root: Path = ROOT, lazy: bool = False) -> dict[str, set[str]]:
    """Module -> the modules of ``root``'s package it imports (at import time, or ever
    with ``lazy``)."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets: set[str] = set()
        for imported in _top_level_imports(tree, name, path.name == "__init__.py", lazy):
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


# The floors, lowest first (docs/architecture.md, "Checking the floors"). A unit is a
# subpackage of rag_eval (rag_eval.tiers) or one of its top-level modules (rag_eval.session);
# a unit may import units on its own floor or below, never above.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("core", "rag_eval"),  # the types, and the package itself (its __init__ imports nothing)
    ("util",),  # utilities with no evaluation knowledge
    ("citations", "golden", "stats", "llm"),  # pure building blocks
    ("metrics", "corpus", "dataset"),
    ("adapters", "judge", "dialogue", "calibrate"),  # the engines: systems, judge, simulator
    ("tiers",),  # the registry and the built-in tiers
    ("gates",),  # thresholds, gates, regression
    ("results",),  # RunResults and the results file (they hold GateResults)
    ("session", "outputs"),  # the run's system; the formats over RunResults
    ("labels", "grid", "authoring"),  # the commands' own packages
    ("plugin", "cli", "__main__", "pytest_plugin"),  # the entry points
)

# (importing module, imported unit) -> why it may import up a floor. Each one is debt:
# the fix is moving the helper down, then deleting the line here. None today.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def _unit(module: str) -> str:
    """``pkg.sub.mod`` -> ``pkg.sub``; the package itself is its own unit."""
    return ".".join(module.split(".")[:2])


def _layer_violations(
    runtime: dict[str, set[str]],
    every: dict[str, set[str]],
    floors: tuple[tuple[str, ...], ...],
    exceptions: dict[tuple[str, str], str],
) -> list[str]:
    """What breaks the floors, one sentence each: a unit on no floor, an import of a unit
    on a higher floor (``every``: lazy imports count), a cycle between units at import time
    (``runtime``). Exceptions are (module, unit) edges left out of both checks."""
    floor_of = {u: i for i, floor in enumerate(floors) for u in floor}
    package = next(iter(runtime), "").split(".")[0]
    level = {f"{package}.{u}" if u != package else u: i for u, i in floor_of.items()}
    out: set[str] = set()
    units: dict[str, set[str]] = {}
    for name, graph in (("every", every), ("runtime", runtime)):
        for module, targets in graph.items():
            src = _unit(module)
            units.setdefault(src, set())
            for target in targets:
                dst = _unit(target)
                if dst == src or (module, dst) in exceptions:
                    continue
                missing = [u for u in (src, dst) if u not in level]
                if missing:
                    out |= {f"{u} is on no floor: add it to FLOORS" for u in missing}
                elif name == "every" and level[dst] > level[src]:
                    out.add(
                        f"{module} imports {dst}: {src} (floor {level[src]}) may not import "
                        f"{dst} (floor {level[dst]}); move the helper down, or add a commented "
                        "entry to EXCEPTIONS"
                    )
                elif name == "runtime":
                    units[src].add(dst)
    for component in _cycles(units):
        out.add("import-time cycle between subpackages: " + " <-> ".join(component))
    return sorted(out)


def test_the_layer_checker_reports_an_upward_import_and_a_cycle(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/low/__init__.py": "",
        "pkg/low/a.py": "def f():\n    from pkg.high.b import g\n",  # up a floor, lazily
        "pkg/high/__init__.py": "",
        "pkg/high/b.py": "from pkg.low import a\nfrom pkg.side import c\ndef g(): ...\n",
        "pkg/side/__init__.py": "",
        "pkg/side/c.py": "from pkg.high import b\n",  # high <-> side at import time
        "pkg/fine/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high import b\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    root = tmp_path / "pkg"
    floors = (("pkg", "low", "fine"), ("high", "side"))
    found = _layer_violations(_graph(root), _graph(root, lazy=True), floors, {})
    assert found == [
        "import-time cycle between subpackages: pkg.high <-> pkg.side",
        "pkg.low.a imports pkg.high: pkg.low (floor 0) may not import pkg.high (floor 1); "
        "move the helper down, or add a commented entry to EXCEPTIONS",
    ]
    excused = {("pkg.low.a", "pkg.high"): "a test", ("pkg.side.c", "pkg.high"): "a test"}
    assert _layer_violations(_graph(root), _graph(root, lazy=True), floors, excused) == []
    assert _layer_violations(_graph(root), _graph(root), (("pkg", "low"),), {}) == [
        "pkg.fine is on no floor: add it to FLOORS",
        "pkg.high is on no floor: add it to FLOORS",
        "pkg.side is on no floor: add it to FLOORS",
    ]


def test_rag_eval_keeps_its_floors() -> None:
    every = _graph(lazy=True)
    assert "rag_eval.grid.command" in every["rag_eval.plugin.hooks"]  # a lazy import, seen
    found = _layer_violations(_graph(), every, FLOORS, EXCEPTIONS)
    assert found == [], "the floors (docs/architecture.md, Checking the floors):\n" + "\n".join(found)
