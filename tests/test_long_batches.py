"""Long batch calls: Ctrl-C stops one in the middle, the signal handler's exception coming out
of the call itself (as it would from a Python loop), not after the whole batch; no Ctrl-C turns
into a Rust panic; and other Python threads keep running during the call."""

from __future__ import annotations

import _thread
import signal
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import ferrotok
import numpy as np
import pytest


class Stop(Exception):
    pass


# Each batch method, as users call it; the name of the compiled method it runs; and how many
# ~40 KB documents make a call long enough to be interrupted. The list batches check for
# signals between documents; the others, which run without the GIL, take it back to check
# every 20 ms, so a shorter call never checks.
CALLS: dict[str, tuple[str, int]] = {
    "encode_ordinary_batch": ("encode_ordinary_batch", 600),
    "encode_batch": ("encode_batch", 600),
    "count_batch": ("count_batch", 2400),
    "encode_ordinary_batch_to_numpy": ("encode_batch_to_numpy", 2400),
}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        return all(np.array_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


@pytest.mark.parametrize("num_threads", [1, 2])
@pytest.mark.parametrize("method", list(CALLS))
def test_a_signal_during_a_batch_raises_from_inside_the_call(method: str, num_threads: int) -> None:
    core_name, n_docs = CALLS[method]

    def call(enc: Any, texts: list[str], num_threads: int) -> Any:
        return getattr(enc, method)(texts, num_threads=num_threads)

    enc = ferrotok.get_encoding("cl100k_base")
    line = "Document {}: the road every token takes, step {}. "
    texts = [line.format(i, i * 7) * 800 for i in range(n_docs)]
    inside = False

    def profile(frame: Any, event: str, arg: Any) -> None:
        # Is the compiled batch method running? (c_call / c_return / c_exception events.)
        nonlocal inside
        if getattr(arg, "__name__", None) == core_name:
            if event == "c_call":
                inside = True
            elif event in ("c_return", "c_exception"):
                inside = False

    def handler(signum: int, frame: Any) -> None:
        # Raise only where the batch itself runs the handler (from inside the compiled call,
        # whose caller's frame is then Python's current one). Ignored: a handler that Python
        # runs between calls, as it does once a call has returned, or inside `profile`.
        if inside and frame is not None and frame.f_code is not profile.__code__:
            raise Stop

    done = threading.Event()

    def ring() -> None:
        while not done.wait(0.002):
            _thread.interrupt_main()  # SIGINT, as Ctrl-C delivers it

    previous = signal.signal(signal.SIGINT, handler)
    ringer = threading.Thread(target=ring)
    ringer.start()
    sys.setprofile(profile)
    try:
        with pytest.raises(Stop):
            for _ in range(200):  # ends at the first call that a signal interrupts
                call(enc, texts, num_threads)
    finally:
        sys.setprofile(None)
        done.set()
        ringer.join()
        time.sleep(0.01)  # a signal still pending meets `handler` (which ignores it), not Ctrl-C's
        signal.signal(signal.SIGINT, previous)
    # The encoder and its helper threads carry on as before.
    few = texts[:3]
    assert _same(call(enc, few, num_threads), call(enc, few, 1))
    assert enc.encode_ordinary_batch(few) == [enc.encode_ordinary(t) for t in few]


def test_a_ctrl_c_while_numpy_loads_is_no_panic() -> None:
    # rust-numpy loads NumPy's C API at the first array, calling numpy.lib.NumpyVersion (Python
    # code, where a signal handler may run and raise) and panicking if that raises. Here it
    # raises whenever it runs on the main thread, as a Ctrl-C landing in it would: ferrotok
    # loads the API on a thread of its own, where Python runs no signal handler.
    script = textwrap.dedent(
        """
        import threading
        import numpy.lib
        import ferrotok

        real = numpy.lib.NumpyVersion

        def version(v):
            if threading.current_thread() is threading.main_thread():
                raise KeyboardInterrupt
            return real(v)

        numpy.lib.NumpyVersion = version
        enc = ferrotok.get_encoding("cl100k_base")
        print(enc.encode_to_numpy("hello world").tolist())
        ids, offsets = enc.encode_ordinary_batch_to_numpy(["hello", "world"])
        print(ids.tolist(), offsets.tolist())
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["[15339, 1917]", "[15339, 14957] [0, 1, 2]"]


def test_other_python_threads_run_during_a_long_list_batch() -> None:
    # The calling thread builds every list with the GIL held and gives it up only briefly
    # between texts; every 5 ms it stays without it long enough for a waiting thread to take
    # it. Before, a thread ticking every millisecond ran once during a 450 ms call.
    enc = ferrotok.get_encoding("cl100k_base")
    line = "Document {}: the road every token takes, step {}. "
    texts = [line.format(i, i * 7) * 100 for i in range(10_000)]  # ~45 MB, ~1M ids a call
    enc.encode_ordinary_batch(texts[:100])
    ticks: list[float] = []
    done = threading.Event()

    def tick() -> None:
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        time.sleep(0.01)
        start = time.perf_counter()
        lists = enc.encode_ordinary_batch(texts, num_threads=2)
        end = time.perf_counter()
    finally:
        done.set()
        ticker.join()
    assert len(lists) == len(texts) and lists[-1] == enc.encode_ordinary(texts[-1])
    during = [t for t in ticks if start < t < end]
    periods = (end - start) / 0.005
    # Not a speed assertion: how often the other thread got in, per 5 ms the call lasted. One
    # tick in eight periods leaves room for a loaded machine (here 0.46-0.70 a period; 2 ticks
    # in a whole 268 ms call before).
    assert len(during) >= periods / 8, f"{len(during)} ticks in {(end - start) * 1e3:.0f} ms"
