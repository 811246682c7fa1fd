"""What a pause costs the next passes: ferrotok against tiktoken, in one process.

    python benches/pause.py [--encoding o200k_base] [--corpus multilingual] [--mb 1] [--reps 5]

`encode.py` runs the encoders in turn, so each of ferrotok's samples starts after the other
encoders' samples. This script measures what that start costs. For each pause (none,
`time.sleep` of 1, 10 and 100 ms, and a Python loop of ~10 ms that reads little memory), each
encoder makes three passes over the corpus's ~4 KB documents (`encode_ordinary` per
document), waits out the pause, then makes three more, each timed on its own. It prints MB/s
per pass (medians over --reps repetitions, the pauses and encoders interleaved) and the first
pass's speed over the same encoder's back-to-back speed. ferrotok's ids are checked against
tiktoken's first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

PASSES = 3


def python_loop(seconds: float) -> Callable[[], None]:
    """A pure-Python loop of about `seconds` (calibrated once): busy, but reading little."""
    n = 100_000
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            pass
        took = time.perf_counter() - t0
        if took >= seconds / 4:
            break
        n *= 4
    n = max(1, int(n * seconds / took))

    def run() -> None:
        for _ in range(n):
            pass

    return run


def pauses() -> dict[str, Callable[[], None]]:
    return {
        "none": lambda: None,
        "sleep 1 ms": lambda: time.sleep(0.001),
        "sleep 10 ms": lambda: time.sleep(0.01),
        "sleep 100 ms": lambda: time.sleep(0.1),
        "Python loop ~10 ms": python_loop(0.01),
    }


def passes(encode: Callable[[str], object], docs: list[str]) -> list[float]:
    out = []
    for _ in range(PASSES):
        t0 = time.perf_counter()
        for d in docs:
            encode(d)
        out.append(time.perf_counter() - t0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encoding", default="o200k_base")
    ap.add_argument("--corpus", default="multilingual", help="a file of the corpus dir, no .txt")
    ap.add_argument("--corpus-dir", type=Path, default=benchlib.DEFAULT_CORPUS_DIR)
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args(argv)

    benchlib.setup_offline_env()
    import ferrotok
    import tiktoken

    corpora = benchlib.load_corpora(args.corpus_dir, [args.corpus], [], args.mb)
    if not corpora:
        return 2
    docs, mb = corpora[0].docs, corpora[0].nbytes / 1e6
    encoders = {
        "ferrotok": ferrotok.get_encoding(args.encoding).encode_ordinary,
        "tiktoken": tiktoken.get_encoding(args.encoding).encode_ordinary,
    }
    if any(encoders["ferrotok"](d) != encoders["tiktoken"](d) for d in docs):
        print("ferrotok's ids differ from tiktoken's")
        return 1
    waits = pauses()
    times: dict[tuple[str, str], list[list[float]]] = {(w, e): [] for w in waits for e in encoders}
    for _ in range(args.reps):
        for w, wait in waits.items():
            for e, encode in encoders.items():
                passes(encode, docs)  # warm: "none" is then back to back
                wait()
                times[w, e].append(passes(encode, docs))

    print(
        f"{args.encoding}, {args.corpus}: {mb:.2f} MB in {len(docs)} documents, "
        f"{args.reps} repetitions; MB/s of passes 1-{PASSES} after the pause (medians)"
    )
    head = f"{'pause':20}" + "".join(f"{e + ' passes':>24}{'first/none':>12}" for e in encoders)
    print(head)
    print("-" * len(head))
    back_to_back = {
        e: statistics.median(t for rep in times["none", e] for t in rep) for e in encoders
    }
    for w in waits:
        row = f"{w:20}"
        for e in encoders:
            medians = [statistics.median(rep[i] for rep in times[w, e]) for i in range(PASSES)]
            row += f"{' / '.join(f'{mb / t:.1f}' for t in medians):>24}"
            row += f"{back_to_back[e] / medians[0]:>11.2f}x"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
