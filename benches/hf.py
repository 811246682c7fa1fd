"""Benchmark: HuggingFace tokenizer.json models on ferrotok against HF `tokenizers` and gigatoken.

What it measures, per model in ../shared/tokenizers (byte-level BPE, SentencePiece BPE,
WordPiece; a model ferrotok refuses is named and skipped): single-thread MB/s
(UTF-8 bytes of input per second) of

- `hf`: HF `tokenizers` `Tokenizer.encode(doc, add_special_tokens=False)`,
- `ferrotok`: `Encoding.from_hf(path).encode_ordinary(doc)` (a list of ints),
- `ferrotok_numpy`: `encode_to_numpy(doc, disallowed_special=())` (a uint32 array),
- `gigatoken`: `gigatoken.Tokenizer(path).encode(doc)` (a numpy array), where it loads,
- `cl100k`: ferrotok's own `cl100k_base.encode_ordinary` on the same documents (reference),
- `hf_face`: `ferrotok.hf.Tokenizer.encode(doc)` (a full HF-style Encoding: tokens, offsets,
  masks, with special tokens as HF adds them by default),

on ~4 KB documents of the shared corpus (english, code, multilingual), each document met once
by each encoder (each engine is its own instance, with its own caches, and no engine sees
a text twice, so no cache answers for it; cl100k too is a fresh instance per model), the encoders
interleaved round by round in rotating order in one process. Speeds are totals; the ratios
(`x_hf`, `of_cl100k`, `numpy_of_gigatoken`) are medians of per-round ratios, which a busy
machine disturbs less. Ids are checked against HF on every document timed. One JSON line
per model goes to benches/results/hf.jsonl.

Then, where gigatoken loads, the two numpy engines go head to head (`numpy_of_gigatoken_alone`):
only `ferrotok_numpy` and `gigatoken`, alternating, on other documents neither has met. In the
rotation each engine starts its turn with caches the others filled (HF's above all); alone,
each keeps its own warm, as in a stream through one tokenizer, and there gigatoken's caches
(which grow with everything it has read) gain the most. The target counts only if both
ratios reach it.

    python benches/hf.py [--mb 1.0] [--rounds 8] [--models llama-bpe,qwen2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

# One thread everywhere: the comparison is per core.
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import CORPORA, cut_documents, setup_offline_env  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("FERROTOK_SHARED_DIR", ROOT.parent / "shared"))
if not (SHARED / "tokenizers").is_dir() and "FERROTOK_DATA_DIR" in os.environ:
    SHARED = Path(os.environ["FERROTOK_DATA_DIR"]).parent
TARGETS = {
    "llama-bpe": 0.90,  # of ferrotok's cl100k speed
    "tekken_240911": 0.90,
    "qwen2": 0.75,
    "deepseek-llm": 0.75,
}


def documents(mb: float, at: float = 0.5) -> list[str]:
    """~4 KB documents, `mb` MB in all, read from each corpus file at fraction `at` of it."""
    corpus = Path(os.environ.get("FERROTOK_CORPUS_DIR", SHARED / "corpus"))
    docs: list[str] = []
    per = int(mb * 1_000_000 / len(CORPORA))
    for name in CORPORA:
        # The timed text from the middle of each file: the start is what other benchmarks
        # read most.
        path = corpus / f"{name}.txt"
        size = path.stat().st_size
        with open(path, "rb") as f:
            f.seek(int(size * at))
            f.readline()
            data = f.read(per)
        cut = data.rfind(b"\n")
        docs += cut_documents(data[: cut + 1].decode("utf-8", errors="replace"))
    return docs


def timed(fn: Callable[[str], Any], docs: list[str]) -> float:
    start = time.perf_counter()
    for d in docs:
        fn(d)
    return time.perf_counter() - start


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def bench_model(
    name: str,
    docs: list[str],
    warm_docs: list[str],
    head_docs: list[str],
    rounds: int,
    cl100k: Any,
) -> dict[str, Any]:
    import ferrotok
    import ferrotok.hf
    import tokenizers

    path = SHARED / "tokenizers" / f"{name}.tokenizer.json"
    # Every engine is its own instance, with its own caches (ferrotok's piece cache, HF's word
    # cache), and none has met the timed documents before: an instance shared by two engines,
    # or the exactness check below run on a timed instance, would time text met before.
    hf = tokenizers.Tokenizer.from_file(str(path))
    enc_list = ferrotok.Encoding.from_hf(path)
    enc_numpy = ferrotok.Encoding.from_hf(path)
    face = ferrotok.hf.Tokenizer(ferrotok.Encoding.from_hf(path))
    cl = ferrotok.Encoding(
        name="cl100k_base",
        pat_str=cl100k._pat_str,
        mergeable_ranks=cl100k._mergeable_ranks,
        special_tokens=cl100k._special_tokens,
    )
    cl.build_tables()
    engines: dict[str, Callable[[str], Any]] = {
        "hf": lambda d: hf.encode(d, add_special_tokens=False).ids,
        "ferrotok": enc_list.encode_ordinary,
        "ferrotok_numpy": lambda d: enc_numpy.encode_to_numpy(d, disallowed_special=()),
        "cl100k": cl.encode_ordinary,
        # HF's face: ids, tokens, offsets, masks (ByteLevel trimming, templates) in Python.
        "hf_face": face.encode,
    }
    row: dict[str, Any] = {"model": name, "method": "fresh instances; warmed on other text"}
    try:
        import gigatoken

        giga = gigatoken.Tokenizer(str(path))
        engines["gigatoken"] = giga.encode
    except Exception as e:  # noqa: BLE001 (any refusal: recorded, not fatal)
        row["gigatoken_error"] = f"{type(e).__name__}: {str(e)[:120]}"

    # Warm every engine on other text of the same kinds (a tenth of the timed amount, from
    # a quarter into each file): the caches hold the common words, as in the middle of a long
    # stream. The timed documents stay unseen. ferrotok's lazily built tables (built once
    # enough text has gone without them) are built here, for every instance as for cl100k.
    for enc in (enc_list, enc_numpy, face.encoding):
        enc.build_tables()
    for fn in engines.values():
        for d in warm_docs:
            fn(d)

    chunks = [docs[i::rounds] for i in range(rounds)]
    per_round: dict[str, list[float]] = {e: [] for e in engines}
    nbytes = 0
    names = list(engines)
    for r, chunk in enumerate(chunks):
        nbytes += sum(len(d.encode("utf-8")) for d in chunk)
        order = names[r % len(names) :] + names[: r % len(names)]
        for engine in order:
            # Each engine meets each document once: the chunk is new to every engine.
            per_round[engine].append(timed(engines[engine], chunk))
    for engine in names:
        row[f"{engine}_mbps"] = round(nbytes / sum(per_round[engine]) / 1e6, 2)
    row["bytes"] = nbytes

    head: dict[str, list[float]] = {"ferrotok_numpy": [], "gigatoken": []}
    if "gigatoken" in engines:
        for r in range(rounds):
            chunk = head_docs[r::rounds]
            for engine in list(head)[:: 1 if r % 2 == 0 else -1]:
                head[engine].append(timed(engines[engine], chunk))

    # Exactness on every document timed, after the clock (ids of the timed instance).
    row["docs"] = len(docs)
    row["mismatches"] = sum(
        1 for d in docs if enc_list.encode_ordinary(d) != hf.encode(d, add_special_tokens=False).ids
    )

    def ratio(a: str, b: str, times: dict[str, list[float]] = per_round) -> float:
        # The median over rounds of b's time / a's time on the same chunk: a busy machine
        # slows whole rounds, which a ratio taken within the round mostly cancels.
        return statistics.median(tb / ta for ta, tb in zip(times[a], times[b]))

    row["x_hf"] = round(ratio("ferrotok", "hf"), 1)
    row["of_cl100k"] = round(ratio("ferrotok", "cl100k"), 3)
    row["hf_face_x_hf"] = round(ratio("hf_face", "hf"), 1)
    if "gigatoken" in engines:
        row["numpy_of_gigatoken"] = round(ratio("ferrotok_numpy", "gigatoken"), 3)
        row["numpy_of_gigatoken_alone"] = round(ratio("ferrotok_numpy", "gigatoken", head), 3)
    target = TARGETS.get(name)
    row["targets_met"] = {
        "x50_hf": row["x_hf"] >= 50,
        **({"of_cl100k": row["of_cl100k"] >= target} if target else {}),
        **(
            {
                "numpy_ge_gigatoken": min(
                    row["numpy_of_gigatoken"], row["numpy_of_gigatoken_alone"]
                )
                >= 1.0
            }
            if "numpy_of_gigatoken" in row
            else {}
        ),
    }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=1.0, help="MB of text per model")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument(
        "--models", default="", help="comma-separated names (default: every tokenizer.json there)"
    )
    parser.add_argument("--out", default=str(ROOT / "benches" / "results" / "hf.jsonl"))
    args = parser.parse_args()
    setup_offline_env()
    import ferrotok

    docs = documents(args.mb)
    warm_docs = documents(args.mb / 10, at=0.25)
    head_docs = documents(args.mb, at=0.7)
    cl100k = ferrotok.get_encoding("cl100k_base")
    cl100k.build_tables()
    meta = {
        "commit": git_commit(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    names = (
        args.models.split(",")
        if args.models
        else sorted(
            p.name.removesuffix(".tokenizer.json")
            for p in (SHARED / "tokenizers").glob("*.tokenizer.json")
        )
    )
    for name in names:
        try:
            row = bench_model(name, docs, warm_docs, head_docs, args.rounds, cl100k)
        except ValueError as e:  # a model ferrotok refuses: named
            print(f"{name}: not loaded: {str(e)[:100]}")
            continue
        row.update(meta)
        row["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
        with open(out, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
