"""End-to-end check of the `ferrotok` command line against issue 56's adversarial rows.

Runs each case as a real process (shell pipelines included), and prints one line per case:
exit status, wall time, peak RSS of the ferrotok process, bytes on stderr, and whether a
Python traceback appeared. Exits 1 if any case printed a traceback, took longer than its
time limit, went past its memory limit, or exited with a status other than the expected one.

    FERROTOK_DATA_DIR=/path/to/encodings python scripts/cli_adversarial.py [FERROTOK_COMMAND]

FERROTOK_COMMAND defaults to `python -m ferrotok` with the running interpreter. The peak RSS
is the largest of the case's processes (`os.wait4` on the shell, which reaps the pipeline's
children, reports their maximum); the helpers (head, python3 -c) are small.
"""

# ruff: noqa: E501  (the table of cases keeps one shell command per line)

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time

# (name, shell command with {F} for ferrotok, expected statuses, time limit s, RSS limit MB)
CASES: list[tuple[str, str, tuple[int, ...], float, int]] = [
    ("row 7: 5,000-digit id as argument", '{F} decode $(python3 -c "print(\'1\'*5000)")', (2,), 5, 300),
    ("row 7: 5,000-digit id on stdin", "python3 -c \"print('1'*5000)\" | {F} decode", (2,), 5, 300),
    ("row 7: 5,000-digit id in JSON", "python3 -c \"print('['+'1'*5000+']')\" | {F} decode", (2,), 5, 300),
    ("row 7: 5,000-digit id in a file", "python3 -c \"print('1'*5000)\" > {T}/ids.txt; {F} decode -f {T}/ids.txt", (2,), 5, 300),
    ("row 8: 10 MB of NULs on stdin", "head -c 10000000 /dev/zero | {F} decode", (2,), 5, 300),
    ("row 8: 100 MB of NULs on stdin", "head -c 100000000 /dev/zero | {F} decode", (2,), 10, 300),
    ("row 8: endless NULs on stdin", "{F} decode < /dev/zero", (2,), 10, 300),
    ("row 8: endless random bytes on stdin", "{F} decode < /dev/urandom", (2,), 10, 300),
    ("row 8: 100 MB of 'a ' on stdin", "head -c 100000000 /dev/zero | tr '\\0' 'a' | {F} decode", (2,), 20, 600),
    ("row 9: stdout closed (encode)", "{F} encode hello >&-", (2,), 5, 300),
    ("row 9: stdout closed (--help)", "{F} --help >&-", (2,), 5, 300),
    ("row 9: stdout full (--help)", "{F} --help > /dev/full", (2,), 5, 300),
    ("row 9: stdout full (encode)", "{F} encode hello > /dev/full", (2,), 5, 300),
    ("row 9: stdout full (count)", "{F} count /etc/hostname > /dev/full", (2,), 5, 300),
    ("row 9: SIGPIPE (show | head)", "seq 1 200000 > {T}/n.txt; {F} show --no-color -f {T}/n.txt | head -c 10 >/dev/null; exit ${{PIPESTATUS[0]}}", (141,), 20, 600),
    ("row 9: SIGPIPE (encode | head)", "seq 1 200000 > {T}/n.txt; {F} encode -f {T}/n.txt | head -c 10 >/dev/null; exit ${{PIPESTATUS[0]}}", (141,), 20, 600),
    ("row 9: SIGPIPE (decode | head)", "seq 1 200000 > {T}/n.txt; {F} encode -f {T}/n.txt > {T}/ids.txt; {F} decode -f {T}/ids.txt | head -c 10 >/dev/null; exit ${{PIPESTATUS[0]}}", (141,), 20, 600),
    ("-f given twice", "echo a > {T}/a.txt; echo b > {T}/b.txt; {F} encode -f {T}/a.txt -f {T}/b.txt", (2,), 5, 300),
    ("-o into a missing directory", "{F} encode hello -o /nonexistent/y.txt", (2,), 5, 300),
    ("-o ending in a separator", "{F} encode hello -o {T}/y.txt/", (2,), 5, 300),
    ("a directory as -f", "{F} encode -f {T}", (2,), 5, 300),
    ("a file without permission", "echo x > {T}/locked.txt; chmod 000 {T}/locked.txt; {F} encode -f {T}/locked.txt", (0, 2), 5, 300),
    ("an invalid UTF-8 file", "printf 'ab\\xff' > {T}/bad.txt; {F} encode -f {T}/bad.txt", (2,), 5, 300),
    ("train: bad --threads", "echo hello > {T}/c.txt; {F} train {T}/c.txt --vocab-size 300 --threads -3 -o {T}/v.tiktoken", (2,), 5, 300),
    ("train: --threads not a number", "{F} train {T}/c.txt --vocab-size 300 --threads x -o {T}/v.tiktoken", (2,), 5, 300),
    ("Ctrl-C while reading stdin", "/dev/tty (run without a shell, see main)", (130,), 10, 300),
]


def main() -> int:
    ferrotok = sys.argv[1] if len(sys.argv) > 1 else f"{shlex.quote(sys.executable)} -m ferrotok"
    bad = 0
    with tempfile.TemporaryDirectory(prefix="ferrotok-adversarial-") as tmp:
        for name, template, expected, limit_s, limit_mb in CASES:
            if "/dev/tty" in template:
                # Ctrl-C: SIGINT to the ferrotok process while it waits on a pipe that stays
                # open (bash's background jobs ignore SIGINT, so no shell in between).
                t0 = time.monotonic()
                ctrl_c = subprocess.Popen(shlex.split(ferrotok) + ["decode"], stdin=subprocess.PIPE,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                time.sleep(1.5)
                ctrl_c.send_signal(signal.SIGINT)
                _, err = ctrl_c.communicate(timeout=3 * limit_s + 5)
                elapsed = time.monotonic() - t0
                ok = ctrl_c.returncode in expected and b"Traceback" not in err and len(err) < 2000
                bad += not ok
                print(f"{'ok ' if ok else 'BAD'} {name:40} exit {ctrl_c.returncode:4} {elapsed:6.2f} s "
                      f"{'':>7}    stderr {len(err):6} B {err.decode().strip()[:90]}")
                continue
            command = template.format(F=ferrotok, T=shlex.quote(tmp))
            # Guard rails, so that a regression cannot take the machine down: 4 GB of address
            # space (a MemoryError then shows as a traceback) and a kill after 3x the limit.
            command = f"ulimit -v 4000000; {command}"
            t0 = time.monotonic()
            proc = subprocess.Popen(["bash", "-c", command], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, start_new_session=True)
            assert proc.stderr is not None
            killer = threading.Timer(3 * limit_s + 5, os.killpg, (proc.pid, signal.SIGKILL))
            killer.start()
            try:
                err = proc.stderr.read(1 << 20)  # at most 1 MB kept; the rest is drained
                while proc.stderr.read(1 << 20):
                    pass
            finally:
                _, raw, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(raw)
                killer.cancel()
            elapsed = time.monotonic() - t0
            rss_mb = usage.ru_maxrss / 1024  # KiB on Linux
            traceback = b"Traceback" in err
            ok = proc.returncode in expected and not traceback
            ok = ok and elapsed <= limit_s and rss_mb <= limit_mb and len(err) < 2000
            bad += not ok
            first = err.decode("utf-8", "replace").strip().splitlines()[:1]
            print(f"{'ok ' if ok else 'BAD'} {name:40} exit {proc.returncode:4} {elapsed:6.2f} s "
                  f"{rss_mb:7.1f} MB  stderr {len(err):6} B {'TRACEBACK ' if traceback else ''}"
                  f"{first[0][:90] if first else ''}")
    print(f"{bad} of {len(CASES)} cases bad")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
