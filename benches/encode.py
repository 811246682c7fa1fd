"""ferrotok encoding benchmark: ferrotok vs tiktoken vs the fastest exact peers, one process.

What it measures (MB/s of UTF-8 input unless said otherwise):
- single: one thread, `encode_ordinary`-style ids returned as Python lists, over ~4 KB documents
  cut at line boundaries from the first `--mb` MB of each corpus file (english, code,
  multilingual, plus FILES), for cl100k_base, o200k_base, r50k_base, p50k_base and a custom
  encoding (cl100k's ranks with GPT-2's original, non-possessive pattern, built the same way in
  ferrotok and tiktoken).
- batch: ferrotok `encode_ordinary_batch(docs, num_threads=T)` vs its own single thread;
  the flat batch (`encode_ordinary_batch_to_numpy`, once it exists) vs the peers' flat APIs.
- adversarial: whole-file time of each encoder on corpus/adversarial/*, ferrotok's time over the
  fastest exact peer's, and linearity (time on the whole file / time on a half, both halves
  encoded in one call; the ratio to the first half alone, repeated, is shown too).
- decode: `decode_bytes` throughput (GB/s of output); load: cold `get_encoding("o200k_base")`
  and the RSS it adds, each in a fresh subprocess (median of 3).

How: every encoder's ids are first compared with tiktoken's on the same documents (that pass is
also the warm-up); a peer that differs is shown as "inexact (N/M docs differ)" and never counts
as the fastest exact peer. Encoders are then timed round-robin (rotating start) for `--reps`
repetitions, each sample long enough to be measurable; the median is reported. The machine is
shared and noisy: compare numbers from the same run only. Before each section and each batch
cell the benchmark waits (up to `--quiet-wait` seconds) until other processes use under 5% of
a CPU, and a table's notes name the cells timed while they used more ("BUSY MACHINE").

Usage: python benches/encode.py [--mb N] [--reps R] [--batch-reps R] [--only english,code]
       [--encodings cl100k_base,o200k_base,r50k_base,p50k_base,custom]
       [--section single,batch,adversarial,decode,load] [--quiet-wait S] [--markdown]
       [--json PATH] [--plot PATH.png] [FILES...]
The exit status is 0 whatever the figures (targets are printed as PASS/FAIL).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import benchlib
import peers as peerlib
import report
import targets
from benchlib import Corpus, paired_speedup
from peers import Encoder, EncSpec, Peer
from report import Table, fmt_ms, fmt_rate, fmt_ratio

SECTIONS = ("single", "batch", "adversarial", "decode", "load")
ALL_ENCODINGS = ("cl100k_base", "o200k_base", "r50k_base", "p50k_base", "custom")
BIG = targets.BIG


ROLE_ORDER = ("subject", "oracle", "peer")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def err_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"


# ---------------------------------------------------------------- encoders


class Encoders:
    """Builds each (peer, encoding) adapter once; a failure is kept as its message."""

    def __init__(self, peers: list[Peer]) -> None:
        self.peers = peers
        self._built: dict[tuple[str, EncSpec], Encoder | str] = {}
        self.load_s: dict[str, dict[str, float]] = {}

    def get(self, peer: Peer, spec: EncSpec) -> Encoder | str:
        key = (peer.name, spec)
        if key not in self._built:
            log(f"  loading {peer.name} {spec.name} ...")
            t0 = time.perf_counter()
            try:
                self._built[key] = peer.build(spec)
            except Exception as e:  # a broken peer is reported, never fatal
                self._built[key] = err_text(e)
            self.load_s.setdefault(peer.name, {})[spec.name] = time.perf_counter() - t0
        return self._built[key]

    def for_spec(self, spec: EncSpec, fast_only: bool = False) -> dict[str, Encoder]:
        """Usable encoders for `spec`: ferrotok, tiktoken, then the peers."""
        out = {}
        for p in sorted(self.peers, key=lambda p: ROLE_ORDER.index(p.role)):
            if p.installed() and p.supports(spec) and (p.fast or not fast_only):
                enc = self.get(p, spec)
                if isinstance(enc, Encoder):
                    out[p.name] = enc
        return out

    def errors(self) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for (name, spec), enc in self._built.items():
            if isinstance(enc, str):
                out.setdefault(name, {})[spec.name] = enc
        return out


def roles(peers: list[Peer]) -> dict[str, str]:
    return {p.name: p.role for p in peers}


def loop(fn: Callable[[str], object], docs: list[str]) -> Callable[[], None]:
    def run() -> None:
        for d in docs:
            fn(d)

    return run


def ndiff_lists(expected: list[list[int]], got: list[Any]) -> int:
    if len(got) != len(expected):
        return len(expected)
    return sum(1 for e, g in zip(expected, got) if e != (g if isinstance(g, list) else list(g)))


def ndiff_flat(expected: list[list[int]], out: tuple[Any, Any]) -> int:
    """Docs whose slice of a flat (ids, offsets) result differs; offsets may omit the leading 0."""
    import numpy as np

    ids, offsets = np.asarray(out[0]), np.asarray(out[1])
    if len(offsets) == len(expected):
        offsets = np.concatenate([[0], offsets])
    if len(offsets) != len(expected) + 1:
        return len(expected)
    return sum(1 for i, e in enumerate(expected) if ids[offsets[i] : offsets[i + 1]].tolist() != e)


def best_peer(results: dict[str, dict[str, Any]], role: dict[str, str], key: str = "mbps",
              lower: bool = False) -> tuple[str | None, float | None]:
    """The exact peer with the best `key` (highest, or lowest if `lower`)."""
    ok = [(n, r[key]) for n, r in results.items()
          if role.get(n.split(" ")[0]) == "peer" and not r.get("ndiff") and r.get(key)]
    if not ok:
        return None, None
    return (min if lower else max)(ok, key=lambda kv: kv[1])


def verified_tasks(candidates: dict[str, tuple[Callable[[], Any], Callable[[Any], int],
                                               Callable[[], Any]]]
                   ) -> tuple[dict[str, Callable[[], Any]], dict[str, float], dict[str, dict]]:
    """Each candidate is (probe, check, timed): the probe runs once (the warm-up), `check` counts
    the docs its output gets wrong. Returns the timed tasks, probe times and results."""
    tasks, first, results = {}, {}, {}
    for name, (probe, check, timed) in candidates.items():
        try:
            t0 = time.perf_counter()
            out = probe()
            first[name] = time.perf_counter() - t0
            results[name] = {"ndiff": check(out)}
            tasks[name] = timed
        except Exception as e:
            results[name] = {"error": err_text(e)}
    return tasks, first, results


def exactness_cell(r: dict[str, Any] | None, ndocs: int, value: str) -> str:
    if r is None:
        return "n/a"
    if r.get("error"):
        return "n/a" if r["error"].startswith("n/a") else "error"
    if r.get("ndiff"):
        return f"inexact ({r['ndiff']}/{ndocs} docs differ)"
    return value


# ---------------------------------------------------------------- single thread


def bench_single_cell(spec: EncSpec, corpus: Corpus, encs: dict[str, Encoder],
                      role: dict[str, str], reps: int, budget: float) -> dict[str, Any]:
    docs = corpus.docs
    tt = encs["tiktoken"].encode
    t0 = time.perf_counter()
    expected = [tt(d) for d in docs]
    tt_first = time.perf_counter() - t0
    cands = {n: (_map(e.encode, docs), _list_check(expected), loop(e.encode, docs))
             for n, e in encs.items() if n != "tiktoken"}
    tasks, first, results = verified_tasks(cands)
    tasks["tiktoken"], first["tiktoken"], results["tiktoken"] = loop(tt, docs), tt_first, {
        "ndiff": 0}
    meter = benchlib.OthersMeter()
    timings = benchlib.interleaved(tasks, reps, first, budget=budget)
    for n, t in timings.items():
        results[n].update(mbps=corpus.nbytes / t.median / 1e6, samples_s=t.samples,
                          cpu_ratio=t.cpu_ratio, spread=t.spread)
    return {**_cell(spec, corpus, results, role), "others_cpus": meter.cpus()}


def _map(encode: Callable[[str], Any], docs: list[str]) -> Callable[[], list[Any]]:
    return lambda: [encode(d) for d in docs]


def _list_check(expected: list[list[int]]) -> Callable[[Any], int]:
    return lambda out: ndiff_lists(expected, out)


def _flat_check(expected: list[list[int]]) -> Callable[[Any], int]:
    return lambda out: ndiff_flat(expected, out)


def _cell(spec: EncSpec, corpus: Corpus, results: dict[str, dict], role: dict[str, str]
          ) -> dict[str, Any]:
    peer, _ = best_peer(results, role)
    return {
        "encoding": spec.name, "corpus": corpus.name, "docs": len(corpus.docs),
        "bytes": corpus.nbytes, "results": results,
        "vs_tiktoken": speedup(results, "ferrotok", "tiktoken"),
        "best_peer": peer, "vs_best_peer": speedup(results, "ferrotok", peer),
    }


def speedup(results: dict[str, dict], a: str | None, b: str | None,
            key: str = "samples_s") -> float | None:
    """Paired speed ratio a/b from the round-aligned samples (None if either is missing)."""
    ra, rb = results.get(a or "", {}), results.get(b or "", {})
    if ra.get("error") or rb.get("error"):
        return None
    return paired_speedup(ra.get(key) or [], rb.get(key) or [])


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def single_table(cells: list[dict[str, Any]], names: list[str]) -> Table:
    t = Table("single thread: MB/s, ~4 KB docs, ids as Python lists (median)",
              ["encoding", "corpus", "MB", *names, "ft/tiktoken", "ft/best exact peer"], left=2)
    for c in cells:
        rs = c["results"]
        row = [c["encoding"], c["corpus"], f"{c['bytes'] / 1e6:.2f}"]
        row += [exactness_cell(rs.get(n), c["docs"], fmt_rate(rs.get(n, {}).get("mbps")))
                for n in names]
        peer = f" ({c['best_peer']})" if c["best_peer"] else ""
        row += [fmt_ratio(c["vs_tiktoken"]), fmt_ratio(c["vs_best_peer"]) + peer]
        t.rows.append(row)
    t.notes += cell_notes(cells)
    return t


def cell_notes(cells: list[dict[str, Any]], key: str = "corpus", cpu: bool = True) -> list[str]:
    """Errors, inexact ferrotok, hidden threads and the noise level, grouped over cells."""
    entries = []
    for c in cells:
        where = f"{c['encoding']}/{c[key]}"
        for n, r in c["results"].items():
            if r.get("error"):
                entries.append((n, where, r["error"]))
            if cpu and r.get("cpu_ratio", 1.0) > 1.3:
                entries.append((n, where, "CPU time > 1.3x wall time (more than one thread?)"))
        if c["results"].get("ferrotok", {}).get("ndiff"):
            entries.append(("ferrotok", where, "IDS DIFFER FROM TIKTOKEN: its ratios are void"))
    notes = report.group_notes(entries, len(cells))
    busy = [f"{c['encoding']}/{c[key]} {c['others_cpus']:.2f}" for c in cells
            if (c.get("others_cpus") or 0.0) >= benchlib.QUIET_CPUS]
    if busy:
        notes.append("BUSY MACHINE: other processes used this many CPUs while these cells were "
                     "timed (their ratios understate ferrotok, the batch's most): "
                     + ", ".join(busy))
    spreads = [r.get("spread", 0.0) for c in cells for r in c["results"].values()]
    if spreads:
        notes.append(f"noise: (max-min)/median of one encoder's samples: median "
                     f"{statistics.median(spreads):.0%}, worst {max(spreads):.0%}; ratios are "
                     "medians of per-round ratios")
    return notes


def run_single(specs: list[EncSpec], corpora: list[Corpus], encoders: Encoders,
               args: argparse.Namespace) -> list[dict[str, Any]]:
    cells = []
    role = roles(encoders.peers)
    for spec in specs:
        encs = encoders.for_spec(spec)
        if "tiktoken" not in encs:
            log(f"single {spec.name}: tiktoken unavailable, no oracle: skipped")
            continue
        for corpus in corpora:
            log(f"single {spec.name} {corpus.name}: {', '.join(encs)}")
            cells.append(bench_single_cell(spec, corpus, encs, role, args.reps, args.budget))
    return cells


# ---------------------------------------------------------------- batch


def bench_batch_cell(spec: EncSpec, corpus: Corpus, encs: dict[str, Encoder],
                     threads: int, reps: int, budget: float, quiet_wait: float
                     ) -> dict[str, Any]:
    docs = corpus.docs
    expected = [encs["tiktoken"].encode(d) for d in docs]
    ft = encs["ferrotok"]
    check, fcheck = _list_check(expected), _flat_check(expected)
    cands = {"ferrotok 1 thread": (_map(ft.encode, docs), check, loop(ft.encode, docs))}
    if ft.list_batch is not None:
        # Shown, not judged: the batch call on one thread, so that the batch's scaling over
        # threads can be read apart from what a list result costs Python to free.
        fn = _bind(ft.list_batch, docs, 1)
        cands["ferrotok batch@1"] = (fn, check, fn)
    for name, enc in encs.items():
        if enc.list_batch is not None:
            fn = _bind(enc.list_batch, docs, threads)
            cands[f"{name} batch"] = (fn, check, fn)
    for name, enc in encs.items():
        if enc.flat_batch is not None:
            fn = _bind(enc.flat_batch, docs, threads)
            cands[f"{name} flat"] = (fn, fcheck, fn)
    tasks, first, results = verified_tasks(cands)
    # Each batch cell waits for a quiet machine: its ratio needs both CPUs (see OthersMeter).
    quiet = wait_for_quiet(quiet_wait, f"batch {spec.name} {corpus.name}")
    meter = benchlib.OthersMeter()
    for n, t in benchlib.interleaved(tasks, reps, first, budget=budget).items():
        results[n].update(mbps=corpus.nbytes / t.median / 1e6, samples_s=t.samples,
                          cpu_ratio=t.cpu_ratio, spread=t.spread)
    if ft.flat_batch is None:
        results["ferrotok flat"] = {"error": "n/a: no encode_ordinary_batch_to_numpy yet"}
    return {**_batch_cell(spec, corpus, results), "others_cpus": meter.cpus(),
            "quiet_wait": quiet}


def _bind(fn: Callable[[list[str], int], Any], docs: list[str], threads: int
          ) -> Callable[[], Any]:
    return lambda: fn(docs, threads)


def _batch_cell(spec: EncSpec, corpus: Corpus, results: dict[str, dict]) -> dict[str, Any]:
    peer_flat = {n: r for n, r in results.items() if n.endswith(" flat") and
                 not n.startswith("ferrotok") and not r.get("ndiff") and r.get("mbps")}
    best = max(peer_flat, key=lambda n: peer_flat[n]["mbps"], default=None)
    return {
        "encoding": spec.name, "corpus": corpus.name, "docs": len(corpus.docs),
        "bytes": corpus.nbytes, "results": results,
        "batch_speedup": speedup(results, "ferrotok batch", "ferrotok 1 thread"),
        "batch_scaling": speedup(results, "ferrotok batch", "ferrotok batch@1"),
        "best_peer_flat": best,
        "flat_vs_best_peer_flat": speedup(results, "ferrotok flat", best),
    }


def batch_table(cells: list[dict[str, Any]], threads: int) -> Table:
    names: list[str] = []
    for c in cells:
        names += [n for n in c["results"] if n not in names]
    t = Table(f"batch: MB/s with {threads} threads ('1 thread' = encode_ordinary loop; "
              "'batch' = list of lists; 'batch@1' = the same call on 1 thread; "
              "'flat' = one id array + offsets)",
              ["encoding", "corpus", *names, "ft batch/1 thread", "ft batch/batch@1",
               "ft flat/best peer flat"],
              left=2)
    for c in cells:
        rs = c["results"]
        row = [c["encoding"], c["corpus"]]
        row += [exactness_cell(rs.get(n), c["docs"], fmt_rate(rs.get(n, {}).get("mbps")))
                for n in names]
        peer = f" ({c['best_peer_flat'].split()[0]})" if c["best_peer_flat"] else ""
        row += [fmt_ratio(c["batch_speedup"]), fmt_ratio(c.get("batch_scaling")),
                fmt_ratio(c["flat_vs_best_peer_flat"]) + peer]
        t.rows.append(row)
    t.notes += cell_notes(cells, cpu=False)
    return t


def run_batch(specs: list[EncSpec], corpora: list[Corpus], encoders: Encoders,
              args: argparse.Namespace) -> list[dict[str, Any]]:
    cells = []
    for spec in [s for s in specs if s.name in BIG]:
        encs = encoders.for_spec(spec)
        if "tiktoken" not in encs or "ferrotok" not in encs:
            continue
        for corpus in corpora:
            log(f"batch {spec.name} {corpus.name}")
            cells.append(bench_batch_cell(spec, corpus, encs, args.threads, args.batch_reps,
                                          args.budget, args.quiet_wait))
    return cells


# ---------------------------------------------------------------- adversarial


def bench_adversarial_file(spec: EncSpec, path: Path, encs: dict[str, Encoder],
                           role: dict[str, str], reps: int, budget: float) -> dict[str, Any]:
    """Times each encoder on the whole file and on its halves.

    Linearity is time(whole) / time(a half), where a half's time is half the time of one call
    that encodes the first half and then the second: the two halves together are the same
    text as the whole, so only the length of each call changes. The first half timed alone,
    over and over, runs faster than text seen once (the branch predictor and content-keyed
    caches learn it; `cargo bench --bench encode` measures this), so that reading is shown as
    `linearity_first` but is not the target. See benches/README.md.
    """
    text = path.read_text(encoding="utf-8", errors="replace")
    first_half, second_half = text[: len(text) // 2], text[len(text) // 2:]
    expected = encs["tiktoken"].encode(text)
    results = {name: _probe(enc.encode, text, expected, budget) for name, enc in encs.items()}
    timed = [n for n, r in results.items() if "first_s" in r and r["first_s"] < budget]
    # Grouped by kind, not by encoder, so that every sample follows another encoder's (if
    # one encoder's tasks were next to each other, its halves would always run right after
    # its whole file, on caches and a branch predictor that the whole file just warmed).
    tasks = {f"{n}|whole": _bind1(encs[n].encode, text) for n in timed}
    tasks |= {f"{n}|halves": _bind2(encs[n].encode, first_half, second_half) for n in timed}
    tasks |= {f"{n}|first": _bind1(encs[n].encode, first_half) for n in timed}
    first = {t: results[t.split("|")[0]]["first_s"] / (2 if t.endswith("|first") else 1)
             for t in tasks}
    timings = benchlib.interleaved(tasks, reps, first, min_sample=0.03, budget=budget)
    for name, r in results.items():
        whole, halves, firsth = (timings.get(f"{name}|{k}") for k in ("whole", "halves", "first"))
        r["whole_s"] = whole.median if whole else r.get("first_s")
        r["whole_samples_s"] = whole.samples if whole else []
        r["half_s"] = halves.median / 2 if halves else None
        pair = paired_speedup(halves.samples, whole.samples) if whole and halves else None
        r["linearity"] = 2 * pair if pair else None
        r["linearity_first"] = paired_speedup(firsth.samples, whole.samples) \
            if whole and firsth else None
    peer, _ = best_peer(results, role, "whole_s", lower=True)
    return {"encoding": spec.name, "file": path.name, "bytes": len(text.encode("utf-8")),
            "results": results, "best_peer": peer,
            "vs_best_peer_time": speedup(results, peer, "ferrotok", "whole_samples_s")}


def _bind1(fn: Callable[[str], Any], text: str) -> Callable[[], Any]:
    return lambda: fn(text)


def _bind2(fn: Callable[[str], Any], a: str, b: str) -> Callable[[], Any]:
    return lambda: (fn(a), fn(b))


def _probe(encode: Callable[[str], Any], text: str, expected: list[int], budget: float
           ) -> dict[str, Any]:
    """Checks ids on the whole file, after a 1/8 prefix shows it can finish within budget."""
    try:
        eighth = benchlib.time_once(lambda: encode(text[: len(text) // 8]))
        if eighth > budget / 8:
            return {"error": f"too slow: {eighth:.1f} s on the first 1/8", "ndiff": None}
        t0 = time.perf_counter()
        got = encode(text)
        first = time.perf_counter() - t0
        return {"first_s": first, "ndiff": int(list(got) != expected)}
    except Exception as e:
        return {"error": err_text(e)}


def adversarial_table(files: list[dict[str, Any]], names: list[str]) -> Table:
    t = Table("adversarial files: whole-file time, linearity (whole / half: both halves "
              "in one call) and whole / first half repeated",
              ["encoding", "file", "KB", *names, "ft/fastest peer (time)", "ft linearity",
               "ft whole/first half"], left=2)
    for f in files:
        rs = f["results"]
        row = [f["encoding"], f["file"], f"{f['bytes'] / 1e3:.0f}"]
        for n in names:
            r = rs.get(n)
            lin = "".join(f" x{r[k]:.2f}" for k in ("linearity", "linearity_first")
                          if r and r.get(k))
            row.append(_adv_cell(r, fmt_ms(r.get("whole_s")) + lin if r else "n/a"))
        peer = f" ({f['best_peer']})" if f["best_peer"] else ""
        ft = rs.get("ferrotok", {})
        row += [fmt_ratio(f["vs_best_peer_time"]) + peer, fmt_ratio(ft.get("linearity")),
                fmt_ratio(ft.get("linearity_first"))]
        t.rows.append(row)
    t.notes.append("the fastest peer counts only exact peers (ids equal to tiktoken's on the file)")
    t.notes.append("each encoder's cell: whole-file time, linearity, whole / first half repeated; "
                   "linearity times the halves as one call that encodes both, so that the "
                   "content per call is the whole file's (see benches/README.md)")
    entries = [(n, f"{f['encoding']}/{f['file']}", r["error"]) for f in files
               for n, r in f["results"].items() if r.get("error")]
    entries += [(n, f"{f['encoding']}/{f['file']}", "ids differ from tiktoken") for f in files
                for n, r in f["results"].items() if r.get("ndiff")]
    t.notes += report.group_notes(entries, len(files))
    return t


def _adv_cell(r: dict[str, Any] | None, value: str) -> str:
    if r is None:
        return "n/a"
    if r.get("error"):
        return "error"
    return "inexact" if r.get("ndiff") else value


def run_adversarial(specs: list[EncSpec], paths: list[Path], encoders: Encoders,
                    args: argparse.Namespace) -> list[dict[str, Any]]:
    out = []
    role = roles(encoders.peers)
    for spec in [s for s in specs if s.name in BIG]:
        encs = encoders.for_spec(spec, fast_only=True)
        if "tiktoken" not in encs:
            continue
        for path in paths:
            log(f"adversarial {spec.name} {path.name}")
            out.append(bench_adversarial_file(spec, path, encs, role, args.reps, args.budget))
    return out


# ---------------------------------------------------------------- decode


def bench_decode_cell(spec: EncSpec, corpus: Corpus, encs: dict[str, Encoder], reps: int,
                      budget: float) -> dict[str, Any]:
    ids = [encs["tiktoken"].encode(d) for d in corpus.docs]
    whole = [i for doc in ids for i in doc]
    # The same ids as one numpy array, as `encode_ordinary_batch_to_numpy` gives them: shown,
    # not judged (the target is on lists).
    array = _uint32_array(whole)
    want = [d.encode("utf-8") for d in corpus.docs]
    cands = {}
    for name in ("ferrotok", "tiktoken"):
        dec = encs[name].decode_bytes
        if dec is None:
            continue
        per_doc = _decode_loop(dec, ids)
        cands[f"{name} per doc"] = (per_doc, _decode_check(dec, ids, want), per_doc)
        one = _bind1(dec, whole)
        cands[f"{name} one list"] = (one, lambda out: int(out != b"".join(want)), one)
        if array is not None:
            arr = _bind1(dec, array)
            cands[f"{name} one array"] = (arr, lambda out: int(out != b"".join(want)), arr)
    tasks, first, results = verified_tasks(cands)
    for n, t in benchlib.interleaved(tasks, reps, first, budget=budget).items():
        results[n].update(gbps=corpus.nbytes / t.median / 1e9, samples_s=t.samples)
    return {"encoding": spec.name, "corpus": corpus.name, "docs": len(corpus.docs),
            "bytes": corpus.nbytes, "tokens": len(whole), "results": results}


def _uint32_array(ids: list[int]) -> Any:
    try:
        import numpy as np
    except ImportError:
        return None
    return np.array(ids, dtype=np.uint32)


def _decode_loop(dec: Callable[[list[int]], bytes], ids: list[list[int]]) -> Callable[[], None]:
    def run() -> None:
        for doc in ids:
            dec(doc)

    return run


def _decode_check(dec: Callable[[list[int]], bytes], ids: list[list[int]], want: list[bytes]
                  ) -> Callable[[Any], int]:
    return lambda _: sum(1 for i, w in zip(ids, want) if dec(i) != w)


def decode_table(cells: list[dict[str, Any]]) -> Table:
    t = Table("decode_bytes: GB/s of output (median; 'one array' = the ids as one numpy "
              "uint32 array, shown, not judged)",
              ["encoding", "corpus", "ft per doc", "tt per doc", "ratio", "ft one list",
               "tt one list", "ratio", "ft one array", "tt one array", "ratio"], left=2)
    for c in cells:
        rs = c["results"]
        row = [c["encoding"], c["corpus"]]
        for kind in ("per doc", "one list", "one array"):
            ft, tt = f"ferrotok {kind}", f"tiktoken {kind}"
            row += [exactness_cell(rs.get(ft), c["docs"], fmt_rate(rs.get(ft, {}).get("gbps"), 2)),
                    fmt_rate(rs.get(tt, {}).get("gbps"), 2),
                    fmt_ratio(speedup(rs, ft, tt))]
        t.rows.append(row)
    entries = [(n, f"{c['encoding']}/{c['corpus']}", r.get("error") or "decoded bytes differ")
               for c in cells for n, r in c["results"].items()
               if r.get("ndiff") or r.get("error")]
    t.notes += report.group_notes(entries, len(cells))
    return t


def run_decode(specs: list[EncSpec], corpora: list[Corpus], encoders: Encoders,
               args: argparse.Namespace) -> list[dict[str, Any]]:
    cells = []
    for spec in [s for s in specs if s.name in BIG]:
        encs = encoders.for_spec(spec)
        if "tiktoken" in encs and "ferrotok" in encs:
            for corpus in corpora:
                log(f"decode {spec.name} {corpus.name}")
                cells.append(bench_decode_cell(spec, corpus, encs, args.reps, args.budget))
    return cells


# ---------------------------------------------------------------- load and memory

LOAD_SCRIPT = """
import gc, json, time
def mem():
    out = {}
    for line in open("/proc/self/status"):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM"):
            out[k] = int(v.split()[0]) * 1024
    return out
t0 = time.perf_counter()
import MODULE as m
t1 = time.perf_counter()
gc.collect()
m0 = mem()
t2 = time.perf_counter()
enc = m.get_encoding(NAME)
t3 = time.perf_counter()
enc.encode_ordinary("hello world")
t4 = time.perf_counter()
gc.collect()
m1 = mem()
out = {"import_s": t1 - t0, "load_s": t3 - t2, "first_encode_s": t4 - t3,
       "rss_delta": m1["VmRSS"] - m0["VmRSS"], "hwm_delta": m1["VmHWM"] - m0["VmHWM"]}
if DOC:
    doc = open(DOC, encoding="utf-8").read()
    t5 = time.perf_counter()
    enc.encode_ordinary(doc)
    t6 = time.perf_counter()
    gc.collect()
    m2 = mem()
    # get_encoding, the first call and the document, without the measuring in between
    out.update(first_doc_s=t6 - t5, to_first_doc_s=(t4 - t2) + (t6 - t5),
               rss_doc_delta=m2["VmRSS"] - m0["VmRSS"], hwm_doc_delta=m2["VmHWM"] - m0["VmHWM"])
print(json.dumps(out))
"""


def _load_once(module: str, name: str, doc: Path | None) -> dict[str, float] | str:
    code = (LOAD_SCRIPT.replace("MODULE", module).replace("NAME", repr(name))
            .replace("DOC", repr(str(doc) if doc else "")))
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=300)
    except subprocess.TimeoutExpired:
        return "timeout"
    if p.returncode != 0:
        return (p.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(p.stdout.strip().splitlines()[-1])


def first_document(corpus_dir: Path) -> str:
    """The first ~4 KB document of English, code and multilingual text, one after the other:
    what a program's first real call encodes. ferrotok builds the pair filter and the thread's
    piece cache at its first pieces (the backtracking and the cuts' tables wait for more
    text), so it shows the cold start that `get_encoding` alone leaves out."""
    parts = []
    for name in ("english", "code", "multilingual"):
        path = corpus_dir / f"{name}.txt"
        if path.exists():
            parts.append(benchlib.cut_documents(benchlib.read_prefix(path, 20_000))[0])
    return "".join(parts)


def run_load(name: str, runs: int = 3, doc: str = "") -> dict[str, Any]:
    samples: dict[str, list[dict[str, float]]] = {"ferrotok": [], "tiktoken": []}
    errors: dict[str, str] = {}
    doc_path = None
    if doc:
        doc_path = benchlib.temp_dir("ferrotok-bench-doc-") / "first_doc.txt"
        doc_path.write_text(doc, encoding="utf-8")
    for _ in range(runs):  # interleaved
        for module in samples:
            log(f"load {module} {name}")
            r = _load_once(module, name, doc_path)
            if isinstance(r, str):
                errors[module] = r
            else:
                samples[module].append(r)
    med = {m: {k: statistics.median(s[k] for s in ss) for k in ss[0]} for m, ss in samples.items()
           if ss}
    return {"encoding": name, "runs": runs, "median": med, "samples": samples, "errors": errors,
            "doc_bytes": len(doc.encode())}


def load_table(load: dict[str, Any]) -> Table:
    med = load["median"]
    t = Table(f"cold load of {load['encoding']} in a fresh subprocess (median of {load['runs']})",
              ["", "ferrotok", "tiktoken", "ft/tt"])
    rows = [("import", "import_s", fmt_ms), ("get_encoding", "load_s", fmt_ms),
            ("first encode", "first_encode_s", fmt_ms),
            ("RSS added (MB)", "rss_delta", lambda b: f"{b / 1e6:.1f}"),
            ("peak RSS added (MB)", "hwm_delta", lambda b: f"{b / 1e6:.1f}"),
            ("then a first document", "first_doc_s", fmt_ms),
            ("get_encoding to its ids (sum)", "to_first_doc_s", fmt_ms),
            ("RSS added, after it (MB)", "rss_doc_delta", lambda b: f"{b / 1e6:.1f}"),
            ("peak RSS added, after it (MB)", "hwm_doc_delta", lambda b: f"{b / 1e6:.1f}")]
    for label, key, fmt in rows:
        ft, tt = med.get("ferrotok", {}).get(key), med.get("tiktoken", {}).get(key)
        t.rows.append([label, fmt(ft) if ft is not None else "-",
                       fmt(tt) if tt is not None else "-", fmt_ratio(_ratio(ft, tt))])
    t.notes += [f"{m}: {e}" for m, e in load["errors"].items()]
    t.notes.append("RSS = resident memory after get_encoding + one encode, minus after import")
    if load.get("doc_bytes"):
        t.notes.append(f"first document: {load['doc_bytes']:,} bytes, the first ~4 KB document of "
                       "english, code and multilingual; ferrotok builds some tables at first use "
                       "(see benches/README.md)")
    return t


# ---------------------------------------------------------------- driver


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="*", type=Path, help="extra corpus files (cut into docs too)")
    p.add_argument("--mb", type=float, default=1.0, help="MB read from each corpus (default 1)")
    p.add_argument("--reps", type=int, default=5, help="timed rounds per cell (default 5)")
    p.add_argument("--only", help="corpora to use, e.g. english,code")
    p.add_argument("--encodings", default=",".join(ALL_ENCODINGS),
                   help="encodings (cl100k_base,o200k_base,r50k_base,p50k_base,custom)")
    p.add_argument("--section", default=",".join(SECTIONS), help=",".join(SECTIONS))
    p.add_argument("--peers", help="only these encoders (ferrotok and tiktoken always run)")
    p.add_argument("--corpus-dir", type=Path, default=benchlib.DEFAULT_CORPUS_DIR)
    p.add_argument("--threads", type=int, default=2, help="threads for the batch section")
    # A batch's speed-up over one thread pairs two timings that each move with what the other
    # core is doing: single rounds of cl100k multilingual read 1.54x-1.96x where the median of
    # 15 was 1.91x (and the medians of 15 of the six cells 1.91x-1.98x), so the median of 5
    # rounds, enough for the single-thread cells, drew anywhere from 1.82x to 2.09x.
    p.add_argument("--batch-reps", type=int, default=9,
                   help="timed rounds per batch cell (default 9)")
    p.add_argument("--quiet-wait", type=float, default=60.0,
                   help="seconds to wait, before each section and each batch cell, for other "
                        "processes to use under 5%% of a CPU (default 60; 0: do not wait)")
    p.add_argument("--custom-pat", default=peerlib.GPT2_ORIGINAL_PAT,
                   help="pattern of the custom encoding (ranks: cl100k_base)")
    p.add_argument("--budget", type=float, default=3.0,
                   help="max seconds of samples per encoder per cell (default 3)")
    p.add_argument("--markdown", action="store_true", help="print tables as Markdown")
    p.add_argument("--json", metavar="PATH", help="save all results as JSON")
    p.add_argument("--plot", metavar="PATH.png", help="bar chart (needs matplotlib)")
    return p.parse_args(argv)


def _csv(s: str | None) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()] if s else []


def make_specs(args: argparse.Namespace) -> list[EncSpec]:
    specs = []
    for name in _csv(args.encodings):
        if name == "custom":
            specs.append(EncSpec("custom", "cl100k_base", args.custom_pat))
        elif name in ALL_ENCODINGS:
            specs.append(EncSpec(name, name))
        else:
            log(f"unknown encoding {name!r} ignored")
    return specs


def select_peers(args: argparse.Namespace) -> list[Peer]:
    wanted = set(_csv(args.peers)) | {"ferrotok", "tiktoken"}
    return [p for p in peerlib.PEERS if not args.peers or p.name in wanted]


def peers_table(peers: list[Peer], encoders: Encoders, res: dict[str, Any]) -> Table:
    t = Table("encoders (ids checked against tiktoken before timing)",
              ["name", "package", "version", "status", "ids == tiktoken", "timed API"], left=6)
    errors = encoders.errors()
    for p in peers:
        if not p.installed():
            status = "not installed"
        elif p.name in errors:
            status = "; ".join(f"{e}: {m}" for e, m in errors[p.name].items())
        else:
            status = "ok"
        t.rows.append([p.name, p.dist, p.version() if p.installed() else "-", status,
                       exactness_summary(p.name, res), p.api])
    return t


def exactness_summary(name: str, res: dict[str, Any]) -> str:
    """'exact on N/M cells' over the single-thread cells and adversarial files."""
    parts = []
    for section, unit in (("single", "cells"), ("adversarial", "files")):
        rs = [c["results"][name] for c in res.get(section, []) if name in c["results"]]
        rs = [r for r in rs if "ndiff" in r and r["ndiff"] is not None]
        if rs:
            ok = sum(1 for r in rs if not r["ndiff"])
            parts.append(f"{ok}/{len(rs)} {unit}")
    return ", ".join(parts) or "-"


class Printer:
    def __init__(self, markdown: bool) -> None:
        self.markdown = markdown

    def __call__(self, table: Table) -> None:
        print(table.render(self.markdown), flush=True)


@dataclass
class Run:
    """What every section needs: the settings, inputs, encoders and the results so far."""

    args: argparse.Namespace
    specs: list[EncSpec]
    corpora: list[Corpus]
    encoders: Encoders
    res: dict[str, Any]

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.encoders.peers if p.installed()]

    def used(self, section: str) -> list[str]:
        return [n for n in self.names if any(n in c["results"] for c in self.res[section])]


def run_sections(run: Run, out: Printer) -> None:
    run.res["section_s"], run.res["quiet_wait"] = {}, {}
    for section in [x for x in _csv(run.args.section) if x in SECTIONS]:
        run.res["quiet_wait"][section] = wait_for_quiet(run.args.quiet_wait, section)
        t0 = time.perf_counter()
        for table in SECTION_RUNNERS[section](run):
            out(table)
        run.res["section_s"][section] = time.perf_counter() - t0
        log(f"{section}: {run.res['section_s'][section]:.0f} s")


def wait_for_quiet(max_wait: float, what: str) -> dict[str, float | None]:
    """benchlib.wait_until_quiet, logged when it waited or the machine stayed busy."""
    if max_wait <= 0:
        return {"waited_s": 0.0, "others_cpus": None}
    q = benchlib.wait_until_quiet(max_wait)
    others = q["others_cpus"] or 0.0
    busy = others >= benchlib.QUIET_CPUS
    if (q["waited_s"] or 0.0) >= 0.5 or busy:
        state = "still busy" if busy else "quiet"
        log(f"{what}: waited {q['waited_s']:.0f} s for other processes to settle; {state} "
            f"(they used {others:.2f} CPUs in the last second)")
    return q


def _single(run: Run) -> list[Table]:
    run.res["single"] = run_single(run.specs, run.corpora, run.encoders, run.args)
    return [single_table(run.res["single"], run.used("single"))]


def _batch(run: Run) -> list[Table]:
    run.res["batch"] = run_batch(run.specs, run.corpora, run.encoders, run.args)
    return [batch_table(run.res["batch"], run.args.threads)]


def _adversarial(run: Run) -> list[Table]:
    paths = benchlib.adversarial_files(run.args.corpus_dir)
    run.res["adversarial"] = run_adversarial(run.specs, paths, run.encoders, run.args)
    return [adversarial_table(run.res["adversarial"], run.used("adversarial"))]


def _decode(run: Run) -> list[Table]:
    run.res["decode"] = run_decode(run.specs, run.corpora, run.encoders, run.args)
    return [decode_table(run.res["decode"])]


def _load(run: Run) -> list[Table]:
    run.res["load"] = run_load("o200k_base", doc=first_document(run.args.corpus_dir))
    return [load_table(run.res["load"])]


SECTION_RUNNERS: dict[str, Callable[[Run], list[Table]]] = {
    "single": _single, "batch": _batch, "adversarial": _adversarial, "decode": _decode,
    "load": _load,
}


def load_inputs(args: argparse.Namespace) -> list[Corpus]:
    if not {"single", "batch", "decode"} & set(_csv(args.section)):
        return []
    names = _csv(args.only) or list(benchlib.CORPORA)
    return benchlib.load_corpora(args.corpus_dir, names, args.files, args.mb)


def main(argv: list[str] | None = None) -> int:
    t0 = time.perf_counter()
    args = parse_args(argv)
    env_notes = benchlib.setup_offline_env()
    peers = select_peers(args)
    info = report.machine_info(peers, env_notes)
    config = {k: [str(f) for f in v] if k == "files" else str(v) if isinstance(v, Path) else v
              for k, v in vars(args).items()}
    print(report.header_text(info, config, args.markdown), flush=True)
    run = Run(args, make_specs(args), load_inputs(args), Encoders(peers),
              {"machine": info, "config": config})
    run.res["corpora"] = {c.name: {"docs": len(c.docs), "bytes": c.nbytes} for c in run.corpora}
    out = Printer(args.markdown)
    run_sections(run, out)
    out(peers_table(peers, run.encoders, run.res))
    run.res["targets"] = targets.evaluate(run.res)
    run.res["encoder_load_s"] = run.encoders.load_s
    for table in targets.tables(run.res["targets"]):
        out(table)
    run.res["elapsed_s"] = time.perf_counter() - t0
    print(report.footer_text(run.res["elapsed_s"], args.markdown), flush=True)
    if args.json:
        report.save_json(args.json, run.res)
    if args.plot:
        report.save_plot(args.plot, run.res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
