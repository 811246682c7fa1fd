"""Settings for the ferrotok.nn tests.

The tests use tiny tensors, for which intra-op parallelism only adds thread synchronisation: on a
busy 2-core runner two OpenMP threads per op made the suite ~3x slower than one. Speed is measured
in benches/attention.py (default threads), never here.
"""

from __future__ import annotations

import torch

torch.set_num_threads(1)
