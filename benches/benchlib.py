"""Plumbing for the encoding benchmark: offline data set-up, corpus cutting, interleaved timing.

Nothing here knows about any tokenizer; `peers.py` holds the adapters and `encode.py` the sections.
"""

from __future__ import annotations

import atexit
import gc
import hashlib
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS_DIR = PROJECT_ROOT.parent / "shared" / "corpus"
DEFAULT_DATA_DIR = PROJECT_ROOT.parent / "shared" / "encodings"
CORPORA = ("english", "code", "multilingual")
DOC_BYTES = 4096

_BLOB = "https://openaipublic.blob.core.windows.net/encodings"
TIKTOKEN_FILES = ("r50k_base", "p50k_base", "cl100k_base", "o200k_base")


# ---------------------------------------------------------------- offline data


def data_dir() -> Path:
    """Where the official .tiktoken files are: $FERROTOK_DATA_DIR, else ../shared/encodings."""
    env = os.environ.get("FERROTOK_DATA_DIR")
    return Path(env) if env else DEFAULT_DATA_DIR


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.symlink(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def temp_dir(prefix: str) -> Path:
    d = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, d, True)
    return d


def setup_offline_env() -> dict[str, str]:
    """Points every library at the local encoding files; returns what was set up (for the header).

    - ferrotok: FERROTOK_DATA_DIR (set to the resolved dir if unset).
    - tiktoken: TIKTOKEN_CACHE_DIR; if unset, a temp dir holding each file as sha1(url).
    - wordchipper: always a private temp WORDCHIPPER_CACHE_DIR laid out as
      openai/<name>/<name>.tiktoken (offline, wordchipper otherwise falls back to bytes).
    """
    src = data_dir()
    notes = {"data_dir": str(src)}
    os.environ.setdefault("FERROTOK_DATA_DIR", str(src))
    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        cache = temp_dir("ferrotok-bench-tiktoken-")
        for name in TIKTOKEN_FILES:
            url = f"{_BLOB}/{name}.tiktoken"
            _link_or_copy(src / f"{name}.tiktoken", cache / hashlib.sha1(url.encode()).hexdigest())
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
        notes["tiktoken_cache"] = f"{cache} (temp, from data dir)"
    else:
        notes["tiktoken_cache"] = os.environ["TIKTOKEN_CACHE_DIR"] + " (given)"
    wc = temp_dir("ferrotok-bench-wordchipper-")
    for name in TIKTOKEN_FILES:
        _link_or_copy(src / f"{name}.tiktoken", wc / "openai" / name / f"{name}.tiktoken")
    os.environ["WORDCHIPPER_CACHE_DIR"] = str(wc)
    os.environ["WORDCHIPPER_DATA_DIR"] = str(wc / "data")
    notes["wordchipper_cache"] = f"{wc} (temp)"
    return notes


# ---------------------------------------------------------------- corpus


@dataclass
class Corpus:
    """A named list of documents and their total UTF-8 size."""

    name: str
    docs: list[str]
    nbytes: int = field(init=False)

    def __post_init__(self) -> None:
        self.nbytes = sum(len(d.encode("utf-8")) for d in self.docs)


def read_prefix(path: Path, max_bytes: int | None) -> str:
    """The first `max_bytes` of a file cut back to the last newline (whole file if None)."""
    with open(path, "rb") as f:
        data = f.read() if max_bytes is None else f.read(max_bytes)
    if max_bytes is not None and len(data) == max_bytes:
        cut = data.rfind(b"\n")
        data = data[: cut + 1] if cut > 0 else data
    return data.decode("utf-8", errors="replace")


def cut_documents(text: str, doc_bytes: int = DOC_BYTES) -> list[str]:
    """Deterministic ~doc_bytes documents made of whole lines (a longer line is its own doc)."""
    docs: list[str] = []
    cur: list[str] = []
    size = 0
    for line in text.splitlines(keepends=True):
        cur.append(line)
        size += len(line.encode("utf-8"))
        if size >= doc_bytes:
            docs.append("".join(cur))
            cur, size = [], 0
    if cur:
        docs.append("".join(cur))
    return docs


def load_corpora(corpus_dir: Path, names: list[str], files: list[Path], mb: float) -> list[Corpus]:
    """The named corpora of corpus_dir plus extra files, each cut into ~4 KB documents."""
    max_bytes = int(mb * 1_000_000)
    paths = [(n, corpus_dir / f"{n}.txt") for n in names] + [(p.stem, p) for p in files]
    out = []
    for name, path in paths:
        if not path.is_file():
            print(f"  corpus {name}: {path} not found, skipped")
            continue
        out.append(Corpus(name, cut_documents(read_prefix(path, max_bytes))))
    return out


def adversarial_files(corpus_dir: Path) -> list[Path]:
    d = corpus_dir / "adversarial"
    return sorted(p for p in d.iterdir() if p.is_file()) if d.is_dir() else []


# ---------------------------------------------------------------- other processes


def _machine_busy_s() -> float | None:
    """CPU seconds every process on the machine has used, summed over CPUs (Linux's
    /proc/stat: all but idle and iowait, the hypervisor's steal included); None elsewhere."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
        tick = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None
    if len(fields) < 8:
        return None
    return (sum(fields) - fields[3] - fields[4]) / tick


class OthersMeter:
    """How much CPU everything but this process used since the meter started, in CPUs (1.0 =
    one CPU kept busy the whole time): other processes, the kernel's threads and the steal of
    a VM's host. This process's own CPU time (every thread of it) is taken out.

    Why: the 2-thread batch needs both CPUs of a 2-CPU machine, so whatever else runs costs
    it more than the single thread it is compared with. Measured (1 MB, 9 paired rounds), with
    another process busy 5 ms in every 20 (25% of one CPU): ferrotok's batch/1-thread ratio
    fell from 2.02x to 1.53x (cl100k English) and from 1.89x to 1.55x (o200k code); busy 2 ms
    in every 20, o200k code read 1.78x. This meter says which cells were timed on a busy
    machine. (It does not explain the runs that started just after the test suite and missed
    that target: from one second after the suite ended, others used under 1% of the CPUs.)
    """

    def __init__(self) -> None:
        self.wall0, self.mine0 = time.perf_counter(), time.process_time()
        self.busy0 = _machine_busy_s()

    def cpus(self) -> float | None:
        busy = _machine_busy_s()
        wall = time.perf_counter() - self.wall0
        if busy is None or self.busy0 is None or wall <= 0:
            return None
        mine = time.process_time() - self.mine0
        return max(0.0, (busy - self.busy0 - mine) / wall)


QUIET_CPUS = 0.05


def wait_until_quiet(max_wait: float, window: float = 1.0) -> dict[str, float | None]:
    """Waits until other processes used under QUIET_CPUS for `window` seconds, or `max_wait`
    seconds have gone by; returns the seconds waited beyond the first window and what the
    last window measured. Sleeps, so it adds no load of its own."""
    t0 = time.perf_counter()
    while True:
        meter = OthersMeter()
        time.sleep(window)
        others = meter.cpus()
        waited = time.perf_counter() - t0 - window
        if others is None or others < QUIET_CPUS or waited + window > max_wait:
            return {"waited_s": max(0.0, waited), "others_cpus": others}


# ---------------------------------------------------------------- timing


@dataclass
class Timing:
    """Seconds per workload call: all samples, plus CPU seconds (to spot hidden threads)."""

    samples: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def cpu_ratio(self) -> float:
        """Process CPU time / wall time; ~1 for single-threaded work (noise from other procs)."""
        return statistics.median(c / s for c, s in zip(self.cpu, self.samples) if s > 0)

    @property
    def spread(self) -> float:
        """(max - min) / median: how noisy the samples were."""
        return (max(self.samples) - min(self.samples)) / self.median if self.samples else 0.0


def time_once(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _sample(fn: Callable[[], object], inner: int) -> tuple[float, float]:
    gc.collect()
    gc.disable()
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(inner):
            fn()
        t1, c1 = time.perf_counter(), time.process_time()
    finally:
        gc.enable()
    return (t1 - t0) / inner, (c1 - c0) / inner


def _calls_per_sample(task: Callable[[], object], first: float, min_sample: float) -> int:
    per_call = first if first >= 1.0 else time_once(task)
    return max(1, int(min_sample / max(per_call, 1e-9)) + 1)


def interleaved(
    tasks: dict[str, Callable[[], object]],
    reps: int,
    first_times: dict[str, float],
    min_sample: float = 0.08,
    budget: float = 20.0,
) -> dict[str, Timing]:
    """Round-robin timing: each rep runs every task once, starting at a rotating position.

    Each sample is as many calls as make at least `min_sample` seconds, counted from one more
    call made here: the caller's warm-up call (`first_times`, seconds) paid one-time set-up
    (lazily built tables, caches, page faults), and counting from it gave an encoder with such
    set-up samples far shorter than `min_sample` (ferrotok on cl100k english: 2 calls of 5 ms
    after a 44 ms first call), half of each one a call made cache-cold by the other tasks'
    turns. A task whose warm-up took a second or more is counted from that (one call). A task
    stops being repeated once its samples add up to `budget` seconds (it keeps at least one).
    """
    names = list(tasks)
    inner = {n: _calls_per_sample(tasks[n], first_times.get(n, 0.0), min_sample) for n in names}
    out = {n: Timing() for n in names}
    for r in range(reps):
        for i in range(len(names)):
            n = names[(r + i) % len(names)]
            if out[n].samples and sum(out[n].samples) * inner[n] > budget:
                continue
            wall, cpu = _sample(tasks[n], inner[n])
            out[n].samples.append(wall)
            out[n].cpu.append(cpu)
    return out


def paired_speedup(a: list[float], b: list[float]) -> float | None:
    """How many times faster `a` is than `b`: the median over rounds of b's time / a's time.

    Samples of one round were taken next to each other, so pairing them cancels much of the
    drift in machine load that a ratio of two medians keeps.
    """
    pairs = [tb / ta for ta, tb in zip(a, b) if ta > 0]
    return statistics.median(pairs) if pairs else None
