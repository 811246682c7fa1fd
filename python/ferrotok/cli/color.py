"""Tokens made visible: each token's text with what would not show escaped, and the text
rendered with token boundaries, as `|` separators or alternating background colours.

The plain rendering is unambiguous: `\\`, `|` and control characters are escaped, so the
tokens can be read back from it.
"""

from __future__ import annotations

import os
import sys

# Pastel backgrounds (xterm 256 colours) with black text: readable on light and dark themes.
_BACKGROUNDS = (153, 223, 194, 225, 230)
_RESET = "\x1b[0m"


def token_text(token: bytes, plain: bool, newline: str = "\\n") -> str:
    """A token's text for display, one escape per character that would not show.

    Control characters (a terminal would obey escape codes) become `\\xNN`, `\\t`, `\\r`;
    a newline becomes `newline`; bytes that are not whole UTF-8 characters on their own
    (a character split between tokens) become `\\xNN`. In plain mode, `\\` and `|` are
    escaped too, so the separator is unambiguous.

    >>> token_text(b"a|b\\t\\xe4", plain=True)
    'a\\\\|b\\\\t\\\\xe4'
    """
    out = []
    for c in token.decode("utf-8", errors="surrogateescape"):
        o = ord(c)
        if c == "\n":
            out.append(newline)
        elif 0xDC80 <= o <= 0xDCFF:  # an undecodable byte, from surrogateescape
            out.append(f"\\x{o - 0xDC00:02x}")
        elif plain and c in "\\|":
            out.append("\\" + c)
        elif c == "\t":
            out.append("\\t" if plain else c)
        elif c == "\r":
            out.append("\\r")
        elif o < 0x20 or 0x7F <= o < 0xA0:
            out.append(f"\\x{o:02x}")
        else:
            out.append(c)
    return "".join(out)


def want_color(choice: str) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    return (
        sys.stdout.isatty()
        and "NO_COLOR" not in os.environ
        and os.environ.get("TERM", "") != "dumb"
    )


def render_tokens(tokens: list[bytes], color: bool, first: int = 0, end: bool = True) -> str:
    """The text with visible token boundaries; `first` is the number of tokens shown before
    these (a file is shown a part at a time), and `end` ends the output with a newline.

    Plain: tokens separated by `|`, with `\\`, `|` and control characters escaped so the
    output is unambiguous. Colour: each token on an alternating background. In both, a
    newline shows as `\\n` and then breaks the line.

    >>> render_tokens([b"hello", b" world", b"!\\n", b"a|b"], color=False)
    'hello| world|!\\\\n\\n|a\\\\|b\\n'
    """
    parts = []
    for i, token in enumerate(tokens, start=first):
        if color:
            start = f"\x1b[48;5;{_BACKGROUNDS[i % len(_BACKGROUNDS)]}m\x1b[38;5;16m"
            # End the colour before each line break, so it does not fill the line's rest.
            shown = token_text(token, plain=False, newline="\\n" + _RESET + "\n" + start)
            parts.append(start + shown + _RESET)
        else:
            if i:
                parts.append("|")
            parts.append(token_text(token, plain=True, newline="\\n\n"))
    out = "".join(parts)
    return out if out.endswith("\n") or not end else out + "\n"
