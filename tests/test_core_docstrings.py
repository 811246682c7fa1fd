"""The examples in the public docstrings run and print what they claim."""

from __future__ import annotations

import doctest
import importlib

import ferrotok
import pytest

MODULES = ["ferrotok", "ferrotok.core", "ferrotok.registry", "ferrotok.persist"]


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module: str) -> None:
    mod = importlib.import_module(module)
    result = doctest.testmod(
        mod, extraglobs={"get_encoding": ferrotok.get_encoding}, optionflags=doctest.ELLIPSIS
    )
    assert result.attempted > 0, f"{module} has no examples"
    assert result.failed == 0
