"""pytest set-up shared by every test: the oracle (tiktoken, offline) is configured on import."""

from __future__ import annotations

import oracle  # noqa: F401  (sets FERROTOK_DATA_DIR and tiktoken's offline cache)
import pytest


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace: dict) -> None:
    import ferrotok

    doctest_namespace["get_encoding"] = ferrotok.get_encoding
