"""Reading and writing BPE files, found locally first and downloaded only when missing.

The public functions have tiktoken 0.14's names and signatures (`tiktoken.load`), so code that
loads its own `.tiktoken` files keeps working.

Where the file behind a URL comes from, in order:

1. `$FERROTOK_DATA_DIR/<file name>` (the last part of the URL, e.g. `cl100k_base.tiktoken`),
   if that variable is set and the file exists;
2. tiktoken's cache: `$TIKTOKEN_CACHE_DIR`, else `$DATA_GYM_CACHE_DIR`, else
   `<tmp>/data-gym-cache`, under tiktoken's name `sha1(url).hexdigest()`, so a cache tiktoken
   filled is reused (an empty `TIKTOKEN_CACHE_DIR` turns the cache off, as in tiktoken);
3. the URL itself; the download is written into the cache atomically (a temporary file in the
   same directory, flushed, then renamed), so a crash never leaves a partial cache entry.

A local path (no `://`) is read as it is and never copied into the cache.

Every file is checked against `expected_hash` (sha256) when one is given:

* a mismatch in `FERROTOK_DATA_DIR` or in a path the caller named is a `ValueError` naming the
  file: the user put it there, so silently fetching another copy would hide a mistake;
* a cache entry that does not match (or, without a hash, does not parse) is never used: it is
  deleted and downloaded again;
* a download that does not match is a `ValueError` and is not cached.

No network is touched when a file is found locally, and never when `FERROTOK_OFFLINE` is set
(to anything but `0`). A download that fails raises `DownloadError` (an `OSError`) whose
message says how to work offline.

>>> import ferrotok.load as load
>>> ranks = load.parse_tiktoken_bpe(b"YQ== 0\\nYg== 1\\nYWI= 2\\n")
>>> ranks
{b'a': 0, b'b': 1, b'ab': 2}
"""

from __future__ import annotations

import binascii
import hashlib
import os
import re
from typing import Any

from . import files

__all__ = [
    "DownloadError",
    "check_hash",
    "read_file",
    "read_file_cached",
    "parse_tiktoken_bpe",
    "format_tiktoken_bpe",
    "load_tiktoken_bpe",
    "dump_tiktoken_bpe",
    "data_gym_to_mergeable_bpe_ranks",
]

_DOWNLOAD_TIMEOUT_S = 60
_OFFLINE_ENV = "FERROTOK_OFFLINE"


class DownloadError(OSError):
    """A file could not be downloaded; the message says how to provide it offline."""


# ====================
# Finding the bytes
# ====================


def _is_url(path: str) -> bool:
    return "://" in path


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_hash(data: bytes, expected_hash: str) -> bool:
    """Whether `data`'s sha256, as lowercase hex, is `expected_hash` (tiktoken's helper).

    >>> check_hash(b"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    True
    """
    return _sha256(data) == expected_hash


def _hash_matches(data: bytes, expected_hash: str | None) -> bool:
    return not expected_hash or _sha256(data) == expected_hash.lower()


def _read_local(path: str) -> bytes:
    with open(path, "rb", buffering=0) as f:
        return f.read()


def _download(url: str) -> bytes:
    """The bytes at `url`, from the network. The only function here that touches it."""
    scheme = url.split("://", 1)[0].lower()
    if scheme not in ("http", "https", "file"):
        try:
            import blobfile  # type: ignore[import-not-found, unused-ignore]
        except ImportError as e:
            raise DownloadError(
                f"could not download {url}: the {scheme}:// scheme needs blobfile "
                "(pip install blobfile)"
            ) from e
        try:
            data: bytes = blobfile.read_bytes(url)
            return data
        except Exception as e:  # blobfile raises its own error types
            raise DownloadError(f"could not download {url}: {e}") from e

    import http.client
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=_DOWNLOAD_TIMEOUT_S) as resp:
            data = resp.read()  # `bytes`, as declared in the blobfile branch above
            length = resp.headers.get("Content-Length") if scheme != "file" else None
    except (OSError, http.client.HTTPException) as e:
        # URLError, HTTPError, timeouts and refused connections are OSErrors; a connection
        # closed before Content-Length bytes arrived is an IncompleteRead (HTTPException).
        reason = getattr(e, "reason", None) or e
        raise DownloadError(f"could not download {url}: {reason}") from e
    if length is not None and length.isdigit() and int(length) != len(data):
        raise DownloadError(
            f"could not download {url}: got {len(data)} bytes, the server announced {length}"
        )
    return data


def read_file(blobpath: str) -> bytes:
    """The bytes of a local path or a URL, without looking in any cache.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "x.tiktoken")
    >>> with open(path, "wb") as f:
    ...     _ = f.write(b"YQ== 0\\n")
    >>> read_file(path)
    b'YQ== 0\\n'
    """
    if not _is_url(blobpath):
        return _read_local(blobpath)
    return _download(blobpath)


def _offline_hint(url: str) -> str:
    name = files.file_name(url)
    lines = [
        "To work offline, put the file in a directory and point FERROTOK_DATA_DIR at it:",
        f"    export FERROTOK_DATA_DIR=/path/to/dir    # a directory holding {name}",
    ]
    data_dir_path = files.data_dir_path(url)
    if data_dir_path is not None:
        lines.append(f"(FERROTOK_DATA_DIR is set, but {data_dir_path} does not exist.)")
    cache_path = files.cache_path(url)
    if cache_path is not None:
        lines.append(f"tiktoken's cache is also read: {name} copied to {cache_path} works too.")
    return "\n".join(lines)


def _fetch(blobpath: str, expected_hash: str | None) -> tuple[bytes, str, bool]:
    """`(contents, where they were read, whether that was a cache entry)`."""
    if not _is_url(blobpath):
        data = _read_local(blobpath)
        if not _hash_matches(data, expected_hash):
            raise ValueError(
                f"{blobpath}: sha256 is {_sha256(data)}, expected {expected_hash}; "
                "the file is corrupt, truncated or not the expected one"
            )
        return data, blobpath, False

    local = files.data_dir_path(blobpath)
    if local is not None and os.path.isfile(local):
        data = _read_local(local)
        if not _hash_matches(data, expected_hash):
            raise ValueError(
                f"{local}: sha256 is {_sha256(data)}, expected {expected_hash} for "
                f"{blobpath}. The file in FERROTOK_DATA_DIR is corrupt, truncated or not the "
                "official one: replace it with the official file, or remove it to use the "
                "cache or a download instead."
            )
        return data, local, False

    cache_path = files.cache_path(blobpath)
    if cache_path is not None and os.path.isfile(cache_path):
        cached: bytes | None
        try:
            cached = _read_local(cache_path)
        except OSError:
            cached = None
        if cached is not None and _hash_matches(cached, expected_hash):
            return cached, cache_path, True
        # A corrupt or truncated cache entry is never used: drop it and fetch a fresh copy.
        files.remove_quietly(cache_path)

    if os.environ.get(_OFFLINE_ENV, "") not in ("", "0"):
        raise DownloadError(
            f"not downloading {blobpath}: {_OFFLINE_ENV} is set\n{_offline_hint(blobpath)}"
        )
    try:
        data = _download(blobpath)
    except DownloadError as e:
        raise DownloadError(f"{e}\n{_offline_hint(blobpath)}") from e
    if not _hash_matches(data, expected_hash):
        raise ValueError(
            f"Hash mismatch for data downloaded from {blobpath}: sha256 is {_sha256(data)}, "
            f"expected {expected_hash}. The download may be corrupted or truncated; "
            "try again. It was not cached."
        )
    if cache_path is not None:
        try:
            files.atomic_write(cache_path, data, make_dirs=True)
        except OSError as e:
            # The data is good; a cache we cannot write only costs a download next time.
            # Say so when the user chose the directory (tiktoken raises in that case).
            if files.cache_dir()[1]:
                import warnings

                warnings.warn(f"could not cache {blobpath} in {cache_path}: {e}", stacklevel=3)
    return data, blobpath, False


def read_file_cached(blobpath: str, expected_hash: str | None = None) -> bytes:
    """The bytes of `blobpath`, from `FERROTOK_DATA_DIR`, tiktoken's cache or the network.

    See the module docstring for the order and the checks. Raises `ValueError` if a local
    file does not have the `expected_hash` (sha256), `DownloadError` if a needed download fails.

    >>> import hashlib, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "x.tiktoken")
    >>> with open(path, "wb") as f:
    ...     _ = f.write(b"YQ== 0\\n")
    >>> read_file_cached(path, hashlib.sha256(b"YQ== 0\\n").hexdigest())
    b'YQ== 0\\n'
    """
    return _fetch(blobpath, expected_hash)[0]


# ====================
# The .tiktoken format
# ====================

_B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_ALLOWED_FAST = _B64_ALPHABET + b"= \n"
_CHUNK = 1 << 15  # bytes of lines turned into objects at a time by the fast parser
# Canonical base64 of a non-empty token (compiled on first use, by the slow path only).
_B64_TOKEN = rb"(?:[A-Za-z0-9+/]{4})+|(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)"


def _parse_fast(contents: bytes) -> dict[bytes, int] | None:
    """The ranks of a well-formed file, or None if anything is unusual.

    Uses C-speed bytes operations instead of a Python loop per line. It accepts exactly what
    `_parse_slow` accepts, with the same result, for the inputs it does not turn down; None
    sends the input to `_parse_slow`, which either agrees or names the bad line.

    The checks are whole-buffer scans (cheap, sequential); the objects (tokens, ranks) are
    made a chunk of lines at a time, so each chunk's pieces are still in the CPU cache when
    they go into the dict. Conditions:

    * only the base64 alphabet, `=`, space and `\\n` occur;
    * with the base64 alphabet and `=` deleted, what is left is `" \\n"` once per line (the
      newline optional on the last line): every line has exactly one space;
    * splitting gives two fields per line: no field is empty;
    * every run of `=` is one or two long and followed by the space: padding only ends a token;
    * no rank starts with `+` (int() would accept it; ranks are plain digits);
    * decoding succeeds; canonical padding is checked by comparing lengths in bulk: a token
      of n characters and p padding characters is canonical iff 3n == 4 * (decoded + p), and
      an accepted non-canonical one always has 3n < 4 * (decoded + p), so the totals agree
      only when every token is canonical (the padding check above rules out the other
      direction: padding inside a token);
    * no token is empty or repeated.
    """
    if not contents or contents.translate(None, _ALLOWED_FAST):
        return None
    n_lines = contents.count(b"\n") + (not contents.endswith(b"\n"))
    skeleton = contents.translate(None, _B64_ALPHABET + b"=")
    if skeleton != b" \n" * n_lines and skeleton + b"\n" != b" \n" * n_lines:
        return None
    n_pad = contents.count(b"=")
    if n_pad != contents.count(b"= ") + contents.count(b"=="):
        return None
    if b" +" in contents:
        return None

    a2b = binascii.a2b_base64
    ranks: dict[bytes, int] = {}
    n_fields = n_chars = n_decoded = 0
    pos, size = 0, len(contents)
    try:
        while pos < size:
            end = contents.find(b"\n", pos + _CHUNK)
            end = size if end < 0 else end + 1
            fields = contents[pos:end].split()
            tokens = fields[0::2]
            decoded = list(map(a2b, tokens))
            ranks.update(zip(decoded, map(int, fields[1::2])))
            n_fields += len(fields)
            n_chars += len(b"".join(tokens))
            n_decoded += len(b"".join(decoded))
            pos = end
    except (binascii.Error, ValueError):
        return None
    # Every line has one space, so 2 fields per line means no field is empty (and every
    # chunk paired tokens with their own ranks).
    if n_fields != 2 * n_lines or len(ranks) != n_lines or b"" in ranks:
        return None
    if 3 * n_chars != 4 * (n_decoded + n_pad):
        return None
    return ranks


def _bad_line(source: str, lineno: int, line: bytes, why: str) -> ValueError:
    shown = line if len(line) <= 80 else line[:77] + b"..."
    return ValueError(
        f"{source}, line {lineno}: {why}; expected 'base64-token rank', got {shown!r}"
    )


def _parse_slow(contents: bytes, source: str, rank_limit: int | None = None) -> dict[bytes, int]:
    """Line by line; the reference for `_parse_fast`, and the source of precise errors.
    With `rank_limit`, a rank at or past it is an error naming its line too."""
    ranks: dict[bytes, int] = {}
    first_line: dict[bytes, int] = {}
    for lineno, line in enumerate(contents.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 2:
            s = "" if len(fields) == 1 else "s"
            raise _bad_line(source, lineno, line, f"{len(fields)} field{s}")
        token, rank = fields
        if not re.fullmatch(_B64_TOKEN, token):
            raise _bad_line(source, lineno, line, "the token is not valid base64")
        if not rank.isdigit():
            raise _bad_line(source, lineno, line, "the rank is not a non-negative integer")
        try:
            value = int(rank)
        except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
            raise _bad_line(source, lineno, line, f"the rank has {len(rank)} digits") from None
        if rank_limit is not None and value >= rank_limit:
            why = f"rank {value} is too large (ranks must be below {rank_limit})"
            raise _bad_line(source, lineno, line, why)
        key = binascii.a2b_base64(token)
        if key in first_line:
            raise _bad_line(source, lineno, line, f"the token repeats line {first_line[key]}")
        first_line[key] = lineno
        ranks[key] = value
    if not ranks:
        raise ValueError(f"{source}: no tokens (the file is empty)")
    return ranks


def parse_tiktoken_bpe(
    contents: bytes, source: str = "<bytes>", *, rank_limit: int | None = None
) -> dict[bytes, int]:
    """Parses `.tiktoken` contents (one `base64(token) rank` per line) into `{token: rank}`.

    Stricter than tiktoken, which skips characters that are not base64: a malformed line, a
    repeated token or an empty file is a `ValueError` naming `source` and the line, and so
    is a rank of `rank_limit` or more, if given (an `Encoding` takes ranks below 2**21).
    Blank lines and `\\r\\n` line ends are accepted.

    >>> parse_tiktoken_bpe(b"aGk= 0\\nIHRoZXJl 1\\n")
    {b'hi': 0, b' there': 1}
    >>> parse_tiktoken_bpe(b"aGk= 0\\nIHRoZXJl\\n", "x.tiktoken")
    Traceback (most recent call last):
    ...
    ValueError: x.tiktoken, line 2: 1 field; expected 'base64-token rank', got b'IHRoZXJl'
    """
    ranks = _parse_fast(contents)
    if ranks is None or (rank_limit is not None and max(ranks.values()) >= rank_limit):
        ranks = _parse_slow(contents, source, rank_limit)  # names the bad line
    return ranks


def load_tiktoken_bpe(tiktoken_bpe_file: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """Loads a `.tiktoken` file (local path or URL) into `{token bytes: rank}`.

    Errors name the file that was actually read (in `FERROTOK_DATA_DIR`, the cache, or the URL).
    A cache entry that cannot be verified (no `expected_hash`) and does not parse is treated as
    corrupt: it is deleted and downloaded again.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.tiktoken")
    >>> dump_tiktoken_bpe({b"a": 0, b"b": 1, b"ab": 2}, path)
    >>> load_tiktoken_bpe(path)
    {b'a': 0, b'b': 1, b'ab': 2}
    """
    contents, source, from_cache = _fetch(tiktoken_bpe_file, expected_hash)
    if not from_cache:
        return parse_tiktoken_bpe(contents, source)
    try:
        return parse_tiktoken_bpe(contents, source)
    except ValueError:
        files.remove_quietly(source)
    contents, source, _ = _fetch(tiktoken_bpe_file, expected_hash)
    return parse_tiktoken_bpe(contents, source)


def format_tiktoken_bpe(bpe_ranks: dict[bytes, int]) -> bytes:
    """The contents of the `.tiktoken` file of `bpe_ranks`, in rank order (what
    `parse_tiktoken_bpe` reads back).

    >>> format_tiktoken_bpe({b"hi": 1, b"h": 0})
    b'aA== 0\\naGk= 1\\n'
    """
    for token, rank in bpe_ranks.items():
        if not isinstance(token, bytes) or not token:
            raise TypeError(f"tokens must be non-empty bytes, got {token!r}")
        if not isinstance(rank, int) or isinstance(rank, bool) or rank < 0:
            raise TypeError(f"ranks must be non-negative ints, got {rank!r} for {token!r}")
    return b"".join(
        b"%s %d\n" % (binascii.b2a_base64(token, newline=False), rank)
        for token, rank in sorted(bpe_ranks.items(), key=lambda x: x[1])
    )


def dump_tiktoken_bpe(bpe_ranks: dict[bytes, int], tiktoken_bpe_file: str) -> None:
    """Writes `{token bytes: rank}` as a `.tiktoken` file, in rank order.

    A local file is written atomically; a URL (`gs://`, `az://`, ...) needs blobfile, as in
    tiktoken. The output is what tiktoken writes, byte for byte.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.tiktoken")
    >>> dump_tiktoken_bpe({b"hi": 1, b"h": 0}, path)
    >>> open(path, "rb").read()
    b'aA== 0\\naGk= 1\\n'
    """
    data = format_tiktoken_bpe(bpe_ranks)
    if not _is_url(tiktoken_bpe_file):
        files.atomic_write(tiktoken_bpe_file, data)
        return
    try:
        import blobfile  # type: ignore[import-not-found, unused-ignore]
    except ImportError as e:
        raise ImportError(
            "writing to a URL needs blobfile: pip install blobfile (or write to a local path)"
        ) from e
    with blobfile.BlobFile(tiktoken_bpe_file, "wb") as f:
        f.write(data)


# ====================
# GPT-2's data-gym format
# ====================


def _data_gym_byte_table() -> dict[str, int]:
    """GPT-2's printable stand-in character for each byte, in GPT-2's rank order.

    Printable, non-space bytes stand for themselves; the others are mapped, in byte order,
    to the characters U+0100, U+0101, ...

    >>> table = _data_gym_byte_table()
    >>> table["a"], table["Ġ"], len(table)
    (97, 32, 256)
    """
    table = {chr(b): b for b in range(256) if chr(b).isprintable() and chr(b) != " "}
    extra = 0
    for b in range(256):
        if chr(b) not in table:
            table[chr(256 + extra)] = b
            extra += 1
    return table


def _merged_tokens(lines: list[str], to_latin1: dict[int, int]) -> list[bytes] | None:
    """The token of each merge line (``a b`` -> the bytes of ``ab``), all translated at once,
    when every line is two tokens of stand-in characters with one space between; None for
    anything else (a bad line, other whitespace), which the line-by-line loop then reads and
    names.

    Exact because no stand-in character is whitespace: a line passes here only if
    ``line.split()`` is the same two tokens, and a token only if it translates to Latin-1.
    """
    if not lines:
        return []
    # The separators become characters Latin-1 cannot encode and no translated token holds.
    seps = dict(to_latin1)
    seps[ord(" ")] = 0xFFFF
    seps[ord("\n")] = 0xFFFE
    seps[0xFFFF] = seps[0xFFFE] = 0xFFFD
    out = []
    try:
        for line in "\n".join(lines).translate(seps).split("\ufffe"):
            a, b = line.split("\uffff")
            if not (a and b):
                return None
            out.append((a + b).encode("latin-1"))
    except (ValueError, UnicodeEncodeError):  # not two parts; not a stand-in
        return None
    return out


def data_gym_to_mergeable_bpe_ranks(
    vocab_bpe_file: str,
    encoder_json_file: str,
    vocab_bpe_hash: str | None = None,
    encoder_json_hash: str | None = None,
    clobber_one_byte_tokens: bool = False,
) -> dict[bytes, int]:
    """Converts GPT-2's `vocab.bpe` (merges) + `encoder.json` into `{token bytes: rank}`.

    Ranks: the 256 single bytes first (printable ones, then the rest, as GPT-2 orders them),
    then one token per merge line in order. `encoder.json` must agree (its two special tokens
    aside); with `clobber_one_byte_tokens`, its single-byte ids are taken instead. Raises
    `ValueError` naming the file (and line) on a malformed line, bad JSON or a disagreement;
    tiktoken raises `AssertionError` for the last.

    >>> import json, os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> table = _data_gym_byte_table()
    >>> enc = {c: i for i, c in enumerate(table)}
    >>> enc["ab"] = 256
    >>> with open(os.path.join(d, "encoder.json"), "w") as f:
    ...     json.dump(enc, f)
    >>> with open(os.path.join(d, "vocab.bpe"), "w") as f:
    ...     _ = f.write("#version: 0.2\\na b\\n")
    >>> ranks = data_gym_to_mergeable_bpe_ranks(
    ...     os.path.join(d, "vocab.bpe"), os.path.join(d, "encoder.json"))
    >>> ranks[b"ab"], ranks[b"!"], len(ranks)
    (256, 0, 257)
    """
    table = _data_gym_byte_table()
    # One translation turns the stand-ins into the Latin-1 characters of the bytes they stand
    # for, and every other character below U+0100 into one Latin-1 cannot encode, so that a
    # character standing for no byte fails the encoding, never passes for a byte.
    to_latin1 = {b: 0xFFFF for b in range(256)}
    to_latin1.update((ord(c), b) for c, b in table.items())

    def decode(s: str, where: str) -> bytes:
        try:
            return s.translate(to_latin1).encode("latin-1")
        except UnicodeEncodeError:
            pass
        try:  # the same check character by character, to name the one that is not a byte's
            return bytes(table[c] for c in s)
        except KeyError as e:
            raise ValueError(f"{where}: {e.args[0]!r} is not a data-gym byte character") from e

    ranks = {bytes([b]): i for i, b in enumerate(table.values())}

    vocab_bytes, vocab_source, _ = _fetch(vocab_bpe_file, vocab_bpe_hash)
    try:
        merges_text = vocab_bytes.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{vocab_source}: not UTF-8 ({e})") from e
    # As in tiktoken: the first line is a version header, and the file ends with a newline.
    lines = merges_text.split("\n")[1:-1]
    merged = _merged_tokens(lines, to_latin1)
    if merged is not None:
        ranks.update(zip(merged, range(len(ranks), len(ranks) + len(merged))))
        lines = []  # all read
    for lineno, line in enumerate(lines, start=2):
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(
                f"{vocab_source}, line {lineno}: expected two tokens (a merge), got {line!r}"
            )
        where = f"{vocab_source}, line {lineno}"
        ranks[decode(parts[0], where) + decode(parts[1], where)] = len(ranks)

    import json

    json_bytes, json_source, _ = _fetch(encoder_json_file, encoder_json_hash)
    try:
        encoder: Any = json.loads(json_bytes)
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(f"{json_source}: not valid JSON ({e})") from e
    if not isinstance(encoder, dict):
        raise ValueError(f"{json_source}: expected a JSON object of token -> id")
    from_json = {decode(k, json_source): v for k, v in encoder.items()}
    # Not mergeable tokens: the caller adds them as special tokens.
    from_json.pop(b"<|endoftext|>", None)
    from_json.pop(b"<|startoftext|>", None)

    if clobber_one_byte_tokens:
        for token, rank in from_json.items():
            if len(token) == 1:
                ranks[token] = rank

    if from_json != ranks:
        differing = sorted(
            (t for t in ranks.keys() | from_json.keys() if ranks.get(t) != from_json.get(t)),
            key=lambda t: (ranks.get(t, len(ranks)), t),
        )
        t = differing[0]
        raise ValueError(
            f"{vocab_source} and {json_source} disagree on {len(differing)} token(s), e.g. "
            f"{t!r}: rank {ranks.get(t)} from the merges, {from_json.get(t)} in the JSON"
        )
    return ranks
