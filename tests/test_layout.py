"""The layout of the `ferrotok` package: its modules import each other one way only (no cycle,
counting imports inside functions and under `TYPE_CHECKING` too), and no module imports another
module's private (`_name`) names: what two modules share lives in a module of its own, under a
public name.

The checker reads the installed package's source with `ast` (nothing is imported), and is run
first on a small package built to break both rules, so that it is seen to fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ferrotok


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package at `root`, by dotted name (`pkg.sub.mod`; `pkg.sub` for
    `pkg/sub/__init__.py`). A compiled module (`_core`) is there by its stub (`_core.pyi`)."""
    modules = {}
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.pyi")]):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        if path.suffix == ".py" or ".".join(parts) not in modules:
            modules[".".join(parts)] = path
    return modules


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of `from <level dots><target> import ...` written in `module`."""
    if level == 0:
        return target or ""
    base = module.split(".")
    if not is_package:
        base.pop()
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def imports(modules: dict[str, Path]) -> tuple[dict[str, set[str]], list[str]]:
    """For each module, the modules of the package it imports (anywhere in its code), and the
    private names imported from another module of the package, as `module: name from other`."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    private: list[str] = []
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(name, is_package, node.level, node.module)
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    if submodule in modules:  # `from . import x`: the module x
                        graph[name].add(submodule)
                        continue
                    if source in modules:
                        graph[name].add(source)
                        if alias.name.startswith("_") and not alias.name.startswith("__"):
                            private.append(f"{name}: {alias.name} from {source}")
        graph[name].discard(name)
    return graph, private


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_checker_finds_a_cycle_and_a_private_import(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from .a import f\n",
        "a.py": "from .b import g\n\ndef f():\n    from .sub import c\n",
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n"
        "from ._shared import helper\n",
        "_shared.py": "def helper(): ...\n\ndef _hidden(): ...\n",
        "sub/__init__.py": "",
        "sub/c.py": "from .._shared import _hidden\nfrom .. import _shared\nfrom ..sub import d\n",
        "sub/d.py": "import pkg.sub.c\n",
    }
    for name, text in files.items():
        (root / name).write_text(text)
    graph, private = imports(module_files(root, "pkg"))
    assert graph["pkg.a"] == {"pkg.b", "pkg.sub.c"}
    assert graph["pkg.sub.c"] == {"pkg._shared", "pkg.sub.d"}
    assert cycles(graph) == [["pkg.a", "pkg.b"], ["pkg.sub.c", "pkg.sub.d"]]
    assert private == ["pkg.sub.c: _hidden from pkg._shared"]


def test_ferrotok_modules_import_one_way() -> None:
    root = Path(ferrotok.__file__).parent
    modules = module_files(root, "ferrotok")
    assert {"ferrotok", "ferrotok.core", "ferrotok.cli", "ferrotok.cli.encode"} <= set(modules)
    graph, _ = imports(modules)
    assert "ferrotok.core" in graph["ferrotok.registry"]  # the walk does see imports
    assert cycles(graph) == []


def test_no_module_imports_another_modules_private_names() -> None:
    root = Path(ferrotok.__file__).parent
    _, private = imports(module_files(root, "ferrotok"))
    assert private == []
