"""`{verb} {name}: N%` on stderr while a command works through a big input, on a terminal only.

An open progress line is ended (`end_progress_line`) before any message is printed, so that a
message never lands at the end of a progress line.
"""

from __future__ import annotations

import sys


class Progress:
    """`{verb} {name}: N%` on stderr as `update(done)` moves through `total`, shown only on a
    terminal and for work of at least `least` (of the same unit as `total`)."""

    line_open = False  # a progress line awaits its newline: `main` ends it before a message

    def __init__(self, verb: str, name: str, total: int | None, least: int) -> None:
        self.label = f"{verb} {name}"
        self.total = total or 0
        self.show = total is not None and total >= least and sys.stderr.isatty()
        self.shown = -1

    def update(self, done: int) -> None:
        if self.show and self.total:
            percent = min(100, done * 100 // self.total)
            if percent != self.shown:
                print(f"\r{self.label}: {percent}%", end="", file=sys.stderr, flush=True)
                self.shown = percent
                Progress.line_open = True

    def close(self) -> None:
        end_progress_line()


def end_progress_line() -> None:
    if Progress.line_open:
        print(file=sys.stderr)
        Progress.line_open = False
