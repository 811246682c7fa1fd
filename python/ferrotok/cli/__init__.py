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
from the argument, `--file PATH` (once) or standard input, and is read as UTF-8 exactly as it
is (a trailing newline is text too). The TEXT argument is always the text itself, never a file
name (`count`'s arguments are files, as `wc`'s are). A user mistake (unknown encoding,
unreadable or non-UTF-8 file, bad ids, special-token text without `--allow-special`, encoding
files missing offline) is a message on stderr and exit status 2, never a traceback; so is a
write that fails (a full disk, a closed standard output). A reader that goes away (`| head`)
ends the command quietly with status 141, Ctrl-C with 130.

Each subcommand is a module of this package with `register(subparsers)`, which adds its parser
and `set_defaults(func=run)` where `run(args) -> int` returns the exit status (raising
`CLIError` for a user mistake); `build_parser` calls them in order. The modules they share:
`common` (errors, the common arguments, stdout), `inputs` (reading TEXT / --file / stdin, and
a file in parts), `cuts` (where a file may be cut), `threads` (parts on several threads),
`arrays` (ids as 4-byte arrays, `.npy`) and `color`; progress lines are `ferrotok.progress`'s.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from typing import Any, Callable

from ..progress import end_line
from . import count, decode, encode, encodings, show, tokenize, train
from .common import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_USER_ERROR,
    CLIError,
    ClosedStdout,
    add_encoding_arguments,
    load_encoding,
)

__all__ = ["CLIError", "build_parser", "main", "add_encoding_arguments", "load_encoding"]


class _Parser(argparse.ArgumentParser):
    """An `ArgumentParser` whose own writes (the help, the version, usage errors) raise when
    they fail, as every other write of the command does: argparse's ignore `OSError`, so
    `ferrotok --help > /dev/full` lost the help and exited 0. (Subcommands' parsers are of
    the class of the parser that makes them.)"""

    def _print_message(self, message: str, file: Any = None) -> None:
        if message:
            (file or sys.stderr).write(message)


def build_parser() -> argparse.ArgumentParser:
    """The `ferrotok` argument parser; each subcommand sets `func(args) -> int`."""
    from .. import __version__

    parser = _Parser(
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

    Nothing the user or the environment does ends in a traceback: a user mistake is one line
    on stderr and status 2, a write that fails (a full disk, a closed standard output) too;
    a reader that goes away (`| head`) ends it quietly with 141, as SIGPIPE would (but after
    cleaning up); Ctrl-C ends it with 130.

    >>> main(["encode", "hello world"])
    15339 1917
    0
    """
    # Started with standard output or error closed (`>&-`): Python has None there. Writes to
    # stdout then fail with a message; messages for a closed stderr go nowhere.
    closed_stdout, closed_stderr = sys.stdout is None, sys.stderr is None
    if closed_stdout:
        sys.stdout = ClosedStdout()
    if closed_stderr:
        sys.stderr = io.StringIO()
    # A path that is not UTF-8 (argv's undecodable bytes are lone surrogates) is printed as
    # its own bytes (`saved: PATH`), as Python does in the C locale, not as a traceback.
    errors = getattr(sys.stdout, "errors", None)
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None and errors == "strict":
        reconfigure(errors="surrogateescape")
    try:
        return _run(argv)
    finally:
        if reconfigure is not None and errors == "strict":
            reconfigure(errors="strict")
        if closed_stdout:
            sys.stdout = None
        if closed_stderr:
            sys.stderr = None


def _run(argv: list[str] | None) -> int:
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:  # --help, --version, or a usage error (argparse says why)
            if e.code is None or e.code == 0:  # the help or the version was written
                sys.stdout.flush()  # a full disk shows here, not at exit
            return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
        func: Callable[[argparse.Namespace], int] = args.func
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
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, with the status a process
        # killed by SIGPIPE has in a shell, and keep Python from complaining again when it
        # flushes stdout at exit.
        _stdout_to_devnull()
        return EXIT_BROKEN_PIPE
    except OSError as e:
        # Most often writing failed (a full disk, `> /dev/full`, a closed stdout); the files
        # the command reads give CLIErrors that name them. Either way: a message.
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
