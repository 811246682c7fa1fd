"""Issue 56, the command line: no user mistake or condition of the environment gives a
traceback (a closed or full standard output, a reader that goes away, Ctrl-C), malformed
input cannot make it read without end or echo megabytes back, and what the arguments mean
is unambiguous (`-f` once, TEXT is text, `-o` into a missing directory is an error).

Every case runs `python -m ferrotok` as a real process, as a user's shell would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

FERROTOK = [sys.executable, "-m", "ferrotok"]
# A run that takes longer than this is a hang (generous: the machine may be busy).
HANG_S = 120


class Done:
    def __init__(self, status: int, out: bytes, err: bytes, peak_rss_mb: float) -> None:
        self.status, self.out, self.err, self.peak_rss_mb = status, out, err, peak_rss_mb

    @property
    def message(self) -> str:
        return self.err.decode("utf-8", "replace")


def _limit_memory() -> None:
    # In the child before exec: an address-space cap, so a reader that grows without bound
    # fails (MemoryError, not the one-line error) instead of exhausting the machine. (ru_maxrss
    # cannot show the child's own peak: it starts from the forking parent's RSS, and pytest's
    # is gigabytes once torch and the HF models are loaded.)
    import resource

    cap = 3 << 30
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run(*argv: str, stdin: object = subprocess.DEVNULL, shell_redirect: str = "") -> Done:
    """`python -m ferrotok ARGV...`; with `shell_redirect`, through bash with that redirection
    of its output (`>&-`, `> /dev/full`). Reports the process's peak RSS too."""
    if shell_redirect:
        command = ["bash", "-c", f'"$@" {shell_redirect}', "bash", *FERROTOK, *argv]
        stdout = None
    else:
        command = [*FERROTOK, *argv]
        stdout = subprocess.PIPE
    proc = subprocess.Popen(
        command, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, preexec_fn=_limit_memory
    )
    timer = threading.Timer(HANG_S, proc.kill)
    timer.start()
    got: dict[str, bytes] = {}
    readers = [
        threading.Thread(target=lambda name=name, pipe=pipe: got.__setitem__(name, pipe.read()))
        for name, pipe in (("out", proc.stdout), ("err", proc.stderr))
        if pipe is not None
    ]
    for reader in readers:
        reader.start()
    try:
        # wait4, not wait: the process's own peak RSS (ru_maxrss, KiB on Linux).
        _, raw_status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(raw_status)
    for reader in readers:
        reader.join()
    assert proc.returncode != -signal.SIGKILL, "killed: it hung"
    return Done(proc.returncode, got.get("out", b""), got.get("err", b""), usage.ru_maxrss / 1024)


def assert_one_line_error(done: Done, *fragments: str, status: int = 2) -> None:
    assert done.status == status, done.message
    assert "Traceback" not in done.message, done.message
    assert done.message.startswith(("ferrotok: error: ", "usage: ")), done.message
    assert len(done.err) < 600, f"{len(done.err)} bytes on stderr"
    for fragment in fragments:
        assert fragment in done.message, done.message


# ---------------------------------------------------------------- row 7: huge ids

BIG = "1" * 5000


def test_a_5000_digit_id_as_an_argument() -> None:
    done = run("decode", BIG)
    assert_one_line_error(done, "not a token id")
    assert done.out == b""


@pytest.mark.parametrize("text", [BIG, f"[{BIG}]", f"1 2 {BIG} 3", f"[1, {BIG}]", f"[1, {BIG}"])
def test_a_5000_digit_id_on_stdin_and_in_a_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "ids.txt"
    path.write_text(text + "\n")
    with open(path, "rb") as f:
        assert_one_line_error(run("decode", stdin=f))
    assert_one_line_error(run("decode", "-f", str(path)))


def test_a_json_id_past_any_token_is_named_short(tmp_path: Path) -> None:
    path = tmp_path / "ids.json"
    path.write_text(f"[1, {'9' * 4000}]")
    done = run("decode", "-f", str(path))
    assert_one_line_error(done)
    assert "9" * 100 not in done.message


# ---------------------------------------------------------------- row 8: bounded memory


def test_megabytes_of_nuls_give_a_short_error(tmp_path: Path) -> None:
    path = tmp_path / "zeros"
    path.write_bytes(b"\0" * 10_000_000)
    for stdin_or_file in ("stdin", "file"):
        if stdin_or_file == "stdin":
            with open(path, "rb") as f:
                done = run("decode", stdin=f)
        else:
            done = run("decode", "-f", str(path))
        assert_one_line_error(done, "not a token id")


@pytest.mark.parametrize("source", ["/dev/zero", "/dev/urandom"])
def test_endless_garbage_on_stdin_stops(source: str) -> None:
    if not os.path.exists(source):
        pytest.skip(f"no {source} here")
    with open(source, "rb") as f:
        done = run("decode", stdin=f)
    # It stopped reading at the first block, within the address-space cap of `run` (before, it
    # grew until killed): the one-line error, not a MemoryError.
    assert_one_line_error(done)


def test_a_long_run_without_separators_stops_the_read(tmp_path: Path) -> None:
    # Bytes that could be ids (digits), but one of 30 MB: no id is that long.
    path = tmp_path / "digits"
    path.write_bytes(b"7" * 30_000_000)
    with open(path, "rb") as f:
        done = run("decode", stdin=f)
    assert_one_line_error(done, "not a token id")
    assert "7" * 100 not in done.message


def test_valid_ids_still_decode_from_stdin_and_files(tmp_path: Path) -> None:
    ids = " ".join(["15339", "1917"] * 50_000) + "\n"
    path = tmp_path / "ids.txt"
    path.write_text(ids)
    with open(path, "rb") as f:
        done = run("decode", stdin=f)
    assert (done.status, done.out) == (0, b"hello world" * 50_000), done.message
    json_path = tmp_path / "ids.json"
    json_path.write_text("\ufeff[" + ids.strip().replace(" ", ", ") + "]\n")
    done = run("decode", "-f", str(json_path))
    assert (done.status, done.out) == (0, b"hello world" * 50_000), done.message
    # Ids separated by a space that is not ASCII (text as str splits it) still decode.
    odd = tmp_path / "odd.txt"
    odd.write_text("15339\u30001917\u00a015339", encoding="utf-8")
    done = run("decode", "-f", str(odd))
    assert (done.status, done.out) == (0, b"hello worldhello"), done.message


# ---------------------------------------------------------------- row 9: stdout and signals


@pytest.mark.parametrize(
    "argv",
    [["encode", "hello"], ["count", os.devnull], ["encodings"], ["--help"], ["encode", "--help"]],
)
def test_a_closed_stdout_is_a_message(argv: list[str]) -> None:
    done = run(*argv, shell_redirect=">&-")
    assert_one_line_error(done, "standard output is closed")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize(
    "argv",
    [["--help"], ["--version"], ["decode", "--help"], ["encodings"], ["show", "hello"]],
)
def test_a_full_stdout_is_a_message(argv: list[str]) -> None:
    done = run(*argv, shell_redirect="> /dev/full")
    assert_one_line_error(done, "No space left on device")


@pytest.mark.parametrize("command", ["encode", "show", "decode"])
def test_a_reader_that_goes_away_ends_it_quietly_with_141(tmp_path: Path, command: str) -> None:
    # 1.2 MB of input, far more output than a pipe holds: the writer is blocked when the
    # reader closes its end.
    path = tmp_path / "numbers.txt"
    path.write_text("".join(f"{i}\n" for i in range(200_000)))
    if command == "decode":
        encode = [*FERROTOK, "encode", "-f", str(path)]
        ids = subprocess.run(encode, capture_output=True, check=True)
        path.write_bytes(ids.stdout)
    argv = [command, "-f", str(path)] + (["--no-color"] if command == "show" else [])
    proc = subprocess.Popen([*FERROTOK, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert len(proc.stdout.read(10)) == 10
    proc.stdout.close()  # like `| head -c 10`
    err = proc.stderr.read()
    assert proc.wait(timeout=HANG_S) == 141, err
    assert err == b""


def _wait_until_blocked(pid: int) -> None:
    """Returns once the process `pid` sleeps without using the CPU for a while (on Linux, read
    from /proc); elsewhere after a few seconds."""
    import time

    stat_path = f"/proc/{pid}/stat"
    if not os.path.exists(stat_path):
        time.sleep(5)
        return
    last, still_since = None, time.monotonic()
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline:
        with open(stat_path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        state, cpu = fields[0], int(fields[11]) + int(fields[12])  # utime + stime
        if state != "S" or cpu != last:
            last, still_since = cpu, time.monotonic()
        elif time.monotonic() - still_since > 0.5:
            return
        time.sleep(0.05)


def test_ctrl_c_while_reading_stdin_exits_130_without_a_traceback() -> None:
    proc = subprocess.Popen(
        [*FERROTOK, "decode"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(b"15339 ")
    proc.stdin.flush()
    _wait_until_blocked(proc.pid)  # reading stdin, its imports and set-up done
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and len(err) < 200, err


# ---------------------------------------------------------------- what the arguments mean


@pytest.mark.parametrize("command", ["encode", "show"])
def test_file_given_twice_is_refused(tmp_path: Path, command: str) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("first")
    b.write_text("second")
    done = run(command, "-f", str(a), "-f", str(b))
    assert_one_line_error(done, "--file")
    assert done.out == b""


def test_text_that_names_a_file_is_text_and_the_note_says_how_to_read_it(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("something else entirely")
    done = run("encode", str(path))
    ids = subprocess.run(
        [*FERROTOK, "encode", "-f", "-"], input=str(path).encode(), capture_output=True, check=True
    ).stdout
    assert (done.status, done.out) == (0, ids)  # the text itself, as documented
    assert f"-f {path}" in done.message and "Traceback" not in done.message
    # Text that names no file gets no note.
    done = run("encode", "hello world")
    assert (done.status, done.err) == (0, b"")


@pytest.mark.parametrize("command", ["encode", "show", "count", "decode"])
def test_help_says_what_the_arguments_are(command: str) -> None:
    done = run(command, "--help")
    assert done.status == 0
    help_text = " ".join(done.out.decode().split())
    if command == "count":
        assert "FILE arguments are files" in help_text
    elif command == "decode":
        assert "-f PATH" in help_text
    else:
        assert "TEXT is the text itself, never a file name" in help_text
        assert "-f PATH" in help_text


def test_output_into_a_missing_directory_is_an_error(tmp_path: Path) -> None:
    done = run("encode", "hello", "-o", str(tmp_path / "no" / "y.txt"))
    assert_one_line_error(done, str(tmp_path / "no"))
    assert list(tmp_path.iterdir()) == []
    done = run("encode", "hello", "-o", str(tmp_path / "y.txt") + "/")
    assert_one_line_error(done, "directory")
    assert list(tmp_path.iterdir()) == []


def test_train_errors_are_one_line_without_errno(tmp_path: Path) -> None:
    text = tmp_path / "c.txt"
    text.write_text("hello world " * 10)
    for argv, fragment in [
        ([str(tmp_path), "--vocab-size", "300"], "is a directory"),
        ([str(text), "--vocab-size", "300", "--threads", "-3"], "--threads"),
    ]:
        done = run("train", *argv, "-o", str(tmp_path / "v.tiktoken"))
        assert done.status == 2 and "Traceback" not in done.message, done.message
        assert fragment in done.message and "[Errno" not in done.message, done.message
    # Refused before any training (the path was only tried when saving, at the end).
    done = run("train", str(text), "--vocab-size", "300", "-o", str(tmp_path / "v.tiktoken") + "/")
    assert done.status == 2 and "ends in a separator" in done.message, done.message
    assert "pieces:" not in done.out.decode()


# ---------------------------------------------------------------- more ways to a traceback


@pytest.mark.skipif(sys.platform != "linux", reason="file names of any bytes: Linux")
def test_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    name = os.fsdecode(b"\xff.txt")  # what argv gives Python for these bytes
    (tmp_path / name).write_text("hello there")
    # count writes the name as its own bytes, as wc does.
    done = run("count", str(tmp_path / name))
    assert done.status == 0, done.message
    assert done.out == b"2 " + os.fsencode(str(tmp_path / name)) + b"\n"
    # train saves under such a name and says where.
    out = str(tmp_path / os.fsdecode(b"v\xfe.tiktoken"))
    done = run("train", str(tmp_path / name), "--vocab-size", "258", "--no-progress", "-o", out)
    assert done.status == 0 and "Traceback" not in done.message, done.message
    assert os.fsencode(out) in done.out
    assert os.path.exists(out) and os.path.exists(out + ".json")


@pytest.mark.parametrize(
    "header",
    [
        "[" * 100_000 + "]" * 100_000,
        "{'descr': '<u4', 'fortran_order': False, 'shape': (" + "9" * 4000 + ",), }",
    ],
    ids=["deep", "huge-shape"],
)
def test_a_hostile_npy_header_is_a_short_error(tmp_path: Path, header: str) -> None:
    raw = header.encode()
    path = tmp_path / "ids.npy"
    path.write_bytes(b"\x93NUMPY\x02\x00" + len(raw).to_bytes(4, "little") + raw)
    done = run("decode", "-f", str(path))
    assert_one_line_error(done, "not a 1-D integer .npy array")
    assert "9" * 200 not in done.message


def test_decode_of_an_unreadable_or_endless_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ferrotok import cli

    if os.path.exists("/dev/zero"):  # a device that never ends, named with -f
        assert_one_line_error(run("decode", "-f", "/dev/zero"), "not a token id")
    path = tmp_path / "secret.ids"
    path.write_text("15339")

    def denied(file: str, mode: str = "r") -> object:
        raise PermissionError(13, "Permission denied", file)

    # chmod 0 would not stop root, so the permission error is simulated (in process).
    monkeypatch.setattr(cli.decode, "open", denied, raising=False)
    assert cli.main(["decode", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"ferrotok: error: {path}: cannot read (Permission denied)\n"
