"""Large files through the command line: `ferrotok count`, `encode` and `decode` against the
same jobs done with tiktoken in a plain script, each in a process of its own.

    python benches/cli.py [--file PATH | --mb 256] [--encoding o200k_base] [--repeat 1]

Without --file, the input is `english.txt` (from $FERROTOK_CORPUS_DIR, else shared/corpus
beside the repository) repeated to --mb megabytes, in a temp dir. Each job is a fresh process
(`python -m ferrotok ...`, or `python -c` for tiktoken: the file read whole, then one call);
"peak MB" is that process's peak RSS, start-up included, from `wait4`. ferrotok's outputs are
checked against tiktoken's: the same count, the same ids in the `.npy` file and as text, and
decoding gives back the file. With --repeat N each job runs N times, alternating, and the
best time and the largest peak are shown.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

# Each job: its input (the text, or a file an earlier job wrote) and its output file.
JOBS = {
    "count": (None, "count.txt"),
    "encode npy": (None, "ids.npy"),
    "encode text": (None, "ids.txt"),
    "decode npy": ("ids.npy", "from-npy.txt"),
    "decode text": ("ids.txt", "from-text.txt"),
}
# tiktoken's side of each job: a script run with `enc`, `src` and `dst` set.
TIKTOKEN_JOBS = {
    "count": "open(dst, 'w').write(str(len(enc.encode(open(src, encoding='utf-8').read()))))",
    "encode npy": (
        "import numpy as np\n"
        "np.save(dst, np.array(enc.encode(open(src, encoding='utf-8').read()), dtype=np.uint32))"
    ),
    "encode text": (
        "ids = enc.encode(open(src, encoding='utf-8').read())\n"
        "open(dst, 'w').write(' '.join(map(str, ids)) + '\\n')"
    ),
    "decode npy": (
        "import numpy as np\nopen(dst, 'wb').write(enc.decode_bytes(np.load(src).tolist()))"
    ),
    "decode text": (
        "open(dst, 'wb').write(enc.decode_bytes([int(i) for i in open(src).read().split()]))"
    ),
}


def run(cmd: list[str], stdout: Path | None = None) -> tuple[float, float]:
    """Runs `cmd`, stdout to `stdout` (or discarded); returns (seconds, peak RSS in MB)."""
    with open(stdout or os.devnull, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed ({os.waitstatus_to_exitcode(status)}): {' '.join(cmd)}")
    return seconds, usage.ru_maxrss / 1024  # kilobytes on Linux


def command(tool: str, job: str, enc: str, src: Path, dst: Path) -> tuple[list[str], Path | None]:
    """The command line of `tool` for `job`, and where its stdout goes (None: discarded)."""
    if tool == "tiktoken":
        script = (
            f"import tiktoken\nenc = tiktoken.get_encoding({enc!r})\n"
            f"src, dst = {str(src)!r}, {str(dst)!r}\n{TIKTOKEN_JOBS[job]}"
        )
        return [sys.executable, "-c", script], None
    base = [sys.executable, "-m", "ferrotok"]
    if job == "count":
        return [*base, "count", "-e", enc, str(src)], dst
    if job.startswith("encode"):
        fmt = "npy" if job.endswith("npy") else "list"
        return [*base, "encode", "-e", enc, "-f", str(src), "--format", fmt, "-o", str(dst)], None
    return [*base, "decode", "-e", enc, "-f", str(src)], dst


def make_input(args: argparse.Namespace, tmp: Path) -> Path:
    if args.file:
        return Path(args.file)
    corpus = Path(os.environ.get("FERROTOK_CORPUS_DIR") or benchlib.DEFAULT_CORPUS_DIR)
    text = (corpus / "english.txt").read_bytes()
    path = tmp / f"english-{args.mb}mb.txt"
    with open(path, "wb") as f:
        for _ in range(-(-args.mb * 2**20 // len(text))):
            f.write(text)
    return path


def check(tmp: Path, src: Path) -> None:
    """ferrotok's outputs are tiktoken's: the count, the ids (npy and text) and the text."""
    import numpy as np

    ours, theirs = tmp / "ferrotok", tmp / "tiktoken"
    same = {
        "count": (ours / "count.txt").read_text().split()[0] == (theirs / "count.txt").read_text(),
        "ids.npy": np.array_equal(np.load(ours / "ids.npy"), np.load(theirs / "ids.npy")),
    }
    for name in ("ids.txt", "from-npy.txt", "from-text.txt"):
        same[name] = (ours / name).read_bytes() == (theirs / name).read_bytes()
    same["round trip"] = (ours / "from-text.txt").read_bytes() == src.read_bytes()
    wrong = [name for name, ok in same.items() if not ok]
    if wrong:
        raise SystemExit(f"ferrotok's output differs from tiktoken's: {', '.join(wrong)}")
    print("checked: the same count, ids and text as tiktoken; decoding gives back the input")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--file", help="the text to use (default: english.txt repeated to --mb)")
    p.add_argument("--mb", type=int, default=256, help="size of the default input (MB)")
    p.add_argument("--encoding", default="o200k_base")
    p.add_argument("--repeat", type=int, default=1)
    args = p.parse_args()
    benchlib.setup_offline_env()  # tiktoken and ferrotok read the local encoding files
    with tempfile.TemporaryDirectory(prefix="ferrotok-bench-cli-") as t:
        tmp = Path(t)
        src = make_input(args, tmp)
        size = src.stat().st_size
        print(f"input: {src} ({size / 1e6:.0f} MB), encoding {args.encoding}, "
              f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
        best: dict[tuple[str, str], tuple[float, float]] = {}
        for _ in range(args.repeat):
            for job, (inp, out) in JOBS.items():
                for tool in ("tiktoken", "ferrotok"):
                    where = tmp / tool
                    where.mkdir(exist_ok=True)
                    cmd, stdout = command(tool, job, args.encoding,
                                          where / inp if inp else src, where / out)
                    secs, peak = run(cmd, stdout)
                    old = best.get((tool, job), (secs, peak))
                    best[(tool, job)] = (min(secs, old[0]), max(peak, old[1]))
        check(tmp, src)
    print(f"\n{'job':12s} {'ferrotok s':>10s} {'MB/s':>6s} {'peak MB':>8s}   "
          f"{'tiktoken s':>10s} {'peak MB':>8s}   {'speed':>6s} {'memory':>6s}")
    for job in JOBS:
        fs, fm = best[("ferrotok", job)]
        ts, tm = best[("tiktoken", job)]
        print(f"{job:12s} {fs:10.2f} {size / fs / 1e6:6.0f} {fm:8.0f}   {ts:10.2f} {tm:8.0f}   "
              f"{ts / fs:5.1f}x {fm / tm:5.2f}x")
    print("\nMB/s: of the input text; speed: tiktoken's time over ferrotok's; memory: ferrotok's "
          "peak over tiktoken's")


if __name__ == "__main__":
    main()
