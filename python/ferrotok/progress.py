"""Progress on stderr: one line, redrawn in place, drawn only when stderr is a terminal.

`Percent` is the command line's (`encoding FILE: 42%`), `Phases` training's (a bar per phase:
counting, then merging); `ferrotok.data`'s `JobProgress` draws through a `Line` too. One
line is open at a time: `end_line` ends it, and is called before any message is printed, so
that a message never lands at the end of a progress line.
"""

from __future__ import annotations

import sys
import time


class Line:
    """A progress line on stderr, shown if `enabled` and stderr is a terminal."""

    open = False  # some progress line awaits its newline

    def __init__(self, enabled: bool) -> None:
        stream = sys.stderr
        self.enabled = bool(enabled) and stream is not None and stream.isatty()

    def draw(self, text: str) -> None:
        print("\r" + text, end="", file=sys.stderr, flush=True)
        Line.open = True


def end_line() -> None:
    """Ends the open progress line, if there is one."""
    if Line.open:
        print(file=sys.stderr, flush=True)
        Line.open = False


class Percent(Line):
    """`{verb} {name}: N%` as `update(done)` moves through `total`, shown only for work of at
    least `least` (of the same unit as `total`)."""

    def __init__(self, verb: str, name: str, total: int | None, least: int) -> None:
        super().__init__(total is not None and total >= least)
        self.label = f"{verb} {name}"
        self.total = total or 0
        self.shown = -1

    def update(self, done: int) -> None:
        if self.enabled and self.total:
            percent = min(100, done * 100 // self.total)
            if percent != self.shown:
                self.draw(f"{self.label}: {percent}%")
                self.shown = percent

    def close(self) -> None:
        end_line()


class Phases(Line):
    """A bar per phase of training, `bar(phase, done, total)` (`total` None: unknown), redrawn
    at most every 0.1 s; each phase starts a line of its own."""

    def __init__(self, enabled: bool) -> None:
        super().__init__(enabled)
        self.start = time.monotonic()
        self.last = 0.0
        self.phase = ""

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if phase == self.phase and now - self.last < 0.1 and done != total:
            return
        if phase != self.phase:
            end_line()
            self.start = now
        self.phase, self.last = phase, now
        unit, scale = ("MB", 1e6) if phase == "counting" else ("merges", 1.0)

        def fmt(x: float) -> str:
            return f"{x / scale:,.1f}" if scale != 1.0 else f"{int(x):,}"

        if total:
            frac = min(1.0, done / total)
            bar = "#" * int(frac * 30) + "-" * (30 - int(frac * 30))
            self.draw(
                f"{phase:>8} [{bar}] {fmt(done)}/{fmt(total)} {unit} {now - self.start:6.1f}s"
            )
        else:
            self.draw(f"{phase:>8} {fmt(done)} {unit} {now - self.start:6.1f}s")

    def close(self) -> None:
        if self.enabled and self.phase:
            end_line()
            self.phase = ""
