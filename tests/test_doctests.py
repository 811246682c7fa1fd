"""Every `>>>` example in ferrotok runs and prints what it says: doctest over each module of the
installed package, found by walking its files (so a new module is covered without a list).

The one place doctests are collected: the modules below must hold examples, and no module's
example may fail. `ferrotok.nn` needs torch (the `nn` extra).
"""

from __future__ import annotations

import doctest
import importlib
import warnings
from pathlib import Path

import ferrotok
import pytest

ROOT = Path(ferrotok.__file__).parent


def _module_names() -> list[str]:
    names = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = ["ferrotok", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        if parts[-1] != "__main__":
            names.append(".".join(parts))
    return names


MODULES = _module_names()

# Modules (or packages, counting their submodules) whose docstrings show how they are used.
WITH_EXAMPLES = [
    "ferrotok",
    "ferrotok.core",
    "ferrotok.registry",
    "ferrotok.persist",
    "ferrotok.load",
    "ferrotok.model",
    "ferrotok.train",
    "ferrotok.cli",
    "ferrotok.data",
    "ferrotok.nn",
    "ferrotok.nn.alibi",
    "ferrotok.nn.attention",
    "ferrotok.nn.embedding",
    "ferrotok.nn.feedforward",
    "ferrotok.nn.functional",
    "ferrotok.nn.generation",
    "ferrotok.nn.kv_cache",
    "ferrotok.nn.normalization",
    "ferrotok.nn.positional",
    "ferrotok.nn.rope",
    "ferrotok.nn.transformer",
]


def _run(name: str) -> doctest.TestResults:
    if name == "ferrotok.nn" or name.startswith("ferrotok.nn."):
        torch = pytest.importorskip("torch")
        torch.manual_seed(0)
    module = importlib.import_module(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager flex_attention's "not compiled" warning
        return doctest.testmod(
            module,
            extraglobs={"get_encoding": ferrotok.get_encoding},
            optionflags=doctest.ELLIPSIS,
            verbose=False,
        )


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    result = _run(name)
    assert result.failed == 0, capsys.readouterr().out


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_module_has_examples(name: str) -> None:
    covered = [m for m in MODULES if m == name or m.startswith(name + ".")]
    assert covered, f"{name} is not a module of the installed package"
    if name == "ferrotok.nn" or name.startswith("ferrotok.nn."):
        pytest.importorskip("torch")
    finders = doctest.DocTestFinder()
    examples = sum(
        len(test.examples)
        for m in (covered if name != "ferrotok" else [name])
        for test in finders.find(importlib.import_module(m))
    )
    assert examples > 0, f"{name} has no docstring examples"
