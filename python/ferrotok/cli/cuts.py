"""Where a file may be cut into parts that encode as the whole does: the core's rule
(`rust/src/encode/pretok/file_cuts.rs`, which says why it holds), for the command line.

A file is encoded or counted a part at a time (so that memory stays bounded, progress can be
shown and Ctrl-C stops it within a part), cut just after a "\\n" between two chars that are
not whitespace, the second not "/": with an OpenAI pattern (or another scanner of
`file_cuts::KEEPING_SPLITTERS`), and no special token holding a "\\n", the parts' ids joined
are the whole's ids; and so with a `tokenizer.json` pipeline the core admits
(`Pipeline::file_cuts_apply`: byte-level BPE on one of those scanners or a fused scanner, no
normalizer but NFC; a model that encodes each pre-token alone behind a pre-tokenizer that cuts
at whitespace first, and a normalizer that keeps the newline whitespace; SentencePiece BPE
whose newline is merged with nothing, each part after the first then encoded without the `▁`
in front, `continues`; no added token holding a "\\n" or taking the whitespace before it).
Unigram behind `Metaspace` alone is cut just before that "\\n" instead, where the normalizer
makes it the space that starts the next word (`Pipeline::last_file_cut`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core import last_file_cut

if TYPE_CHECKING:
    from ..core import Encoding


def last_cut(data: bytes | bytearray, start: int = 0, enc: Encoding | None = None) -> int:
    """The last place in `data[start:]` (UTF-8) where it may be cut, or 0: by the rule, or
    where `enc`'s pipeline cuts (`data` then starts a text or at a cut). (Only the bytes
    added since the last search need searching: text with no cut costs one pass.)"""
    if enc is not None:
        return enc._core_bpe.last_file_cut(data, start)
    return last_file_cut(data, start)


def can_cut(enc: Encoding) -> bool:
    """Whether `last_cut`'s cuts keep `enc`'s ids."""
    return enc._core_bpe.file_cuts_apply()
