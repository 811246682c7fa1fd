"""A/B: two builds of ferrotok on the same text met once, as a pinned pair of processes.

On this kind of machine (a VM on a shared host) the speed of one process run differs from the
next by more than most single changes do, so two builds timed in separate runs can say
anything. Here each build runs as a worker process (its own Python, say two virtualenvs),
both pinned to one core; the parent alternates them round by round (the order flips each
round) over ~4 KB documents of the shared corpus, each met once, with `--evict` MB of other
data touched before every round (as another engine or another stage of a pipeline would
leave the caches), and prints the median of per-round speed ratios B/A and the total ratio.

    python benches/ab.py PYTHON_A PYTHON_B [--model cl100k|<tokenizer.json stem>] [--mb 10]
        [--rounds 48] [--evict 32] [--model-b MODEL] [--list]

`--model-b` gives B another model (the same Python twice compares two models on one build,
e.g. Llama 3 against cl100k, each in a process of its own). `--list` times `encode_ordinary`
(a list of ints, as tiktoken's face returns) instead of `encode_to_numpy`.

A ratio above 1 means B is faster. Read a change from the medians of three runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def worker(model: str, mb: float, rounds: int, evict_mb: float, as_list: bool) -> None:
    """Runs round `k` of the documents for each `k` read from stdin; prints its CPU seconds."""
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    sys.path.insert(0, str(HERE))
    import ferrotok
    import numpy as np
    from hf import SHARED, documents

    docs = documents(mb, at=0.3)
    warm = documents(0.1, at=0.2)
    if model == "cl100k":
        enc = ferrotok.get_encoding("cl100k_base")
    else:
        enc = ferrotok.Encoding.from_hf(SHARED / "tokenizers" / f"{model}.tokenizer.json")
    enc.build_tables()
    for d in warm:
        enc.encode_ordinary(d)
    encode = (
        enc.encode_ordinary if as_list else lambda d: enc.encode_to_numpy(d, disallowed_special=())
    )
    buf = np.zeros(int(evict_mb * 1e6 / 8) + 1, dtype=np.int64)
    chunks = [docs[i::rounds] for i in range(rounds)]
    print("ready", flush=True)
    for line in sys.stdin:
        k = int(line)
        if evict_mb:
            buf[::8] += 1  # one write a cache line
        start = time.thread_time()
        for d in chunks[k]:
            encode(d)
        print(time.thread_time() - start, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("python_a")
    parser.add_argument("python_b")
    parser.add_argument("--model", default="cl100k")
    parser.add_argument("--model-b", help="B's model, if not --model's (two models, one build)")
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=48)
    parser.add_argument("--evict", type=float, default=32.0, help="MB touched before a round")
    parser.add_argument("--cpu", default="1", help="the core both workers are pinned to")
    parser.add_argument("--list", action="store_true", help="time encode_ordinary's lists")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.model, args.mb, args.rounds, args.evict, args.list)
        return
    work = [__file__, "a", "b", "--worker", "--mb", str(args.mb)]
    work += ["--rounds", str(args.rounds), "--evict", str(args.evict)]
    work += ["--list"] if args.list else []
    models = {"a": args.model, "b": args.model_b or args.model}
    procs = {
        ab: subprocess.Popen(
            ["taskset", "-c", args.cpu, python, *work, "--model", models[ab]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for ab, python in (("a", args.python_a), ("b", args.python_b))
    }
    for p in procs.values():
        assert p.stdin and p.stdout and p.stdout.readline().strip() == "ready"
    times: dict[str, list[float]] = {"a": [], "b": []}
    for k in range(args.rounds):
        for ab in ("a", "b") if k % 2 == 0 else ("b", "a"):
            p = procs[ab]
            assert p.stdin and p.stdout
            p.stdin.write(f"{k}\n")
            p.stdin.flush()
            times[ab].append(float(p.stdout.readline()))
    for p in procs.values():
        assert p.stdin
        p.stdin.close()
        p.wait()
    ratios = [a / b for a, b in zip(times["a"], times["b"])]
    total = sum(times["a"]) / sum(times["b"])
    name = models["a"] if models["a"] == models["b"] else f"{models['a']} / {models['b']}"
    print(f"{name}: B/A speed, median of rounds {statistics.median(ratios):.3f}, total {total:.3f}")


if __name__ == "__main__":
    main()
