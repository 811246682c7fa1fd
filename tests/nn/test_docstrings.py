"""The examples in ferrotok.nn's and ferrotok.data's docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib
import warnings

import pytest

MODULES = [
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


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    import torch

    torch.manual_seed(0)
    module = importlib.import_module(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager flex_attention's "not compiled" warning
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 0, f"{name} has no docstring examples"
    assert result.failed == 0
