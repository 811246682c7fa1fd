"""pytest set-up shared by every test: the oracle (tiktoken, offline) is configured on import."""

from __future__ import annotations

import signal

import oracle  # noqa: F401  (sets FERROTOK_DATA_DIR and tiktoken's offline cache)

# A shell starts a background job (`cmd &`) with SIGINT ignored, and children inherit an ignored
# signal across exec, so the Ctrl-C tests' children would never see their SIGINT. Handled here
# (the default handler), it is reset to the default in each child at exec, as in a terminal.
signal.signal(signal.SIGINT, signal.default_int_handler)
