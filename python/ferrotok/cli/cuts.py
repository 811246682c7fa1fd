"""Where a file may be cut into parts that encode as the whole does.

A file is encoded or counted a block at a time (so that memory stays bounded, progress can be
shown and Ctrl-C stops it within a block), cut where every OpenAI pattern ends a piece whatever
follows: after a "\\n" that follows a non-space character, before any character but a space or
"/". No alternative of the r50k, cl100k or o200k pattern that can hold such a "\\n" goes on past
it into such a character (the letter runs cannot start with "\\n" nor take it as their one
leading symbol, the punctuation runs take only newlines and "/" after them, the whitespace run
is the "\\n" alone), none starts at the "\\n" and goes on past it (the punctuation runs may start
with a space only), and that "\\n" is one piece whether the text goes on or ends there, so the
parts' ids joined are the whole's ids. So a line may start with a letter, a digit, "{", "<",
"#", a mark...: JSON Lines and markup are cut too. (A "\\r\\n" is not a cut: r50k splits it when
a letter follows and not at the end.) Python's isspace() holds for every char the patterns' \\s
matches, so a cut found here is one in the patterns' own terms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core import Encoding


def last_cut(data: bytes | bytearray, start: int = 0) -> int:
    """The last place in `data[start:]` (UTF-8) where it may be cut (see the module doc), or 0.
    (Only the bytes added since the last search are searched, so that text with no cut in it
    costs one pass, not one per block.) The chars either side of a "\n" are decoded to be
    tested as `str` tests them; one that is not whole UTF-8 here is no cut."""
    i = data.rfind(b"\n", max(start, 1), len(data) - 1)
    while i > 0:
        after, before = _char_at(data, i + 1), _char_before(data, i)
        if after and not after.isspace() and after != "/" and before and not before.isspace():
            return i + 1
        i = data.rfind(b"\n", max(start, 1), i)
    return 0


def _char_at(data: bytes | bytearray, i: int) -> str:
    """The char whose UTF-8 starts at `data[i]`, or "" if there is none whole."""
    lead = data[i]
    width = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    try:
        return bytes(data[i : i + width]).decode("utf-8")
    except UnicodeDecodeError:
        return ""


def _char_before(data: bytes | bytearray, i: int) -> str:
    """The char whose UTF-8 ends just before `data[i]`, or "" if there is none whole."""
    j = i - 1
    while j > max(i - 4, 0) and 0x80 <= data[j] < 0xC0:  # continuation bytes
        j -= 1
    try:
        return bytes(data[j:i]).decode("utf-8")
    except UnicodeDecodeError:
        return ""


def can_cut(enc: Encoding) -> bool:
    from ..openai_public import CL100K_PATTERN, O200K_PATTERN, R50K_PATTERN

    patterns = (R50K_PATTERN, CL100K_PATTERN, O200K_PATTERN)
    return enc._pat_str in patterns and not any("\n" in t for t in enc.special_tokens_set)
