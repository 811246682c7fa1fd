"""What every subcommand shares: the user-mistake exception and exit statuses, `--encoding` /
`--model` and the other common arguments, and writing to standard output.

A user mistake is a `CLIError`; `ferrotok.cli.main` prints it as one line and exits with
`EXIT_USER_ERROR`, never a traceback.
"""

from __future__ import annotations

import argparse
import errno
import io
import sys
from typing import TYPE_CHECKING, Any

from ..files import write_fully

if TYPE_CHECKING:
    from ..core import Encoding

DEFAULT_ENCODING = "cl100k_base"
EXIT_OK = 0
EXIT_USER_ERROR = 2
#: Ctrl-C, and a reader gone away: the statuses a shell shows for SIGINT and SIGPIPE.
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


class CLIError(Exception):
    """A user mistake: `main` prints `ferrotok: error: <message>` and exits with status 2."""


def add_encoding_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds `--encoding` / `--model` (one of them) to a subcommand's parser."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-e",
        "--encoding",
        metavar="NAME",
        help=f"encoding name (default: {DEFAULT_ENCODING}; see `ferrotok encodings`), or the path "
        "of a tokenizer.json, a directory holding one, a tekken.json, a SentencePiece .model "
        "or a saved .tiktoken",
    )
    group.add_argument(
        "-m", "--model", metavar="MODEL", help="use the encoding of this model, e.g. gpt-4o"
    )


def load_encoding(args: argparse.Namespace) -> Encoding:
    """The encoding chosen by `--encoding` / `--model`; `CLIError` if it cannot be had."""
    from .. import registry
    from ..load import DownloadError
    from ..model import encoding_name_for_model

    name = getattr(args, "encoding", None)
    model = getattr(args, "model", None)
    if model is not None:
        try:
            name = encoding_name_for_model(model)
        except KeyError:
            raise CLIError(
                f"unknown model {model!r}; pass --encoding with one of: "
                + ", ".join(registry.list_encoding_names())
            ) from None
    if name is None:
        name = DEFAULT_ENCODING
    # A name, or the path of a tokenizer.json (or a directory holding one) or of a saved
    # `.tiktoken` encoding.
    if name not in registry.list_encoding_names() and not registry.is_encoding_path(name):
        raise CLIError(
            f"unknown encoding {name!r}; known encodings: "
            + ", ".join(registry.list_encoding_names())
        )
    try:
        return registry.get_encoding(name)
    except DownloadError as e:
        # The message says what was tried and how to work offline (FERROTOK_DATA_DIR).
        raise CLIError(f"could not load encoding {name!r}: {e}") from None
    except (OSError, ValueError) as e:
        # A corrupt file in FERROTOK_DATA_DIR (the message names it), an unreadable cache, ...
        raise CLIError(f"could not load encoding {name!r}: {e}") from None


def stdout_write(data: bytes | memoryview | str) -> None:
    """Writes all of `data` to standard output; bytes go through untouched (no locale
    encoding). A reader that went away is a `BrokenPipeError`, a full disk an `OSError`, and
    a closed standard output too (see `ClosedStdout`): `main` says each in its way."""
    if isinstance(data, str):
        # A file name that is not UTF-8 (`count`'s rows) is written as its own bytes, as wc
        # writes it (argv's undecodable bytes are lone surrogates, PEP 383).
        data = data.encode("utf-8", errors="surrogateescape")
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(bytes(data).decode("utf-8", errors="replace"))
        return
    sys.stdout.flush()
    write_fully(buffer, data)
    buffer.flush()


class ClosedStdout(io.TextIOBase):
    """Standard output when the process started without one (`ferrotok ... >&-`: Python then
    has `sys.stdout = None`): every write is an `OSError` (EBADF) that says so."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def isatty(self) -> bool:
        return False


class _Once(argparse.Action):
    """`-f PATH` that may be given once: a second one is a usage error, not silently the one
    that counts (`encode -f a.txt -f b.txt` kept only b.txt)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        before = getattr(namespace, self.dest, None)
        if before is not None:
            parser.error(
                f"{'/'.join(self.option_strings)} may be given once (got {before!r} and "
                f"{values!r}); for several files, join them: cat A B | {parser.prog} -f -"
            )
        setattr(namespace, self.dest, values)


def add_file_option(parser: argparse.ArgumentParser, help: str) -> None:
    """`-f/--file PATH`, which may be given once (`-`: standard input)."""
    parser.add_argument("-f", "--file", metavar="PATH", action=_Once, help=help)


#: What TEXT means, said in the --help of every subcommand that takes it.
TEXT_IS_TEXT = (
    "TEXT is the text itself, never a file name: to read a file, use -f PATH "
    "(-f - or no TEXT: standard input)."
)


def add_text_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds what a command that reads text takes: `TEXT` or `--file`, `--encoding` /
    `--model`, and `--allow-special`; its --help says what TEXT is."""
    parser.add_argument(
        "text", nargs="?", metavar="TEXT", help="the text itself (default: standard input)"
    )
    add_file_option(parser, "read the text from PATH (UTF-8; -: standard input)")
    parser.epilog = TEXT_IS_TEXT
    add_encoding_arguments(parser)
    add_allow_special(parser)


def add_allow_special(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-special",
        action="store_true",
        help="encode special-token text (e.g. <|endoftext|>) as the special token "
        "(without it, such text is an error)",
    )
