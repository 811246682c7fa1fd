"""pytest set-up shared by every test: the oracle (tiktoken, offline) is configured on import."""

from __future__ import annotations

import oracle  # noqa: F401  (sets FERROTOK_DATA_DIR and tiktoken's offline cache)

