"""`ferrotok train` (through `python -m ferrotok train`) and `python -m ferrotok.demo`."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import ferrotok
import tiktoken.load
from ferrotok.cli import train as cli_train


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=300, env=env
    )


def test_register_adds_the_train_subcommand():
    parser = argparse.ArgumentParser(prog="ferrotok")
    sub = parser.add_subparsers(dest="command")
    cli_train.register(sub)
    args = parser.parse_args(["train", "a.txt", "b.txt", "--vocab-size", "300", "-o", "x"])
    assert args.files == ["a.txt", "b.txt"] and args.vocab_size == 300
    assert args.func is cli_train.run


def test_train_prints_a_summary_and_saves(tmp_path):
    a = tmp_path / "a.txt"
    b = tmp_path / "b.txt"
    src = os.path.dirname(ferrotok.__file__)
    a.write_text(
        "<|endoftext|>".join(
            open(os.path.join(src, f), encoding="utf-8").read() for f in ("core.py", "train.py")
        ),
        encoding="utf-8",
    )
    b.write_text(open(os.path.join(src, "load.py"), encoding="utf-8").read(), encoding="utf-8")
    out = tmp_path / "tok.tiktoken"
    r = run(
        "-m", "ferrotok", "train", str(a), str(b),
        "--vocab-size", "400", "--special", "<|endoftext|>", "-o", str(out),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("pieces: ") and "distinct" in lines[0]
    assert lines[1].startswith("merges: ") and " s (counting " in lines[1]
    assert any(line.startswith("tokens per byte on the input: 0.") for line in lines)
    enc = ferrotok.load(out)
    assert enc.name == "tok" and enc._special_tokens == {"<|endoftext|>": 399}
    assert tiktoken.load.load_tiktoken_bpe(str(out)) == enc._mergeable_ranks
    # Tokens per byte: the same as encoding each file whole.
    whole = [f.read_text(encoding="utf-8") for f in (a, b)]
    n_tokens = sum(len(enc.encode(t, allowed_special="all")) for t in whole)
    n_bytes = sum(len(t.encode()) for t in whole)
    assert f"tokens per byte on the input: {n_tokens / n_bytes:.4f} ({n_tokens:,} tokens)" in lines
    # Files train as documents, so the CLI learns what the API learns from the same paths.
    api = ferrotok.train([a, b], 400, special_tokens=["<|endoftext|>"], progress=False)
    assert api._mergeable_ranks == enc._mergeable_ranks


def test_user_errors_exit_2_with_one_line_and_no_traceback(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("some text", encoding="utf-8")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"abc\xffdef")
    out = str(tmp_path / "o.tiktoken")
    cases = [
        ([str(tmp_path / "missing.txt"), "--vocab-size", "300"], "missing.txt"),
        ([str(bad), "--vocab-size", "300"], "bad.txt is not UTF-8: invalid byte at offset 3"),
        ([str(good), "--vocab-size", "100"], "vocab_size is 100"),
        ([str(good), "--vocab-size", "300", "--pattern", "(oops"], "pattern"),
        ([str(good), "--vocab-size", "300", "--special", "<a>", "--special", "<a>"], "twice"),
        ([str(good), "--vocab-size", "300", "--pattern", "cl100k"], "not the name of a"),
        (
            [str(good), "--vocab-size", "300", "--pattern", r"\p{Foo}"],
            "Unicode property not found at",
        ),
        ([str(good), "--vocab-size", "300", "--threads", "0"], "--threads must be a positive"),
        ([str(good), "--vocab-size", "300", "--special", "\udcff"], "is not valid UTF-8 text"),
    ]
    for argv, message in cases:
        r = run("-m", "ferrotok", "train", *argv, "-o", out)
        assert r.returncode == 2, (argv, r.stderr)
        assert message in r.stderr, (argv, r.stderr)
        assert "Traceback" not in r.stderr
        assert not os.path.exists(out)
    for bad_out, message in [("", "-o is empty"), (str(tmp_path), "is a directory: give a file")]:
        argv = [str(good), "--vocab-size", "300", "-o", bad_out]
        r = run("-m", "ferrotok", "train", *argv)
        assert r.returncode == 2 and message in r.stderr, r.stderr


def test_dash_trains_on_standard_input(tmp_path):
    text = "the cat sat on the mat\n" * 50
    out = tmp_path / "tok.tiktoken"
    r = subprocess.run(
        [sys.executable, "-m", "ferrotok", "train", "-", "--vocab-size", "265",
         "--no-progress", "-o", str(out)],
        input=text, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert ferrotok.load(out)._mergeable_ranks == (
        ferrotok.train([text], 265, progress=False)._mergeable_ranks
    )
    command = 'exec "$0" -m ferrotok train - --vocab-size 265 -o "$1" <&-'
    closed = subprocess.run(
        ["sh", "-c", command, sys.executable, str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert closed.returncode == 2 and "standard input is closed" in closed.stderr


def test_demo_runs_offline_and_says_when_cl100k_is_missing(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "FERROTOK_DATA_DIR"}
    env["TIKTOKEN_CACHE_DIR"] = str(tmp_path / "empty-cache")
    r = run(
        "-m", "ferrotok.demo", "--mb", "1", "--vocab-size", "600",
        "--no-progress", "--keep", str(tmp_path),
        env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "trained: vocabulary of 600" in r.stdout
    assert "cl100k_base: not available offline" in r.stdout
    assert (tmp_path / "stdlib_demo.tiktoken.json").exists()


def test_a_corpus_short_of_pairs_gets_one_note_and_no_python_warning(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("some text", encoding="utf-8")
    out = tmp_path / "o.tiktoken"
    r = run("-m", "ferrotok", "train", str(good), "--vocab-size", "1000", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "note: the corpus ran out of pairs before vocab size 1000" in r.stdout
    assert "Warning" not in r.stderr
    assert ferrotok.load(out).n_vocab < 1000


def test_an_output_that_is_an_input_is_refused_before_anything_is_written(tmp_path):
    corpus = tmp_path / "corpus.txt"
    text = "the quick brown fox jumps over the lazy dog\n" * 200
    corpus.write_text(text, encoding="utf-8")
    link = tmp_path / "link.txt"
    link.symlink_to(corpus)
    # -o the input itself, the input through a link, and an input as the sidecar (`X.json`).
    sidecar_input = tmp_path / "out.json"
    sidecar_input.write_text(text, encoding="utf-8")
    for files, out in [([corpus], corpus), ([link], corpus), ([sidecar_input], tmp_path / "out")]:
        r = run("-m", "ferrotok", "train", *map(str, files),
                "--vocab-size", "300", "-o", str(out), "--no-progress")  # fmt: skip
        assert r.returncode == 2 and "would overwrite the input file" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    assert corpus.read_text(encoding="utf-8") == text
    assert sidecar_input.read_text(encoding="utf-8") == text


def test_a_vocab_size_no_encoding_can_hold_is_refused_before_counting(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("abc " * 100, encoding="utf-8")
    r = run("-m", "ferrotok", "train", str(corpus), "--vocab-size",
            str(10**23), "-o", str(tmp_path / "x"), "--no-progress")  # fmt: skip
    assert r.returncode == 2 and "more than an encoding can have" in r.stderr, r.stderr
    assert "pieces:" not in r.stdout and not (tmp_path / "x").exists()


def test_ctrl_c_while_measuring_keeps_the_saved_vocabulary(tmp_path, monkeypatch, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the quick brown fox jumps over the lazy dog\n" * 200, encoding="utf-8")
    out = tmp_path / "tok.tiktoken"

    def interrupted(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_train, "_tokens_per_byte", interrupted)
    parser = argparse.ArgumentParser(prog="ferrotok")
    cli_train.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["train", str(corpus), "--vocab-size", "300", "-o", str(out),
                              "--no-progress"])  # fmt: skip
    assert cli_train.run(args) == 130
    printed = capsys.readouterr()
    assert f"saved: {out}" in printed.out and "interrupted while measuring" in printed.err
    enc = ferrotok.load(out)
    assert enc.n_vocab > 256 and f"(vocabulary {enc.n_vocab:,})" in printed.out


def test_a_named_pipe_is_trained_on_and_not_read_a_second_time(tmp_path):
    # Measuring tokens per byte re-reads the inputs; a pipe's text is gone by then, so it
    # is measured on the regular files only (a re-read would wait forever).
    fifo = tmp_path / "stream"
    os.mkfifo(fifo)
    plain = tmp_path / "plain.txt"
    plain.write_text("the cat sat on the mat\n" * 50, encoding="utf-8")
    out = tmp_path / "tok.tiktoken"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ferrotok", "train", str(fifo), str(plain),
         "--vocab-size", "300", "--no-progress", "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # Open for writing without blocking (ENXIO until the child opens its end), so a
        # child that fails before reading fails the test instead of hanging it.
        deadline = time.monotonic() + 120
        while True:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
                time.sleep(0.01)
        os.set_blocking(fd, True)
        with open(fd, "w", encoding="utf-8") as w:
            w.write("hello hello hello world\n" * 100)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert "tokens per byte on the input's regular files: " in stdout
    assert f"saved: {out}" in stdout
    enc = ferrotok.load(out)
    # The pipe's text was trained on: its words are single tokens.
    assert len(enc.encode(" hello")) == 1 and len(enc.encode(" cat")) == 1


def test_a_pattern_that_drops_text_gets_a_one_line_warning(tmp_path):
    src = tmp_path / "a.txt"
    src.write_text("hello world, banana\n" * 20, encoding="utf-8")
    r = run(
        "-m", "ferrotok", "train", str(src), "--vocab-size", "260",
        "--pattern", r"\p{L}+", "--no-progress", "-o", str(tmp_path / "x.tiktoken"),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    warning = [line for line in r.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and warning[0].startswith("ferrotok train: warning: the pattern")
    assert "Traceback" not in r.stderr and "UserWarning" not in r.stderr
