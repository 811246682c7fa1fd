"""Files on this machine: where BPE files are kept (`FERROTOK_DATA_DIR`, tiktoken's cache),
and writing files atomically, so that a reader sees the old file or the whole new one, never a
part.

What `ferrotok.load` (reading and downloading), `Encoding.save`, `ferrotok.train` and the
command line share about files lives here.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterable
from typing import BinaryIO

DATA_DIR_ENV = "FERROTOK_DATA_DIR"


def cache_dir() -> tuple[str | None, bool]:
    """tiktoken's cache directory (None: caching disabled) and whether the user chose it."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        directory, chosen = os.environ["TIKTOKEN_CACHE_DIR"], True
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        directory, chosen = os.environ["DATA_GYM_CACHE_DIR"], True
    else:
        import tempfile

        directory, chosen = os.path.join(tempfile.gettempdir(), "data-gym-cache"), False
    return (directory or None), chosen


def cache_path(url: str) -> str | None:
    directory, _ = cache_dir()
    if directory is None:
        return None
    return os.path.join(directory, hashlib.sha1(url.encode()).hexdigest())


def file_name(url: str) -> str:
    """The name a URL's file has in `FERROTOK_DATA_DIR`: its last path component."""
    return url.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]


def data_dir_path(url: str) -> str | None:
    directory = os.environ.get(DATA_DIR_ENV)
    if not directory:
        return None
    return os.path.join(os.path.expanduser(directory), file_name(url))


def atomic_write(
    path: str, data: bytes | Iterable[bytes | memoryview], *, make_dirs: bool = False
) -> None:
    """Writes `data` (bytes, or pieces of it) to `path` so that readers see the old file or
    the whole new one.

    A missing directory is an error (`FileNotFoundError` naming it), not created: a typo in
    a path the user gave must not leave files somewhere unexpected. Only `make_dirs=True`
    (the download cache, whose directory is ferrotok's to make) creates it. A path that ends
    in a separator names a directory and is refused (`check_file_path`).

    The temporary file lives beside `path` (a rename is atomic only within a file system) and
    is created with the usual permissions (0o666 minus the umask), not mkstemp's 0o600, so a
    shared cache stays readable by others; a file already at `path` keeps its own permissions.
    A symbolic link is followed (the file it names is replaced, the link stays), and anything
    at `path` that is not a regular file (`/dev/stdout`, a named pipe, a device) is written
    to as it is, never replaced by a file.
    """
    atomic_write_all([(path, data)], make_dirs=make_dirs)


def atomic_write_all(
    files: list[tuple[str, bytes | Iterable[bytes | memoryview]]], *, make_dirs: bool = False
) -> None:
    """Writes several files (`(path, data)` pairs, each as `atomic_write` does) as one
    change: every new file is written in full before any old one is replaced, and if a
    replacement fails (or Ctrl-C arrives) after an earlier one was made, the earlier files are
    put back from hard links taken just before. So a reader that checks the files against
    each other (a `.tiktoken` file and its sidecar) never keeps a mismatched pair, except where
    the file system cannot make hard links.
    """
    staged: list[tuple[str, str]] = []  # (temporary file, its destination)
    try:
        # Every path is checked before anything is written.
        targets = [_destination(path, make_dirs) for path, _ in files]
        for (_, data), (target, st) in zip(files, targets):
            if st is not None and not stat.S_ISREG(st.st_mode):
                with open(target, "wb") as out:
                    for piece in _pieces(data):
                        write_fully(out, piece)
                continue
            staged.append((_write_temporary(target, st, data), target))
        _replace_all(staged)
    except BaseException:
        for tmp, _ in staged:
            remove_quietly(tmp)
        raise


def check_file_path(path: str) -> None:
    """Refuses a path that names a directory by its spelling (it ends in a separator), with
    `IsADirectoryError`: `abspath` and some systems' `open` would drop the separator and
    write `x.tiktoken/` as the file `x.tiktoken`."""
    if path.endswith((os.sep, os.altsep or os.sep)):
        raise IsADirectoryError(
            errno.EISDIR, "ends in a path separator, so it names a directory, not a file", path
        )


def write_fully(stream: BinaryIO, data: bytes | memoryview) -> None:
    """`stream.write(data)` until all of it is written. A buffered stream's `write` may
    return less than it was given when a signal interrupts a write to a pipe (SIGPIPE
    included): the rest would be lost without a word, and a reader that went away unseen."""
    view = memoryview(data).cast("B")
    while view:
        n = stream.write(view)
        if n is None:  # a non-blocking stream that could take nothing: wait, then retry
            import select

            select.select([], [stream], [])
            continue
        view = view[n:]


def _destination(path: str, make_dirs: bool = False) -> tuple[str, os.stat_result | None]:
    """The file to write for `path` (a symbolic link's target) and its status, if it exists.
    Its directory must exist, unless `make_dirs` (then it is created)."""
    check_file_path(path)
    path = os.path.realpath(path) if os.path.islink(path) else path
    try:
        st: os.stat_result | None = os.stat(path)
    except OSError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", path)
    if st is None:
        directory = os.path.dirname(os.path.abspath(path))
        if make_dirs:
            os.makedirs(directory, exist_ok=True)
        elif not os.path.isdir(directory):
            raise FileNotFoundError(errno.ENOENT, f"no such directory: {directory}", path)
    return path, st


def _write_temporary(
    path: str, st: os.stat_result | None, data: bytes | Iterable[bytes | memoryview]
) -> str:
    """Writes `data` to a new file beside `path`, flushed to disk, and returns its name."""
    tmp = f"{path}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            if st is not None:
                os.chmod(tmp, stat.S_IMODE(st.st_mode))
            f.writelines(_pieces(data))
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        remove_quietly(tmp)
        raise
    return tmp


def _replace_all(staged: list[tuple[str, str]]) -> None:
    """Renames each temporary file over its destination; on failure, undoes the renames
    already made (see `atomic_write_all`). Each rename is written down before it is made, so
    a Ctrl-C just after one cannot leave it out of the undoing; one whose temporary file is
    still there was not made, and is left alone. A backup that could not be put back is kept
    (`PATH.<pid>.<random>.old`), as the old file's one copy."""
    # (temporary file, destination, hard link to its old file, whether it had one)
    done: list[tuple[str, str, str | None, bool]] = []
    backups: list[str] = []
    kept: set[str] = set()
    try:
        for tmp, target in staged:
            backup = None
            existed = os.path.exists(target)
            if len(staged) > 1 and existed:
                backup = f"{target}.{os.getpid()}.{os.urandom(6).hex()}.old"
                backups.append(backup)
                try:
                    os.link(target, backup)
                except OSError:
                    backup = None  # no hard links here: this file cannot be put back
            done.append((tmp, target, backup, existed))
            os.replace(tmp, target)
    except BaseException:
        # (One file alone is never undone: its one rename is the change, made or not.)
        for tmp, target, backup, existed in reversed(done if len(staged) > 1 else []):
            if os.path.lexists(tmp):
                continue  # this rename was not made
            try:
                if backup is not None:
                    os.replace(backup, target)
                elif not existed:
                    os.remove(target)
            except OSError:
                if backup is not None:
                    kept.add(backup)
        raise
    finally:
        for backup in backups:
            if backup not in kept:
                remove_quietly(backup)


def _pieces(data: bytes | Iterable[bytes | memoryview]) -> Iterable[bytes | memoryview]:
    """`data` as pieces to write: itself if it is one `bytes`."""
    return (data,) if isinstance(data, bytes) else data


def remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
