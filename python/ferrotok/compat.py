"""`ferrotok.load(path)`, kept so that code written against earlier ferrotok keeps working.

`ferrotok.load` is tiktoken's module of file loading (`ferrotok.load.load_tiktoken_bpe`...).
Earlier ferrotok also made that module callable, as `ferrotok.load(path)` for
`Encoding.load(path)`; `make_load_callable` still does, by switching the module's class to a
`ModuleType` subclass with `__call__` (Python's documented way to customise a module). Type
checkers see only the module: typed code, and the documentation, use `Encoding.load`.
"""

from __future__ import annotations

import os
import types

from .core import Encoding


class _CallableModule(types.ModuleType):
    """The class of the `ferrotok.load` module: the module, and `Encoding.load` when called."""

    def __call__(
        self,
        path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
        *,
        name: str | None = None,
        pat_str: str | None = None,
        special_tokens: dict[str, int] | None = None,
    ) -> Encoding:
        return Encoding.load(path, name=name, pat_str=pat_str, special_tokens=special_tokens)


def make_load_callable(module: types.ModuleType) -> None:
    """Makes `module` (`ferrotok.load`) callable as `Encoding.load`."""
    module.__class__ = _CallableModule
