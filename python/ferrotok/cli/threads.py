"""`map_parts`: a file's parts worked on several threads at once, results and errors in order.

The core encodes, counts, parses and formats with the GIL released, so parts in work on
several threads use every core; the results come back in the parts' order, and an error comes
where a plain loop would meet it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Callable, TypeVar

_R = TypeVar("_R")
_P = TypeVar("_P")


def part_threads() -> int:
    """Threads for `map_parts`: the CPUs this process may run on, at most 8 (each part in
    work holds its text and ids, ~24 MB)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


def map_parts(call: Callable[[_P], _R], parts: Iterable[_P]) -> Iterator[_R]:
    """`map(call, parts)`, with parts in work on several threads at once (the core encodes,
    parses and formats with the GIL released, so they use every core), a few parts ahead of
    the results, which come in order. Errors come in the order of a plain loop too: an error
    reading a part is raised only after the parts before it have been done and their errors
    raised.
    Input of one part (most files) runs on this thread: handing it to a thread would cost
    more than the thread gives."""
    source = iter(parts)
    first = next(source, None)
    if first is None:
        return
    threads = part_threads()
    try:
        second = next(source) if threads > 1 else None
    except StopIteration:
        second = None
    except Exception:
        call(first)
        raise
    if second is None:
        yield call(first)
        yield from map(call, source)
        return
    from collections import deque
    from concurrent.futures import Future, ThreadPoolExecutor
    from itertools import chain

    source = chain([first, second], source)
    del first, second
    pool = ThreadPoolExecutor(threads, thread_name_prefix="ferrotok-part")
    pending: deque[Future[_R]] = deque()
    try:
        while True:
            try:
                part = next(source)
            except StopIteration:
                break
            except Exception:
                for earlier in pending:
                    earlier.result()
                raise
            pending.append(pool.submit(call, part))
            del part  # the worker holds it only while it works
            if len(pending) > threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        # On an error or Ctrl-C: parts not started are dropped, the ones in work (at most
        # `threads`, ~0.1 s each) finish first.
        pool.shutdown(wait=True, cancel_futures=True)
