"""Training benchmark: ferrotok vs rustbpe 0.1.0 vs HuggingFace tokenizers, same data, one run.

    python benches/train.py [--mb 50] [--vocab 32768] [--pattern cl100k_base] [--repeat 1]

The data is the first MB/2 of `english.txt` and of `code.txt` (from $FERROTOK_CORPUS_DIR, else
shared/corpus beside the repository), split into documents at blank lines; every trainer gets
the same documents and the same pattern. Each trainer runs in its own process, so its peak
memory is its own: "peak MB" is the growth of the process's peak RSS during training (the
documents are already in memory before it starts, for everyone). ferrotok's time is also
split into counting and merging. Prints a table and, with --json PATH, writes the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def corpus_dir() -> pathlib.Path:
    if "FERROTOK_CORPUS_DIR" in os.environ:
        return pathlib.Path(os.environ["FERROTOK_CORPUS_DIR"])
    for cand in (ROOT.parent / "shared" / "corpus", ROOT / "shared" / "corpus"):
        if cand.exists():
            return cand
    sys.exit("shared/corpus not found; set FERROTOK_CORPUS_DIR")


def load_docs(mb: float) -> list[str]:
    half = int(mb * 1e6 / 2)
    parts = []
    for name in ("english", "code"):
        with open(corpus_dir() / f"{name}.txt", "rb") as f:
            parts.append(f.read(half).decode("utf-8", errors="ignore"))
    return "\n\n".join(parts).split("\n\n")


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def child(trainer: str, mb: float, vocab: int, pattern_name: str) -> dict[str, object]:
    """Runs one trainer in this process and returns its figures."""
    from ferrotok.train import resolve_pattern

    pattern = resolve_pattern(pattern_name)
    docs = load_docs(mb)
    nbytes = sum(len(d.encode()) for d in docs)
    # Reset the peak-RSS counter so VmHWM measures training only (Linux >= 4.0).
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    rss0 = _status("VmRSS")
    out: dict[str, object] = {"trainer": trainer, "bytes": nbytes}
    c0, t0 = _cpu(), time.perf_counter()
    if trainer == "ferrotok":
        import ferrotok

        counts = ferrotok.count_pieces(docs, pattern=pattern, progress=False)
        t1 = time.perf_counter()
        enc = ferrotok.train_from_counts(counts, vocab, progress=False)
        out["count_s"] = t1 - t0
        out["merge_s"] = time.perf_counter() - t1
        out["n_vocab"] = enc.n_vocab
    elif trainer == "rustbpe":
        import rustbpe

        tok = rustbpe.Tokenizer()
        tok.train_from_iterator(iter(docs), vocab, pattern=pattern)
        out["n_vocab"] = tok.vocab_size
    elif trainer == "tokenizers":
        from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

        tk = Tokenizer(models.BPE())
        tk.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
        tr = trainers.BpeTrainer(
            vocab_size=vocab,
            show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        )
        tk.train_from_iterator(docs, tr)
        out["n_vocab"] = tk.get_vocab_size()
    else:
        raise SystemExit(f"unknown trainer {trainer}")
    out["seconds"] = time.perf_counter() - t0
    out["cpu_s"] = _cpu() - c0
    out["peak_mb"] = max(0, _status("VmHWM") - rss0) / 1e6
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=50)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--pattern", default="cl100k_base")
    ap.add_argument("--repeat", type=int, default=1, help="runs per trainer; the best is kept")
    ap.add_argument("--trainers", default="ferrotok,rustbpe,tokenizers")
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.mb, args.vocab, args.pattern)))
        return

    results = {}
    for trainer in args.trainers.split(","):
        best = None
        for _ in range(args.repeat):
            cmd = [sys.executable, __file__, "--child", trainer, "--mb", str(args.mb)]
            cmd += ["--vocab", str(args.vocab), "--pattern", args.pattern]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{trainer}: failed\n{r.stderr}", file=sys.stderr)
                break
            res = json.loads(r.stdout.strip().splitlines()[-1])
            if best is None or res["seconds"] < best["seconds"]:
                best = res
        if best is not None:
            results[trainer] = best

    base = results.get("ferrotok")
    print(
        f"\ntraining on {args.mb:g} MB (english + code), vocab {args.vocab}, "
        f"pattern {args.pattern}, {os.cpu_count()} cores"
    )
    print(f"{'trainer':<12} {'seconds':>8} {'cpu s':>7} {'x ferrotok':>10} {'peak MB':>8}  notes")
    for name, r in results.items():
        ratio = r["seconds"] / base["seconds"] if base else float("nan")
        notes = f"vocab {r['n_vocab']}"
        if name == "ferrotok":
            notes += f"; counting {r['count_s']:.2f} s, merging {r['merge_s']:.2f} s"
        print(
            f"{name:<12} {r['seconds']:8.2f} {r['cpu_s']:7.2f} {ratio:10.2f} "
            f"{r['peak_mb']:8.0f}  {notes}"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
