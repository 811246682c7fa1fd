"""`ferrotok encode`: text → token ids, as a list, JSON or a `.npy` array.

Every id is made before anything is written: an error in the input (a bad byte, a special
token's text) leaves no partial output behind.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..files import atomic_write
from .arrays import id_array, output_chunks
from .common import (
    EXIT_OK,
    CLIError,
    add_text_arguments,
    load_encoding,
    stdout_write,
)
from .inputs import check_one_source, encoded_parts

if TYPE_CHECKING:
    import array

    from ..core import Encoding


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `encode` to the `ferrotok` command's subcommands."""
    p = subparsers.add_parser("encode", help="text -> token ids", description=cmd_encode.__doc__)
    add_text_arguments(p)
    p.add_argument(
        "--format",
        choices=("list", "json", "npy"),
        default="list",
        help="list: space-separated ids; json: a JSON list; npy: a .npy uint32 array",
    )
    p.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of stdout")
    p.set_defaults(func=cmd_encode)


def _encode_input(enc: Encoding, args: argparse.Namespace) -> array.array[int]:
    """The ids of the `TEXT` argument, `--file` or standard input; a file is read and encoded
    in parts (see `ferrotok.cli.cuts`)."""
    ids = id_array()
    for part in encoded_parts(enc, args, "encoding"):
        ids.extend(part)
    return ids


def cmd_encode(args: argparse.Namespace) -> int:
    """`ferrotok encode`: text → token ids."""
    check_one_source(args)
    enc = load_encoding(args)
    # Every id is made before anything is written: an error in the input (a bad byte, a
    # special token) leaves no partial output behind.
    ids = _encode_input(enc, args)
    if args.output is not None and args.output != "-":
        try:
            atomic_write(args.output, output_chunks(ids, args.format, args.output))
        except OSError as e:
            raise CLIError(f"{args.output}: cannot write ({e.strerror or e})") from None
        return EXIT_OK
    if args.format == "npy" and sys.stdout.isatty():
        raise CLIError("refusing to write binary .npy data to a terminal; use -o PATH or redirect")
    for chunk in output_chunks(ids, args.format):
        stdout_write(chunk)
    return EXIT_OK
