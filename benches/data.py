"""The whole data job, files in and training shards out, against the usual recipes.

One run builds a corpus of ~4 kB documents cut from the shared corpus (english, code,
multilingual; repeated to --mb MB), writes it as JSONL and as Parquet, then times each
contender in its own process, on the same files, with the GPT-2 vocabulary (uint16 ids):

* ``ferrotok-job``: ``ferrotok.data.tokenize_files`` (JSONL -> Megatron, Parquet -> .bin);
* ``ferrotok-job-1t``: the same on one encoding thread;
* ``ferrotok-by-hand``: ``json.loads`` per line + ``encode_ordinary_batch_to_numpy`` + a .bin;
* ``nanogpt``: nanoGPT's ``prepare.py`` recipe, ``datasets`` ``map(num_proc=cores)`` with
  tiktoken's ``encode_ordinary`` + EOT, then the ``np.memmap`` .bin;
* ``datatrove``: datatrove's ``JsonlReader`` + ``DocumentTokenizer`` (HF tokenizers,
  gpt-2.tokenizer.json) on a ``LocalPipelineExecutor`` with one task per core;
* ``gigatoken``: ``Tokenizer.encode_files(JsonlFileSource / ParquetFileSource)``, then EOT
  added and a .bin written.

Also measured in the same run: ferrotok's single-thread encode of the documents already in
memory (``encode_ordinary_batch_to_numpy(num_threads=1)``) as the baseline, the same on two
threads (the ceiling for this work on two cores), and a CPU-bound two-process probe (a
pure-Python loop alone, then two at once) giving the scaling this machine allows. The summary
splits the job's ``job_scaling_vs_probe`` into ``job_of_two_thread_encode`` (what the job
loses) and ``encode_scaling_vs_probe`` (what the hardware allows this memory-heavy work).
Each contender's peak RSS (its own and its children's) is recorded.

    python benches/data.py                      # small (64 MB), a few minutes
    python benches/data.py --mb 1024            # the 1 GB run
    python benches/data.py --mb 5120 --only ferrotok-job   # 5 GB: peak memory stays flat

Results are appended to benches/results/data.jsonl (or --results), one JSON object per run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from benchlib import DEFAULT_CORPUS_DIR, data_dir, setup_offline_env  # noqa: E402

RESULTS = HERE / "results" / "data.jsonl"
ENCODING = "gpt2"
CONTENDERS = ("ferrotok-job", "ferrotok-job-1t", "ferrotok-by-hand", "nanogpt", "datatrove",
              "gigatoken")


def _corpus_dir() -> Path:
    env = os.environ.get("FERROTOK_CORPUS_DIR")
    return Path(env) if env else DEFAULT_CORPUS_DIR


def build_inputs(work: Path, mb: float) -> dict[str, Path]:
    """``docs.jsonl`` and ``docs.parquet`` of ~4 kB documents, ``mb`` MB of text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    jsonl, parquet = work / "docs.jsonl", work / "docs.parquet"
    stamp = work / f"built-{mb}"
    if stamp.exists():
        return {"jsonl": jsonl, "parquet": parquet}
    texts = [(_corpus_dir() / f"{n}.txt").read_text(encoding="utf-8")
             for n in ("english", "code", "multilingual")]
    docs: list[str] = []
    for t in texts:
        at = 0
        while at < len(t):
            cut = t.find("\n", at + 4000)
            cut = len(t) if cut < 0 else cut + 1
            docs.append(t[at:cut])
            at = cut
    # interleave the three kinds
    docs = [d for trio in zip(docs[0::3], docs[1::3], docs[2::3]) for d in trio]
    target = int(mb * 1e6)
    total = 0
    writer = None
    batch: list[str] = []
    with open(jsonl, "w", encoding="utf-8") as f:
        i = 0
        while total < target:
            d = docs[i % len(docs)]
            line = json.dumps({"id": i, "text": d}, ensure_ascii=False)
            f.write(line + "\n")
            batch.append(d)
            total += len(d.encode("utf-8"))
            i += 1
            if len(batch) == 20_000:
                table = pa.table({"text": batch})
                if writer is None:
                    writer = pq.ParquetWriter(parquet, table.schema)
                writer.write_table(table)
                batch = []
    table = pa.table({"text": batch})
    if writer is None:
        writer = pq.ParquetWriter(parquet, table.schema)
    writer.write_table(table)
    writer.close()
    stamp.write_text("ok")
    return {"jsonl": jsonl, "parquet": parquet}


# ------------------------------------------------------------------ contenders (in a child)


def _bin_writer(path: Path):
    import numpy as np

    f = open(path, "wb")  # noqa: SIM115

    def write(ids) -> None:
        f.write(np.asarray(ids, dtype=np.uint16).tobytes())

    return f, write


def run_ferrotok_job(src: Path, out: Path, fmt: str, threads: int | None) -> int:
    from ferrotok.data import tokenize_files

    m = tokenize_files(src, out, encoding=ENCODING, format=fmt, num_threads=threads,
                       progress=False, overwrite=True)
    return int(m["tokens"])


def run_by_hand(src: Path, out: Path) -> int:
    import ferrotok
    import numpy as np

    enc = ferrotok.get_encoding(ENCODING)
    eot = enc.eot_token
    f, write = _bin_writer(out / "tokens.bin")
    tokens = 0

    def flush(batch: list[str]) -> int:
        ids, offsets = enc.encode_ordinary_batch_to_numpy(batch, num_threads=os.cpu_count() or 1)
        ids = np.insert(ids, offsets[1:], eot)
        write(ids)
        return len(ids)

    batch: list[str] = []
    if src.suffix == ".parquet":
        import pyarrow.parquet as pq

        for rb in pq.ParquetFile(src).iter_batches(columns=["text"], batch_size=2048):
            tokens += flush(rb.column(0).to_pylist())
    else:
        with open(src, encoding="utf-8") as fh:
            for line in fh:
                batch.append(json.loads(line)["text"])
                if len(batch) == 2048:
                    tokens += flush(batch)
                    batch = []
        if batch:
            tokens += flush(batch)
    f.close()
    return tokens


def run_nanogpt(src: Path, out: Path) -> int:
    """nanoGPT's data/openwebtext/prepare.py, on local files."""
    import numpy as np
    import tiktoken
    from datasets import load_dataset

    enc = tiktoken.get_encoding("r50k_base")  # GPT-2's ids (offline: no vocab.bpe needed)
    kind = "parquet" if src.suffix == ".parquet" else "json"
    ds = load_dataset(kind, data_files=str(src), split="train",
                      cache_dir=str(out / "hf-cache"))

    def process(example):
        ids = enc.encode_ordinary(example["text"])
        ids.append(enc.eot_token)
        return {"ids": ids, "len": len(ids)}

    tokenized = ds.map(process, remove_columns=ds.column_names, desc=None,
                       num_proc=os.cpu_count() or 1)
    arr_len = int(np.sum(tokenized["len"], dtype=np.uint64))
    arr = np.memmap(out / "train.bin", dtype=np.uint16, mode="w+", shape=(arr_len,))
    total_batches = min(1024, len(tokenized))
    idx = 0
    for batch_idx in range(total_batches):
        batch = tokenized.shard(num_shards=total_batches, index=batch_idx,
                                contiguous=True).with_format("numpy")
        arr_batch = np.concatenate(batch["ids"])
        arr[idx : idx + len(arr_batch)] = arr_batch
        idx += len(arr_batch)
    arr.flush()
    return arr_len


def run_datatrove(src: Path, out: Path) -> int:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader, ParquetReader
    from datatrove.pipeline.tokens import DocumentTokenizer

    tok = Path(os.environ.get("FERROTOK_TOKENIZERS_DIR", "/work/shared/tokenizers"))
    tok_json = tok / "gpt-2.tokenizer.json"
    cores = os.cpu_count() or 1
    # One input file per task, as datatrove splits work by file.
    parts = out / "parts"
    parts.mkdir()
    _split(src, parts, cores)
    reader = (ParquetReader(str(parts)) if src.suffix == ".parquet"
              else JsonlReader(str(parts), compression=None))
    LocalPipelineExecutor(
        pipeline=[reader, DocumentTokenizer(str(out / "ds"), tokenizer_name_or_path=str(tok_json),
                                            eos_token="<|endoftext|>", shuffle_documents=False)],
        tasks=cores, workers=cores, logging_dir=str(out / "logs"),
    ).run()
    total = 0
    for p in (out / "ds").glob("*.ds"):
        total += p.stat().st_size // 2
    return total


def _split(src: Path, parts: Path, n: int) -> None:
    """The input cut into n files (datatrove parallelizes over files); not timed apart."""
    if src.suffix == ".parquet":
        import pyarrow.parquet as pq

        t = pq.read_table(src)
        step = -(-t.num_rows // n)
        for i in range(n):
            pq.write_table(t.slice(i * step, step), parts / f"part{i}.parquet")
        return
    size = src.stat().st_size
    with open(src, "rb") as f:
        for i in range(n):
            with open(parts / f"part{i}.jsonl", "wb") as g:
                data = f.read(size // n) if i < n - 1 else f.read()
                if i < n - 1:
                    data += f.readline()
                g.write(data)


def run_gigatoken(src: Path, out: Path) -> int:
    import gigatoken
    import numpy as np

    tok = gigatoken.Tokenizer.from_tiktoken(str(data_dir() / "r50k_base.tiktoken"),
                                            pretokenizer="gpt2",
                                            special_tokens={"<|endoftext|>": 50256})
    source = (gigatoken.ParquetFileSource([str(src)]) if src.suffix == ".parquet"
              else gigatoken.JsonlFileSource([str(src)]))
    arr = tok.encode_files(source)
    import awkward as ak

    flat = np.asarray(ak.flatten(arr), dtype=np.uint32)
    counts = np.asarray(ak.num(arr), dtype=np.int64)
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    ids = np.insert(flat, offsets[1:], 50256)
    f, write = _bin_writer(out / "tokens.bin")
    write(ids)
    f.close()
    return len(ids)


def _vm_hwm_mb() -> float:
    """This process's peak resident memory since its exec (VmHWM; ru_maxrss would include
    what the parent held before the fork)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(args: argparse.Namespace) -> None:
    setup_offline_env()
    src, out = Path(args.input), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fmt = "megatron" if src.suffix == ".jsonl" else "bin"
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    if args.child == "ferrotok-job":
        tokens = run_ferrotok_job(src, out / "shards", fmt, None)
    elif args.child == "ferrotok-job-1t":
        tokens = run_ferrotok_job(src, out / "shards", fmt, 1)
    elif args.child == "ferrotok-by-hand":
        tokens = run_by_hand(src, out)
    elif args.child == "nanogpt":
        tokens = run_nanogpt(src, out)
    elif args.child == "datatrove":
        tokens = run_datatrove(src, out)
    elif args.child == "gigatoken":
        tokens = run_gigatoken(src, out)
    else:
        raise SystemExit(f"unknown contender {args.child}")
    dt = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    self_rss = _vm_hwm_mb()
    # (a forked child's ru_maxrss starts at its parent's: this is an upper bound)
    kids_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    # CPU seconds (this process's threads, then its child processes'): on a shared machine
    # they move less with the load than the seconds do.
    print(json.dumps({"seconds": dt, "tokens": tokens, "peak_rss_mb": self_rss,
                      "peak_rss_children_mb": kids_rss,
                      "cpu_user_s": ru1.ru_utime - ru0.ru_utime,
                      "cpu_sys_s": ru1.ru_stime - ru0.ru_stime,
                      "cpu_children_s": kids.ru_utime + kids.ru_stime}))


# ------------------------------------------------------------------ baseline and probe


def in_memory_encode(src: Path, max_mb: float = 110) -> dict[str, dict[str, float]]:
    """ferrotok's encode of documents in memory, on one thread and on two
    (``encode_ordinary_batch_to_numpy(num_threads=1 / 2)``, batches of 1,024 documents):
    MB/s, best of 2 passes each, every pass on text met once, in the job's mix.

    The documents are those of the corpus's first ``max_mb`` MB: the corpus repeats the
    shared corpus (~100 MB: english, then code, then multilingual), so these are each of its
    documents once, the mix the job reads. They are dealt into four slices (document ``k``
    to slice ``k % 4``), and each pass encodes its own slice: one thread slices 0 and 1, two
    threads 2 and 3. (A pass over text an earlier pass encoded reads words from the piece
    cache, which the job, meeting each document once a cycle, does not; and the first 64 MB
    alone are English and code, faster to encode than the multilingual third.)

    The two-thread figure is the ceiling the job can reach on two cores for this work, which
    shares the caches and memory bandwidth, where the probe's pure-Python loop shares
    nothing."""
    import ferrotok
    import pyarrow.parquet as pq

    enc = ferrotok.get_encoding(ENCODING)
    texts: list[str] = []
    nbytes = 0
    for rb in pq.ParquetFile(src).iter_batches(columns=["text"], batch_size=1024):
        for t in rb.column(0).to_pylist():
            texts.append(t)
            nbytes += len(t.encode("utf-8"))
        if nbytes >= max_mb * 1e6:
            break
    slices = [texts[k::4] for k in range(4)]
    enc.build_tables()
    out = {}
    for name, threads, mine in (
        ("single_thread_encode", 1, slices[:2]),
        ("two_thread_encode", 2, slices[2:]),
    ):
        passes = []
        for part in mine:
            mb = sum(len(t.encode("utf-8")) for t in part) / 1e6
            t0, c0 = time.perf_counter(), time.process_time()
            for i in range(0, len(part), 1024):
                enc.encode_ordinary_batch_to_numpy(part[i : i + 1024], num_threads=threads)
            dt = time.perf_counter() - t0
            # cpu_s: the process's CPU seconds in that pass (all threads)
            passes.append({"mb_per_s": mb / dt, "mb": mb, "cpu_s": time.process_time() - c0})
        out[name] = max(passes, key=lambda p: p["mb_per_s"])
    return out


_PROBE = (
    "import time\nt=time.perf_counter()\nx=0\nfor i in range({n}): x+=i*i\n"
    "print(time.perf_counter()-t)"
)


def scaling_probe(n: int = 30_000_000) -> dict[str, float]:
    """A pure-Python loop alone, then two at once: the speed-up two processes reach."""
    code = _PROBE.format(n=n)
    alone = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    both = [float(p.communicate()[0]) for p in procs]
    return {"alone_s": alone, "pair_s": max(both), "scaling": 2 * alone / max(both)}


def _load() -> list[float]:
    return list(os.getloadavg())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=float, default=64, help="corpus size in MB (default 64)")
    p.add_argument("--work", default=None, help="where inputs/outputs go (default: a temp dir)")
    p.add_argument("--only", action="append", default=[], choices=CONTENDERS)
    p.add_argument("--inputs", default="jsonl,parquet", help="jsonl, parquet or both")
    p.add_argument("--note", default="", help="recorded with the run (e.g. 'machine loaded')")
    p.add_argument("--results", default=str(RESULTS),
                   help=f"the JSON Lines file the run is appended to (default {RESULTS})")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--input", default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return
    setup_offline_env()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="ferrotok-data-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"building a {args.mb:g} MB corpus in {work} ...", file=sys.stderr)
    inputs = build_inputs(work, args.mb)
    contenders = args.only or list(CONTENDERS)
    run: dict[str, object] = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "mb": args.mb,
        "encoding": ENCODING,
        "cpus": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "note": args.note,
        "load_before": _load(),
    }
    encodes = in_memory_encode(inputs["parquet"])
    base, two = encodes["single_thread_encode"], encodes["two_thread_encode"]
    probe = scaling_probe()
    run.update(encodes)
    run["probe"] = probe
    print(f"in-memory encode: one thread {base['mb_per_s']:.1f} MB/s, two threads "
          f"{two['mb_per_s']:.1f} MB/s; two-process probe {probe['scaling']:.2f}x",
          file=sys.stderr)
    cells = []
    for kind in args.inputs.split(","):
        src = inputs[kind]
        mb = src.stat().st_size / 1e6
        text_mb = args.mb
        for name in contenders:
            out = work / f"out-{name}-{kind}"
            subprocess.run(["rm", "-rf", str(out)], check=True)
            r = subprocess.run([sys.executable, __file__, "--child", name, "--input", str(src),
                                "--out", str(out)], capture_output=True, text=True)
            cell: dict[str, object] = {"contender": name, "input": kind, "file_mb": mb}
            if r.returncode != 0:
                cell["error"] = (r.stderr.strip().splitlines() or ["?"])[-1][:300]
                print(f"{name:18s} {kind:8s} FAILED: {cell['error']}", file=sys.stderr)
            else:
                res = json.loads(r.stdout.strip().splitlines()[-1])
                cell.update(res)
                cell["text_mb_per_s"] = text_mb / res["seconds"]
                cell["over_one_thread_encode"] = cell["text_mb_per_s"] / base["mb_per_s"]
                print(f"{name:18s} {kind:8s} {res['seconds']:7.2f} s  "
                      f"{cell['text_mb_per_s']:7.1f} MB/s  {res['tokens']:,} tokens  "
                      f"peak {res['peak_rss_mb']:.0f} MB "
                      f"(children {res['peak_rss_children_mb']:.0f})",
                      file=sys.stderr)
            cells.append(cell)
            subprocess.run(["rm", "-rf", str(out)], check=True)
    run["cells"] = cells
    run["load_after"] = _load()
    for kind in args.inputs.split(","):
        by = {c["contender"]: c for c in cells if c["input"] == kind and "seconds" in c}
        job = by.get("ferrotok-job")
        if not job:
            continue
        summary = {
            "job_scaling_vs_probe": job["over_one_thread_encode"] / probe["scaling"],
            # CPU seconds a text MB costs the job (start-up included) over what it costs the
            # one-thread in-memory encode: the job's work beside encoding, whatever the load
            "job_cpu_of_one_thread_encode": (
                (job["cpu_user_s"] + job["cpu_sys_s"]) / args.mb
                / (base["cpu_s"] / base["mb"])
            ),
            # what the job keeps of the in-memory two-thread encode (its own losses) ...
            "job_of_two_thread_encode": job["text_mb_per_s"] / two["mb_per_s"],
            # ... and what two encoding threads reach of the probe's scaling (the hardware's)
            "encode_scaling_vs_probe": two["mb_per_s"] / base["mb_per_s"] / probe["scaling"],
        }
        for other in ("nanogpt", "gigatoken", "datatrove", "ferrotok-by-hand"):
            if other in by:
                summary[f"vs_{other}"] = by[other]["seconds"] / job["seconds"]
        run[f"summary_{kind}"] = summary
        print(f"{kind}: " + ", ".join(f"{k} {v:.2f}" for k, v in summary.items()),
              file=sys.stderr)
    results = Path(args.results)
    results.parent.mkdir(parents=True, exist_ok=True)
    with open(results, "a", encoding="utf-8") as f:
        f.write(json.dumps(run) + "\n")
    print(f"appended to {results}", file=sys.stderr)


if __name__ == "__main__":
    main()
