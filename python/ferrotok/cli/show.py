"""`ferrotok show`: the text with token boundaries visible (colours, or `|`, or ids).

A file is shown as it is read, part by part, so memory stays bounded and Ctrl-C stops it.
"""

from __future__ import annotations

import argparse

from .color import render_tokens, token_text, want_color
from .common import (
    EXIT_OK,
    add_text_arguments,
    load_encoding,
    stdout_write,
)
from .inputs import check_one_source, encoded_parts


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `show` to the `ferrotok` command's subcommands."""
    p = subparsers.add_parser(
        "show", help="the text with token boundaries visible", description=cmd_show.__doc__
    )
    add_text_arguments(p)
    p.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour each token (auto: when stdout is a terminal and NO_COLOR is unset)",
    )
    p.add_argument(
        "--no-color",
        dest="color",
        action="store_const",
        const="never",
        help="same as --color never",
    )
    p.add_argument("--ids", action="store_true", help="one token per line: its id and its text")
    p.set_defaults(func=cmd_show)


def cmd_show(args: argparse.Namespace) -> int:
    """`ferrotok show`: the text with token boundaries visible (colours, or `|` + ids).

    A file is shown as it is read, part by part, so an error in a later part (a byte that is
    not UTF-8, a special token's text) is reported after the earlier parts are shown; the
    exit status is then non-zero. (`ferrotok encode` writes nothing until every id is made.)"""
    check_one_source(args)
    enc = load_encoding(args)
    color = want_color(args.color)
    # A file is shown as it is read, a part at a time: memory stays bounded (shown whole, it
    # would be held as a bytes object per token) and Ctrl-C stops it.
    shown, out = 0, ""
    width = len(str(enc.max_token_value))  # the same for every part
    for ids in encoded_parts(enc, args, "showing"):
        tokens = enc.decode_tokens_bytes(ids)
        if args.ids:
            lines = (f"{i:>{width}}  {token_text(t, plain=True)}\n" for i, t in zip(ids, tokens))
            out = "".join(lines)
        else:
            out = render_tokens(tokens, color=color, first=shown, end=False)
        shown += len(tokens)
        stdout_write(out)
    if not args.ids and not out.endswith("\n"):
        stdout_write("\n")
    return EXIT_OK
