"""`ferrotok count`: tokens per file, like `wc`, with a `total` line for several files.

A file that cannot be read or encoded is reported on its own line of stderr; the others are
still counted, and the exit status says that one failed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator

from ..progress import end_line
from . import inputs
from .common import (
    EXIT_OK,
    EXIT_USER_ERROR,
    CLIError,
    add_allow_special,
    add_encoding_arguments,
    load_encoding,
    stdout_write,
)
from .inputs import Part, input_parts
from .threads import map_parts


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `count` to the `ferrotok` command's subcommands."""
    p = subparsers.add_parser(
        "count",
        help="tokens per file, like wc",
        description=cmd_count.__doc__,
        epilog="FILE arguments are files, as for wc (unlike encode's and show's TEXT); "
        "to count a text, pipe it: printf %s TEXT | ferrotok count",
    )
    p.add_argument(
        "files", nargs="*", metavar="FILE", help="files to count (-, or none: standard input)"
    )
    add_encoding_arguments(p)
    add_allow_special(p)
    p.set_defaults(func=cmd_count)


# `count` hands small files to its threads in batches of at least this many bytes.
_COUNT_BATCH = 1 << 20


def cmd_count(args: argparse.Namespace) -> int:
    """`ferrotok count`: tokens per file, like `wc`; a `total` line for several files."""
    enc = load_encoding(args)
    paths: list[str | None] = list(args.files) or [None]
    names = ["<stdin>" if path in (None, "-") else path for path in paths]
    failed: set[int] = set()

    # The parts of every file go through one `map_parts`, so that files smaller than a part
    # are counted on all cores too, in batches of at least `_COUNT_BATCH` bytes, so that
    # small files do not pay a thread's hand-off each. A file's error comes back as its
    # result.
    # (The items' type is written out: an alias made at run time would need 3.10's `|`.)
    def batches() -> Iterator[list[tuple[int, Part | CLIError]]]:
        batch: list[tuple[int, Part | CLIError]] = []
        size = 0
        for i, path in enumerate(paths):
            try:
                for part in input_parts(enc, path, "counting"):
                    batch.append((i, part))
                    size += len(part[1])
                    if size >= _COUNT_BATCH:
                        yield batch
                        batch, size = [], 0
                    if i in failed:  # its first error is in: read no further
                        break
            except CLIError as e:
                batch.append((i, e))
        if batch:
            yield batch

    # `count`, not `len(encode(...))`: no ids at all (a list of ids takes several times the
    # memory of its text).
    call = enc._core_bpe.count_utf8

    def count(item: tuple[int, Part | CLIError]) -> tuple[int, int | CLIError]:
        i, part = item
        if isinstance(part, CLIError) or i in failed:
            return i, part if isinstance(part, CLIError) else 0
        try:
            return i, inputs.in_core(call, enc, names[i], args.allow_special, part)
        except CLIError as e:
            return i, e

    counts = [0] * len(paths)
    for results in map_parts(lambda batch: [count(item) for item in batch], batches()):
        for i, n in results:
            if i in failed:
                continue
            if isinstance(n, CLIError):
                # Like wc: report this file, count the others, fail at the end.
                failed.add(i)
                end_line()
                print(f"ferrotok: error: {n}", file=sys.stderr)
            else:
                counts[i] += n
    rows: list[tuple[int, str | None]] = [
        (counts[i], None if path in (None, "-") and len(paths) == 1 else (path or "-"))
        for i, path in enumerate(paths)
        if i not in failed
    ]
    if len(paths) > 1:
        rows.append((sum(n for n, _ in rows), "total"))
    width = max((len(str(n)) for n, _ in rows), default=1)
    out = "".join(f"{n:>{width}} {name}\n" if name is not None else f"{n}\n" for n, name in rows)
    stdout_write(out)
    return EXIT_USER_ERROR if failed else EXIT_OK
