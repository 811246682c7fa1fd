"""Reading and writing BPE files, found locally first and downloaded only when missing.

Where an encoding file comes from, in order:
1. `$FERROTOK_DATA_DIR/<official file name>` (e.g. `cl100k_base.tiktoken`), if that variable is set;
2. tiktoken's cache (`$TIKTOKEN_CACHE_DIR`, else `$DATA_GYM_CACHE_DIR`, else
   `<tmp>/data-gym-cache`), under tiktoken's name `sha1(url)`, so an existing tiktoken cache
   is reused;
3. the official URL, written into that cache atomically (temporary file + rename).

Every file is checked against its sha256 when one is expected. A mismatch in a directory the user
named is an error; a corrupt cache entry is never used (it is replaced by a fresh download).
No network is touched when a verified file is found locally.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
import urllib.request

_DOWNLOAD_TIMEOUT_S = 60


def _is_url(path: str) -> bool:
    return "://" in path


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_hash(data: bytes, expected_hash: str | None, where: str) -> None:
    if expected_hash is not None and _sha256(data) != expected_hash:
        raise ValueError(
            f"{where}: sha256 is {_sha256(data)}, expected {expected_hash}. "
            "The file is corrupt, truncated or not the official one; delete it to re-download."
        )


def _cache_dir() -> str | None:
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        d = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        d = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        d = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return d or None  # an empty value disables caching, as in tiktoken


def read_file(blobpath: str) -> bytes:
    """The bytes of a local path or a URL (no cache)."""
    if not _is_url(blobpath):
        with open(blobpath, "rb") as f:
            return f.read()
    try:
        with urllib.request.urlopen(blobpath, timeout=_DOWNLOAD_TIMEOUT_S) as resp:
            return resp.read()
    except OSError as e:
        raise OSError(
            f"could not download {blobpath}: {e}. Without a network, put the file in a "
            "directory and set FERROTOK_DATA_DIR (or TIKTOKEN_CACHE_DIR) to it."
        ) from e


def _atomic_write(path: str, data: bytes) -> None:
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_file_cached(blobpath: str, expected_hash: str | None = None) -> bytes:
    """The bytes of `blobpath`, from `FERROTOK_DATA_DIR`, tiktoken's cache or the network."""
    if not _is_url(blobpath):
        data = read_file(blobpath)
        _check_hash(data, expected_hash, blobpath)
        return data

    data_dir = os.environ.get("FERROTOK_DATA_DIR")
    if data_dir:
        local = os.path.join(data_dir, blobpath.rsplit("/", 1)[-1])
        if os.path.exists(local):
            data = read_file(local)
            _check_hash(data, expected_hash, local)
            return data

    cache_dir = _cache_dir()
    cache_path = None
    if cache_dir is not None:
        cache_path = os.path.join(cache_dir, hashlib.sha1(blobpath.encode()).hexdigest())
        if os.path.exists(cache_path):
            with open(cache_path, "rb") as f:
                data = f.read()
            if expected_hash is None or _sha256(data) == expected_hash:
                return data
            # A corrupt cache entry is never used: fall through and fetch a fresh copy.

    data = read_file(blobpath)
    _check_hash(data, expected_hash, blobpath)
    if cache_path is not None:
        try:
            _atomic_write(cache_path, data)
        except OSError:
            pass  # a read-only cache is not an error; the data is good
    return data


def parse_tiktoken_bpe(contents: bytes, source: str = "<bytes>") -> dict[bytes, int]:
    """Parses `.tiktoken` contents: one `base64(token) rank` per line."""
    ranks: dict[bytes, int] = {}
    for lineno, line in enumerate(contents.splitlines(), start=1):
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except ValueError as e:  # binascii.Error is a ValueError
            raise ValueError(
                f"{source}, line {lineno}: expected 'base64-token rank', got {line[:80]!r}"
            ) from e
    return ranks


def load_tiktoken_bpe(tiktoken_bpe_file: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """Loads a `.tiktoken` file (path or URL) into `{token bytes: rank}`."""
    contents = read_file_cached(tiktoken_bpe_file, expected_hash)
    return parse_tiktoken_bpe(contents, tiktoken_bpe_file)


def dump_tiktoken_bpe(bpe_ranks: dict[bytes, int], tiktoken_bpe_file: str) -> None:
    """Writes `{token bytes: rank}` as a `.tiktoken` file that tiktoken's loader reads."""
    lines = [
        base64.b64encode(token) + b" " + str(rank).encode()
        for token, rank in sorted(bpe_ranks.items(), key=lambda x: x[1])
    ]
    data = b"".join(line + b"\n" for line in lines)
    _atomic_write(os.path.abspath(tiktoken_bpe_file), data)


def _data_gym_byte_table() -> dict[str, int]:
    """GPT-2's printable stand-in character for each byte.

    Printable, non-space bytes stand for themselves; the others are mapped, in byte order,
    to the characters U+0100, U+0101, ...
    """
    table = {chr(b): b for b in range(256) if chr(b).isprintable() and chr(b) != " "}
    extra = 0
    for b in range(256):
        if chr(b) not in table:
            table[chr(256 + extra)] = b
            extra += 1
    return table


def data_gym_to_mergeable_bpe_ranks(
    vocab_bpe_file: str,
    encoder_json_file: str,
    vocab_bpe_hash: str | None = None,
    encoder_json_hash: str | None = None,
) -> dict[bytes, int]:
    """Converts GPT-2's `vocab.bpe` + `encoder.json` into `{token bytes: rank}`."""
    table = _data_gym_byte_table()

    def decode(s: str) -> bytes:
        return bytes(table[c] for c in s)

    # Single bytes first, in GPT-2's order: printable ones, then the rest.
    ranks = {decode(c): i for i, c in enumerate(table)}
    merges_text = read_file_cached(vocab_bpe_file, vocab_bpe_hash).decode()
    for lineno, line in enumerate(merges_text.split("\n")[1:-1], start=2):
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"{vocab_bpe_file}, line {lineno}: expected two tokens, got {line!r}")
        ranks[decode(parts[0]) + decode(parts[1])] = len(ranks)

    encoder = json.loads(read_file_cached(encoder_json_file, encoder_json_hash))
    from_json = {decode(k): v for k, v in encoder.items()}
    from_json.pop(b"<|endoftext|>", None)
    from_json.pop(b"<|startoftext|>", None)
    if from_json != ranks:
        raise ValueError(f"{vocab_bpe_file} and {encoder_json_file} disagree on the vocabulary")
    return ranks
