"""`ferrotok encodings`: the encoding names `--encoding` accepts, one a line."""

from __future__ import annotations

import argparse

from .common import EXIT_OK, stdout_write


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `encodings` to the `ferrotok` command's subcommands."""
    p = subparsers.add_parser("encodings", help="list the encoding names")
    p.set_defaults(func=cmd_encodings)


def cmd_encodings(args: argparse.Namespace) -> int:
    """`ferrotok encodings`: the encoding names `--encoding` accepts."""
    from ..registry import list_encoding_names

    stdout_write("".join(name + "\n" for name in list_encoding_names()))
    return EXIT_OK
