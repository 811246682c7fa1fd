"""ferrotok for HuggingFace models: `tokenizers`' API and `transformers` on ferrotok's engine.

- `Tokenizer`: `tokenizers.Tokenizer`'s commonly used surface (`from_file`, `encode`,
  `encode_batch`, `decode`, padding, truncation, vocabulary queries) for any `tokenizer.json`
  that `ferrotok.Encoding.from_hf` loads, with HF's ids, offsets and masks.
- `patch_transformers()` / `unpatch_transformers()` / `patched_transformers()`: `transformers`'
  fast tokenizers encode through ferrotok, with identical outputs.
- `Encoding.to_hf(path)` (on `ferrotok.Encoding`) writes the other direction: a tokenizer.json
  HF loads with ferrotok's ids (`ferrotok.hf.export`).

Importing this package imports neither `tokenizers` nor `transformers`.
"""

from .encoding import Encoding
from .patch import (
    FerrotokBackend,
    patch_transformers,
    patched_transformers,
    transformers_patched,
    unpatch_transformers,
)
from .tokenizer import Tokenizer

__all__ = [
    "Encoding",
    "FerrotokBackend",
    "Tokenizer",
    "patch_transformers",
    "patched_transformers",
    "transformers_patched",
    "unpatch_transformers",
]
