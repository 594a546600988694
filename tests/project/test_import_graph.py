"""The layers of docs/architecture.md, checked on the source with ast (nothing is imported to check it):

- runtime/ never imports render/ or kernel/, anywhere: at module level, inside a function, or for type
  checking only (a runtime object that needs a view gets one registered from above: kernel/display.py);
- runtime/ and render/ never import IPython or ipywidgets (kernel/ is the only layer that does);
- cireil's modules import each other without a circle, counting every import form: module level, inside a
  function, and under TYPE_CHECKING. A lazy import still makes the two modules depend on each other (neither
  can be read, tested or replaced alone), so a circle is untied at its cause, never by moving an import;
- the engine, its turns, the schedulers and the recorder never import the Agent, in any form: they reach it
  through protocols (engine/host.py, engine/runner.py, recorder/host.py).

import-linter (`lint-imports`, run by `./dev test`) keeps the finer contracts of pyproject.toml: the layers
inside runtime/ and kernel/ and the circles between sibling packages. This file is the check that needs no
tool and that says which line to look at.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import cireil

ROOT = Path(cireil.__file__).parent
UPPER = ("cireil.render", "cireil.kernel")
IPYTHON = ("IPython", "ipywidgets")


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    module_level: bool
    type_checking: bool

    def __str__(self) -> str:
        where = "module level" if self.module_level else "in a function"
        return f"{self.source}:{self.line} -> {self.target} ({where}{', TYPE_CHECKING' if self.type_checking else ''})"


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


MODULES = _modules()


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """Modules an import statement names: `from .x import y` is x.y when y is a module, else x."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join([*base, *([node.module] if node.module else [])])
    else:
        prefix = node.module or ""
    return [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else prefix for a in node.names]


def _is_type_checking(node: ast.If) -> bool:
    return ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _edges(module: str) -> list[Edge]:
    path, is_package = MODULES[module]
    edges: list[Edge] = []

    def walk(node: ast.AST, module_level: bool, type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                edges.extend(
                    Edge(module, target, child.lineno, module_level, type_checking)
                    for target in _targets(module, is_package, child)
                )
            elif isinstance(child, ast.If) and _is_type_checking(child):
                for inner in child.body:
                    walk(ast.Module(body=[inner], type_ignores=[]), module_level, True)
                for inner in child.orelse:
                    walk(ast.Module(body=[inner], type_ignores=[]), module_level, type_checking)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                walk(child, False, type_checking)
            else:  # class bodies, try/with/if at module level run on import
                walk(child, module_level, type_checking)

    walk(ast.parse(path.read_text(), str(path)), True, False)
    return edges


EDGES = {module: _edges(module) for module in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_graph_sees_every_kind_of_import():
    # the checks below are only as good as the graph: it must know these edges of today's code
    turn = {(e.target, e.module_level, e.type_checking) for e in EDGES["cireil.runtime.engine.turn"]}
    assert ("cireil.runtime.toolkit.tool", True, False) in turn  # from ..tool import execute
    assert ("cireil.runtime.sessions.messages", True, False) in turn  # from .. import messages as msgs
    assert ("cireil.runtime.config.engine_config", True, True) in turn  # under TYPE_CHECKING
    assert ("cireil.runtime.engine.openai", False, False) in turn  # inside Turn._complete
    assert ("cireil.runtime.toolkit.registry", False, False) in turn  # inside Turn._declared


def test_runtime_never_imports_render_or_kernel():
    crossing = [
        str(edge)
        for module, edges in EDGES.items()
        if module.startswith("cireil.runtime")
        for edge in edges
        if edge.target.startswith(UPPER)
    ]
    assert crossing == []


def test_only_the_kernel_layer_imports_ipython():
    crossing = [
        str(edge)
        for module, edges in EDGES.items()
        if module.startswith(("cireil.runtime", "cireil.render"))
        for edge in edges
        if edge.target.split(".")[0] in IPYTHON
    ]
    assert crossing == []


def test_the_engine_the_schedulers_and_the_recorder_never_import_the_agent():
    reaching = [
        str(edge)
        for module, edges in EDGES.items()
        if module.startswith(
            ("cireil.runtime.engine", "cireil.runtime.jobs", "cireil.runtime.tools", "cireil.runtime.recorder")
        )
        or module in ("cireil.runtime.toolkit.conversation", "cireil.runtime.engine.host")
        for edge in edges
        if edge.target == "cireil.runtime.agent"
    ]
    assert reaching == []


def test_no_import_cycle_in_any_form():
    graph = {module: {e.target for e in edges if e.target in MODULES} - {module} for module, edges in EDGES.items()}
    circles = _cycles(graph)
    lines = [str(e) for circle in circles for m in circle for e in EDGES[m] if e.target in circle and e.target != m]
    assert circles == [], "\n".join(lines)


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
