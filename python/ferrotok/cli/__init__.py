"""The `ferrotok` command: encode, decode, count and show tokens from a shell.

    $ ferrotok encode "hello world"
    15339 1917
    $ ferrotok encode --format json "hello world" | ferrotok decode
    hello world
    $ ferrotok count README.md LICENSE
      412 README.md
      229 LICENSE
      641 total
    $ ferrotok show --no-color "hello world"
    hello| world

Every subcommand takes `--encoding NAME` (default `cl100k_base`) or `--model NAME`. Text comes
from the argument, `--file PATH` or standard input, and is read as UTF-8 exactly as it is (a
trailing newline is text too). A user mistake (unknown encoding, unreadable or non-UTF-8 file,
bad ids, special-token text without `--allow-special`, encoding files missing offline) is a
message on stderr and exit status 2, never a traceback.

Each subcommand is a module of this package with `register(subparsers)`, which adds its parser
and `set_defaults(func=run)` where `run(args) -> int` returns the exit status (raising
`CLIError` for a user mistake); `build_parser` calls them in order. The modules they share:
`common` (errors, the common arguments, stdout), `inputs` (reading TEXT / --file / stdin, and
a file in parts), `cuts` (where a file may be cut), `threads` (parts on several threads),
`arrays` (ids as 4-byte arrays, `.npy`) and `color`; progress lines are `ferrotok.progress`'s.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

from ..progress import end_line
from . import count, decode, encode, encodings, show, tokenize, train
from .common import (
    EXIT_USER_ERROR,
    CLIError,
    add_encoding_arguments,
    load_encoding,
)

__all__ = ["CLIError", "build_parser", "main", "add_encoding_arguments", "load_encoding"]


def build_parser() -> argparse.ArgumentParser:
    """The `ferrotok` argument parser; each subcommand sets `func(args) -> int`."""
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="ferrotok",
        description="Byte-level BPE tokenizer with tiktoken's encodings.",
        epilog="Encoding files are read from FERROTOK_DATA_DIR, then tiktoken's cache "
        "(TIKTOKEN_CACHE_DIR), else downloaded.",
    )
    parser.add_argument("--version", action="version", version=f"ferrotok {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for subcommand in (encode, decode, count, show, encodings, train, tokenize):
        subcommand.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs the command line `argv` (default: `sys.argv[1:]`); returns the exit status.

    >>> main(["encode", "hello world"])
    15339 1917
    0
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, or a usage error (argparse says why)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_USER_ERROR)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        status = func(args)
        sys.stdout.flush()  # a full disk shows here, not as a traceback at exit
        return status
    except CLIError as e:
        end_line()
        print(f"ferrotok: error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        end_line()
        print("ferrotok: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, and keep Python from
        # complaining again when it flushes stdout at exit.
        _stdout_to_devnull()
        return 1
    except OSError as e:
        # Most often writing failed (a full disk, `> /dev/full`); the files the command reads
        # give CLIErrors that name them. Either way: a message, not a traceback.
        end_line()
        what = e.filename if e.filename is not None else "writing the output"
        print(f"ferrotok: error: {what}: {e.strerror or e}", file=sys.stderr)
        _stdout_to_devnull()
        return EXIT_USER_ERROR


def _stdout_to_devnull() -> None:
    """Points stdout at the null device, so that Python's flush at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
