"""`ferrotok.load`: where files come from (and in which order), checks, atomic writes, the
format, and agreement with tiktoken's loader. Downloads go to a local HTTP server only."""

from __future__ import annotations

import hashlib
import http.server
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import ferrotok
import pytest
import tiktoken.load
from ferrotok import load
from ferrotok.load import DownloadError
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import ENCODINGS_DIR

OFFICIAL_R50K = "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken"
R50K_SHA256 = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"

# The tiktoken-layout cache conftest filled (sha1(url) names), before any test changes it.
TIKTOKEN_TEST_CACHE = os.environ["TIKTOKEN_CACHE_DIR"]

SMALL = b"YQ== 0\nYg== 1\nYWI= 2\n"
SMALL_RANKS = {b"a": 0, b"b": 1, b"ab": 2}
SMALL_SHA256 = hashlib.sha256(SMALL).hexdigest()


def sha1_name(url: str) -> str:
    return hashlib.sha1(url.encode()).hexdigest()


# ====================
# Fixtures: an isolated environment and a local server
# ====================


class Dirs:
    def __init__(self, root: Path) -> None:
        self.data = root / "data"
        self.cache = root / "cache"
        self.data.mkdir()
        self.cache.mkdir()


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Dirs:
    """An empty FERROTOK_DATA_DIR and an empty TIKTOKEN_CACHE_DIR, and no proxies."""
    d = Dirs(tmp_path)
    monkeypatch.setenv("FERROTOK_DATA_DIR", str(d.data))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(d.cache))
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    monkeypatch.delenv("FERROTOK_OFFLINE", raising=False)
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    return d


@pytest.fixture
def downloads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every download; calls still go through (to the local server, in tests)."""
    calls: list[str] = []
    real = load._download

    def recording(url: str) -> bytes:
        calls.append(url)
        return real(url)

    monkeypatch.setattr(load, "_download", recording)
    return calls


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any download attempt fails the test."""

    def forbidden(url: str) -> bytes:
        raise AssertionError(f"the network was used for {url}")

    monkeypatch.setattr(load, "_download", forbidden)


class Server:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.truncate: set[str] = set()  # paths whose body is cut short of Content-Length
        self.requests: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                server.requests.append(self.path)
                body = server.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.path in server.truncate:
                    self.wfile.write(body[: len(body) // 2])
                    self.close_connection = True
                else:
                    self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return self.base + path


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


# ====================
# Where files come from, and in which order
# ====================


def test_data_dir_is_first_and_no_network_is_used(dirs: Dirs, no_network: None) -> None:
    url = "https://example.invalid/encodings/small.tiktoken"
    (dirs.data / "small.tiktoken").write_bytes(SMALL)
    # A different (valid, unverified) cache entry must lose to FERROTOK_DATA_DIR.
    (dirs.cache / sha1_name(url)).write_bytes(b"eg== 0\n")
    assert load.load_tiktoken_bpe(url) == SMALL_RANKS
    assert load.load_tiktoken_bpe(url, expected_hash=SMALL_SHA256) == SMALL_RANKS
    assert load.read_file_cached(url) == SMALL


def test_cache_is_second_and_no_network_is_used(
    dirs: Dirs, no_network: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "https://example.invalid/encodings/small.tiktoken"
    (dirs.cache / sha1_name(url)).write_bytes(SMALL)
    assert load.load_tiktoken_bpe(url, expected_hash=SMALL_SHA256) == SMALL_RANKS
    # Without FERROTOK_DATA_DIR at all, the cache still serves it.
    monkeypatch.delenv("FERROTOK_DATA_DIR")
    assert load.load_tiktoken_bpe(url) == SMALL_RANKS


def test_download_is_last_then_cached(dirs: Dirs, server: Server, downloads: list[str]) -> None:
    server.files["/enc/small.tiktoken"] = SMALL
    url = server.url("/enc/small.tiktoken")
    assert load.load_tiktoken_bpe(url, expected_hash=SMALL_SHA256) == SMALL_RANKS
    assert downloads == [url] and server.requests == ["/enc/small.tiktoken"]
    # Written under tiktoken's name, complete, with no temporary files left beside it.
    assert sorted(p.name for p in dirs.cache.iterdir()) == [sha1_name(url)]
    assert (dirs.cache / sha1_name(url)).read_bytes() == SMALL
    # The second load is served by the cache.
    assert load.load_tiktoken_bpe(url, expected_hash=SMALL_SHA256) == SMALL_RANKS
    assert len(server.requests) == 1


def test_cache_file_is_readable_by_others(dirs: Dirs, server: Server) -> None:
    server.files["/small.tiktoken"] = SMALL
    load.read_file_cached(server.url("/small.tiktoken"))
    umask = os.umask(0)
    os.umask(umask)
    mode = (dirs.cache / sha1_name(server.url("/small.tiktoken"))).stat().st_mode & 0o777
    assert mode == 0o666 & ~umask  # not mkstemp's 0o600


def test_reuses_a_tiktoken_cache(
    dirs: Dirs, no_network: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache in tiktoken's layout (conftest made one) serves ferrotok as it is."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", TIKTOKEN_TEST_CACHE)
    ours = load.load_tiktoken_bpe(OFFICIAL_R50K, expected_hash=R50K_SHA256)
    assert ours == tiktoken.load.load_tiktoken_bpe(OFFICIAL_R50K, expected_hash=R50K_SHA256)
    assert len(ours) == 50256


def test_official_files_from_the_data_dir(
    dirs: Dirs, no_network: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FERROTOK_DATA_DIR", str(ENCODINGS_DIR))
    ranks = load.load_tiktoken_bpe(OFFICIAL_R50K, expected_hash=R50K_SHA256)
    # get_encoding, from a fresh registry, goes through the same loader.
    monkeypatch.setattr(ferrotok.registry, "ENCODINGS", {})
    enc = ferrotok.get_encoding("r50k_base")
    assert list(dirs.cache.iterdir()) == []  # a local file is not copied into the cache
    assert enc.encode("hello world") == [31373, 995]
    assert ranks == tiktoken.load.load_tiktoken_bpe(str(ENCODINGS_DIR / "r50k_base.tiktoken"))
    assert enc._mergeable_ranks == ranks


def test_cache_dir_variables(
    tmp_path: Path, dirs: Dirs, monkeypatch: pytest.MonkeyPatch, no_network: None
) -> None:
    url = "https://example.invalid/small.tiktoken"
    gym = tmp_path / "gym"
    gym.mkdir()
    (gym / sha1_name(url)).write_bytes(SMALL)
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(gym))
    assert load.read_file_cached(url) == SMALL  # DATA_GYM_CACHE_DIR when no TIKTOKEN_CACHE_DIR
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(dirs.cache))
    with pytest.raises(AssertionError, match="network"):
        load.read_file_cached(url)  # TIKTOKEN_CACHE_DIR wins, and it is empty
    # Neither set: tiktoken's default, <tmp>/data-gym-cache.
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    monkeypatch.delenv("DATA_GYM_CACHE_DIR")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (tmp_path / "data-gym-cache").mkdir()
    (tmp_path / "data-gym-cache" / sha1_name(url)).write_bytes(SMALL)
    assert load.read_file_cached(url) == SMALL


def test_empty_cache_dir_disables_the_cache(
    dirs: Dirs, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    server.files["/small.tiktoken"] = SMALL
    for _ in range(2):
        assert load.read_file_cached(server.url("/small.tiktoken"), SMALL_SHA256) == SMALL
    assert len(server.requests) == 2
    assert list(dirs.cache.iterdir()) == []


def test_local_path_is_read_directly(tmp_path: Path, dirs: Dirs, no_network: None) -> None:
    path = tmp_path / "mine.tiktoken"
    path.write_bytes(SMALL)
    assert load.load_tiktoken_bpe(str(path), expected_hash=SMALL_SHA256) == SMALL_RANKS
    assert load.read_file(str(path)) == SMALL
    assert list(dirs.cache.iterdir()) == []
    with pytest.raises(ValueError, match=rf"{path}: sha256 is {SMALL_SHA256}, expected 0+"):
        load.load_tiktoken_bpe(str(path), expected_hash="0" * 64)


# ====================
# Checks: hashes, corrupt and truncated files
# ====================


@pytest.mark.parametrize("data", [b"", b"x", b"YQ== 0\n"])
def test_check_hash_is_tiktokens(data: bytes) -> None:
    digest = hashlib.sha256(data).hexdigest()
    for expected in [digest, digest.upper(), "", hashlib.sha256(data + b"!").hexdigest()]:
        assert load.check_hash(data, expected) == tiktoken.load.check_hash(data, expected)
    assert load.check_hash(data, digest)


def test_hash_mismatch_in_data_dir_names_the_file(
    dirs: Dirs, server: Server, downloads: list[str]
) -> None:
    server.files["/small.tiktoken"] = SMALL  # a good copy exists, but must not be fetched
    bad = dirs.data / "small.tiktoken"
    bad.write_bytes(SMALL[:-3])  # truncated
    with pytest.raises(ValueError) as info:
        load.load_tiktoken_bpe(server.url("/small.tiktoken"), expected_hash=SMALL_SHA256)
    message = str(info.value)
    assert str(bad) in message and SMALL_SHA256 in message and "FERROTOK_DATA_DIR" in message
    assert downloads == [] and server.requests == []


def test_official_hash_mismatch_in_data_dir(
    dirs: Dirs, no_network: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = dirs.data / "r50k_base.tiktoken"
    bad.write_bytes(
        (ENCODINGS_DIR / "r50k_base.tiktoken").read_bytes().replace(b" 0\n", b" 9\n", 1)
    )
    pattern = rf"^{bad}: sha256 is [0-9a-f]{{64}}, expected {R50K_SHA256}"
    with pytest.raises(ValueError, match=pattern):
        load.load_tiktoken_bpe(OFFICIAL_R50K, expected_hash=R50K_SHA256)
    monkeypatch.setattr(ferrotok.registry, "ENCODINGS", {})
    with pytest.raises(ValueError, match=pattern):
        ferrotok.get_encoding("r50k_base")


@pytest.mark.parametrize(
    "corrupt", [SMALL[:-4], SMALL.replace(b"Yg==", b"Yw=="), b"", b"<html>error</html>"]
)
def test_corrupt_cache_entry_is_replaced_by_a_download(
    dirs: Dirs, server: Server, corrupt: bytes
) -> None:
    server.files["/small.tiktoken"] = SMALL
    url = server.url("/small.tiktoken")
    entry = dirs.cache / sha1_name(url)
    entry.write_bytes(corrupt)
    assert load.load_tiktoken_bpe(url, expected_hash=SMALL_SHA256) == SMALL_RANKS
    assert server.requests == ["/small.tiktoken"]
    assert entry.read_bytes() == SMALL


def test_unverifiable_cache_entry_that_does_not_parse_is_replaced(
    dirs: Dirs, server: Server
) -> None:
    """Without a hash, a truncated entry (cut mid-line) is caught by the parser."""
    server.files["/small.tiktoken"] = SMALL
    url = server.url("/small.tiktoken")
    entry = dirs.cache / sha1_name(url)
    entry.write_bytes(SMALL[:-2])  # "YWI= " : the last rank is missing
    assert load.load_tiktoken_bpe(url) == SMALL_RANKS
    assert server.requests == ["/small.tiktoken"]
    assert entry.read_bytes() == SMALL


def test_corrupt_cache_entry_is_never_used_even_offline(dirs: Dirs, server: Server) -> None:
    url = server.url("/gone.tiktoken")  # the server answers 404
    entry = dirs.cache / sha1_name(url)
    entry.write_bytes(SMALL[:-4])
    with pytest.raises(DownloadError):
        load.load_tiktoken_bpe(url, expected_hash=SMALL_SHA256)
    assert not entry.exists()


def test_downloaded_hash_mismatch_is_not_cached(dirs: Dirs, server: Server) -> None:
    server.files["/small.tiktoken"] = SMALL + b"Yw== 3\n"
    url = server.url("/small.tiktoken")
    with pytest.raises(ValueError, match=rf"downloaded from {url}.*expected {SMALL_SHA256}"):
        load.load_tiktoken_bpe(url, expected_hash=SMALL_SHA256)
    assert list(dirs.cache.iterdir()) == []


def test_truncated_download_is_an_error_and_not_cached(dirs: Dirs, server: Server) -> None:
    server.files["/small.tiktoken"] = SMALL
    server.truncate.add("/small.tiktoken")
    with pytest.raises(DownloadError, match="small.tiktoken"):
        load.load_tiktoken_bpe(server.url("/small.tiktoken"))  # no hash to catch it
    assert list(dirs.cache.iterdir()) == []


# ====================
# Failed downloads say how to work offline
# ====================


def _closed_port_url() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/encodings/cl100k_base.tiktoken"


@pytest.mark.parametrize("where", ["404", "refused"])
def test_failed_download_says_how_to_work_offline(dirs: Dirs, server: Server, where: str) -> None:
    url = server.url("/encodings/cl100k_base.tiktoken") if where == "404" else _closed_port_url()
    with pytest.raises(DownloadError) as info:
        load.load_tiktoken_bpe(url, expected_hash=SMALL_SHA256)
    message = str(info.value)
    assert f"could not download {url}" in message
    assert "export FERROTOK_DATA_DIR=" in message and "cl100k_base.tiktoken" in message
    assert str(dirs.data / "cl100k_base.tiktoken") in message  # what was looked for
    assert str(dirs.cache / sha1_name(url)) in message
    assert isinstance(info.value, OSError)
    assert list(dirs.cache.iterdir()) == []


def test_offline_switch_never_downloads(
    dirs: Dirs, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FERROTOK_OFFLINE", "1")
    server.files["/small.tiktoken"] = SMALL
    with pytest.raises(DownloadError, match="FERROTOK_OFFLINE"):
        load.load_tiktoken_bpe(server.url("/small.tiktoken"))
    assert server.requests == []
    (dirs.data / "small.tiktoken").write_bytes(SMALL)  # local files still work
    assert load.load_tiktoken_bpe(server.url("/small.tiktoken")) == SMALL_RANKS


def test_read_file_downloads_without_the_cache(dirs: Dirs, server: Server) -> None:
    server.files["/small.tiktoken"] = SMALL
    assert load.read_file(server.url("/small.tiktoken")) == SMALL
    assert list(dirs.cache.iterdir()) == []


# ====================
# Atomic writes
# ====================


def test_failed_atomic_write_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.tiktoken"

    def fail(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="No space"):
        load.dump_tiktoken_bpe(SMALL_RANKS, str(target))
    assert list(tmp_path.iterdir()) == []


def test_failed_atomic_write_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.tiktoken"
    target.write_bytes(SMALL)

    def fail(src: str, dst: str) -> None:
        raise OSError(5, "I/O error")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="I/O error"):
        load.dump_tiktoken_bpe({b"x": 0}, str(target))
    assert target.read_bytes() == SMALL
    assert [p.name for p in tmp_path.iterdir()] == ["out.tiktoken"]


def test_interrupted_cache_write_leaves_no_cache_entry(
    dirs: Dirs, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.files["/small.tiktoken"] = SMALL
    url = server.url("/small.tiktoken")

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)  # after the data was written, before rename
    with pytest.raises(KeyboardInterrupt):
        load.read_file_cached(url)
    assert list(dirs.cache.iterdir()) == []


def test_unwritable_cache_still_returns_the_data(
    dirs: Dirs, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.files["/small.tiktoken"] = SMALL

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.warns(UserWarning, match="could not cache .* No space left"):
        assert load.read_file_cached(server.url("/small.tiktoken"), SMALL_SHA256) == SMALL
    assert list(dirs.cache.iterdir()) == []


# ====================
# The .tiktoken format
# ====================


@pytest.mark.parametrize(
    ("contents", "line", "why"),
    [
        (b"YQ== 0\nYg==\nYWI= 2\n", 2, "1 field"),
        (b"YQ== 0\nYg== 1 x\n", 2, "3 fields"),
        (b"YQ== 0\nYg== 1\nY*I= 2\n", 3, "not valid base64"),
        (b"YQ== 0\nYg= 1\n", 2, "not valid base64"),  # bad padding
        (b"YQ== 0\nYQ==Yg== 1\n", 2, "not valid base64"),  # padding inside
        (b"YQ== 0\nYWJ== 1\n", 2, "not valid base64"),  # excess padding
        (b"YQ== 0\n== 1\n", 2, "not valid base64"),  # an empty token
        (b"YQ== 0\nYg== one\n", 2, "not a non-negative integer"),
        (b"YQ== 0\nYg== -1\n", 2, "not a non-negative integer"),
        (b"YQ== 0\nYg== +1\n", 2, "not a non-negative integer"),
        (b"YQ== 0\nYg== 1\nYQ== 2\n", 3, "repeats line 1"),
        (b"YQ== 0\r\n\r\nYg\xff 1\r\n", 3, "not valid base64"),
    ],
)
def test_malformed_line_names_file_and_line(
    tmp_path: Path, contents: bytes, line: int, why: str
) -> None:
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(contents)
    with pytest.raises(ValueError, match=rf"^{path}, line {line}: .*{why}"):
        load.load_tiktoken_bpe(str(path))


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.tiktoken"
    path.write_bytes(b"\n")
    with pytest.raises(ValueError, match=rf"{path}: no tokens"):
        load.load_tiktoken_bpe(str(path))


def test_lenient_layouts_match_tiktoken(tmp_path: Path) -> None:
    """Blank lines, CRLF, a missing final newline and tabs are read as tiktoken reads them."""
    for contents in [b"YQ== 0\r\nYg== 1\r\n", b"\nYQ== 0\n\nYg== 1", b"YQ==\t0\nYg==  1\n"]:
        path = tmp_path / "x.tiktoken"
        path.write_bytes(contents)
        ours = load.load_tiktoken_bpe(str(path))
        assert ours == tiktoken.load.load_tiktoken_bpe(str(path)) == {b"a": 0, b"b": 1}


def test_error_names_the_file_that_was_read(dirs: Dirs, no_network: None) -> None:
    url = "https://example.invalid/x.tiktoken"
    (dirs.data / "x.tiktoken").write_bytes(b"YQ== 0\nnope\n")
    with pytest.raises(ValueError, match=rf"^{dirs.data / 'x.tiktoken'}, line 2: "):
        load.load_tiktoken_bpe(url)


@pytest.mark.parametrize("name", ["r50k_base", "p50k_base", "cl100k_base", "o200k_base"])
def test_official_files_take_the_fast_path_exactly(tmp_path: Path, name: str) -> None:
    official = ENCODINGS_DIR / f"{name}.tiktoken"
    contents = official.read_bytes()
    fast = load._parse_fast(contents)
    assert fast is not None  # the official files never need the slow path
    # Writing the ranks back gives the file byte for byte, so nothing was lost or changed.
    load.dump_tiktoken_bpe(fast, str(tmp_path / "again.tiktoken"))
    assert (tmp_path / "again.tiktoken").read_bytes() == contents
    if name == "r50k_base":  # the slower parsers, on one file
        assert fast == load._parse_slow(contents, name)
        assert fast == tiktoken.load.load_tiktoken_bpe(str(official))


@pytest.mark.parametrize(
    "contents",
    [
        # Padding inside one token (too long for its bytes) and excess padding in two others
        # (too short) cancel out in the bulk length check; the padding check catches it.
        b"YQ==YQ== 0\nYWJj== 1\nYWJk== 2\n",
        b"YQ== 0\nYg== +1\n",  # int() would accept the sign
        b"== 0\nYQ== 1\n",  # decodes to an empty token
        b"YQ== 0\nYQ== 1\n",  # a repeated token
        b"YQ== 0\nYWJ== 1\n",  # excess padding alone
    ],
)
def test_fast_path_turns_down_what_the_slow_path_rejects(contents: bytes) -> None:
    assert load._parse_fast(contents) is None
    with pytest.raises(ValueError, match="<bytes>, line"):
        load.parse_tiktoken_bpe(contents)


def _parse_or_error(parse, contents: bytes):  # noqa: ANN001, ANN202
    try:
        return parse(contents)
    except ValueError as e:
        return ("error", str(e))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.binary(min_size=1, max_size=6), min_size=1, max_size=6, unique=True),
    st.lists(
        st.tuples(
            st.integers(0, 200),
            st.sampled_from(
                [b"=", b"+", b" ", b"\n", b"==", b"A", b"-", b"\r", b"\t", b"0", b"", b"Q="]
            ),
        )
    ),
    st.sampled_from([1, 9, 1 << 15]),
)
def test_fast_and_slow_parsers_agree(
    tokens: list[bytes], edits: list[tuple[int, bytes]], chunk: int
) -> None:
    """The whole-buffer parser accepts exactly what the line parser accepts, with the same
    result; whatever it turns down gets the line parser's verdict. Small chunk sizes make
    the fast parser cut these small files into several chunks, as it cuts real ones."""
    import base64

    contents = bytearray(
        b"".join(b"%s %d\n" % (base64.b64encode(t), i) for i, t in enumerate(tokens))
    )
    for position, insert in edits:
        position %= len(contents) + 1
        if insert:
            contents[position:position] = insert
        elif position < len(contents):
            del contents[position]
    data = bytes(contents)
    saved = load._CHUNK
    load._CHUNK = chunk  # not monkeypatch: hypothesis runs many examples per test call
    try:
        fast = load._parse_fast(data)
        slow = _parse_or_error(lambda c: load._parse_slow(c, "f"), data)
        if fast is not None:
            assert fast == slow
        assert _parse_or_error(lambda c: load.parse_tiktoken_bpe(c, "f"), data) == slow
    finally:
        load._CHUNK = saved


# ====================
# dump, and agreement with tiktoken
# ====================


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=8), min_size=1, max_size=50, unique=True))
def test_dump_load_round_trip(tokens: list[bytes]) -> None:
    ranks = {t: (i * 7) % 1000 + i * 1000 for i, t in enumerate(tokens)}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.tiktoken")
        load.dump_tiktoken_bpe(ranks, path)
        assert load.load_tiktoken_bpe(path) == ranks
        assert tiktoken.load.load_tiktoken_bpe(path) == ranks


def test_dump_is_readable_by_tiktoken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken would copy local files to its cache
    ranks = {bytes([b]): b for b in range(256)} | {b"hello": 256, b" world": 257, b"\xff\x00": 258}
    path = tmp_path / "mine.tiktoken"
    ferrotok.dump_tiktoken_bpe(ranks, str(path))
    assert tiktoken.load.load_tiktoken_bpe(str(path)) == ranks
    enc = tiktoken.Encoding("mine", pat_str=r" ?\S+|\s+", mergeable_ranks=ranks, special_tokens={})
    assert enc.encode("hello world") == [256, 257]


def test_dump_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="bytes"):
        load.dump_tiktoken_bpe({"a": 0}, str(tmp_path / "x"))  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="non-negative"):
        load.dump_tiktoken_bpe({b"a": -1}, str(tmp_path / "x"))
    assert list(tmp_path.iterdir()) == []


# ====================
# GPT-2's data-gym files
# ====================


def test_data_gym_conversion_equals_tiktoken(
    dirs: Dirs, no_network: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    vocab, encoder = str(ENCODINGS_DIR / "vocab.bpe"), str(ENCODINGS_DIR / "encoder.json")
    hashes = {
        "vocab_bpe_hash": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
        "encoder_json_hash": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    }
    ours = ferrotok.data_gym_to_mergeable_bpe_ranks(vocab, encoder, **hashes)
    theirs = tiktoken.load.data_gym_to_mergeable_bpe_ranks(vocab, encoder, **hashes)
    assert ours == theirs and len(ours) == 50256
    assert list(ours.items()) == list(theirs.items())  # same order too
    # Through the official URLs, served by FERROTOK_DATA_DIR, from a fresh registry.
    monkeypatch.setenv("FERROTOK_DATA_DIR", str(ENCODINGS_DIR))
    monkeypatch.setattr(ferrotok.registry, "ENCODINGS", {})
    assert ferrotok.get_encoding("gpt2")._mergeable_ranks == theirs


def _gym_files(tmp_path: Path, merges: str, extra: dict[str, int] | None = None) -> tuple[str, str]:
    import json

    table = load._data_gym_byte_table()
    encoder = {c: i for i, c in enumerate(table)}
    encoder.update(extra or {})
    (tmp_path / "encoder.json").write_text(json.dumps(encoder))
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\n" + merges, encoding="utf-8")
    return str(tmp_path / "vocab.bpe"), str(tmp_path / "encoder.json")


def test_data_gym_errors_name_file_and_line(tmp_path: Path) -> None:
    vocab, encoder = _gym_files(tmp_path, "a b\nab\n", {"ab": 256})
    with pytest.raises(ValueError, match=rf"{vocab}, line 3: expected two tokens"):
        load.data_gym_to_mergeable_bpe_ranks(vocab, encoder)
    vocab, encoder = _gym_files(tmp_path, "a b\nab \u4e00\n", {"ab": 256})
    with pytest.raises(ValueError, match=rf"{vocab}, line 3: .* not a data-gym byte"):
        load.data_gym_to_mergeable_bpe_ranks(vocab, encoder)
    # characters below U+0100 that stand for no byte (the bytes GPT-2 moved to U+0100...)
    for c in ("\x00", "\x7f", "\x81", "\xad"):
        vocab, encoder = _gym_files(tmp_path, f"a b\nab {c}b\n", {"ab": 256})
        bad = re.escape(repr(c))
        with pytest.raises(ValueError, match=rf"{vocab}, line 3: {bad} is not a data-gym byte"):
            load.data_gym_to_mergeable_bpe_ranks(vocab, encoder)
    vocab, encoder = _gym_files(tmp_path, "a b\n", {"ab": 300})
    with pytest.raises(ValueError, match=r"disagree on 1 token.*b'ab'.*256.*300"):
        load.data_gym_to_mergeable_bpe_ranks(vocab, encoder)
    (tmp_path / "encoder.json").write_text("{not json")
    with pytest.raises(ValueError, match=rf"{encoder}: not valid JSON"):
        load.data_gym_to_mergeable_bpe_ranks(vocab, encoder)


def test_data_gym_merges_with_other_whitespace_read_as_tiktoken(tmp_path: Path) -> None:
    # Lines the all-at-once translation does not take (a tab, two spaces, a CR) are read
    # line by line, as tiktoken reads them.
    vocab, encoder = _gym_files(tmp_path, "a b\nab  c\nc\td\r\n",
                                {"ab": 256, "abc": 257, "cd": 258})
    ours = load.data_gym_to_mergeable_bpe_ranks(vocab, encoder)
    assert ours == tiktoken.load.data_gym_to_mergeable_bpe_ranks(vocab, encoder)
    assert ours[b"abc"] == 257 and ours[b"cd"] == 258


def test_data_gym_clobber_one_byte_tokens(tmp_path: Path) -> None:
    vocab, encoder = _gym_files(tmp_path, "a b\n", {"ab": 256})
    kwargs = {"clobber_one_byte_tokens": True}
    ours = load.data_gym_to_mergeable_bpe_ranks(vocab, encoder, **kwargs)
    assert ours == tiktoken.load.data_gym_to_mergeable_bpe_ranks(vocab, encoder, **kwargs)
