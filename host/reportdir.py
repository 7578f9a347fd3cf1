"""The report directory of `codegen run` belongs to one run at a time, and what it holds is
checked before it is trusted.

- `Lock`: ``OUT/.lock`` names its owner (pid, host, start time, command) and is held with
  flock(2) for the run's life: a second run on the same directory is refused, naming the first;
  the kernel drops the lock when its process dies, so a lock file left behind by a crash is
  seen as stale and taken over (and said so).
- `regular_file`: results.jsonl (and the files beside it) must be a regular file inside the
  directory, never a symlink or a device: a link to /dev/zero or to a file elsewhere would be
  read as empty or written through.
- `bounded_lines`: lines are read with a bound (`MAX_LINE`), a longer one reported by its length
  and skipped without being held.
- `digest`: every results line carries a digest of its record (sha256 over the record and the
  run's key from run.json), so an edited measurement (ticks halved, any field changed) is seen on
  resume and the sample redone; a deleted line is a hole the run fills, a repeated one is caught
  as a sample named twice. It shows edits and accidents; it is not a signature (whoever reads
  run.json can forge it).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from codegen.base.errors import CodegenError

LOCK = ".lock"
MAX_LINE = 1 << 20  # bytes: a results line is about a kilobyte


class ReportDirError(CodegenError):
    """The report directory cannot be used as it is (another run holds it, a file in it is not
    what it should be)."""


@dataclass(frozen=True)
class Owner:
    pid: int
    host: str
    started: str
    command: str

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}, started {self.started} ({self.command})"


# the report directories this process holds (a `codegen run` takes its lock before preparing
# the references; `execute` inside it then finds it held): resolved path -> holders
_HELD: dict[Path, int] = {}


class Lock:
    """``with Lock(out, command): ...``: the directory is this run's for the block (nested in
    the same process: the outer block's)."""

    def __init__(self, out: Path, command: str) -> None:
        self.out = out
        self.command = command
        self.stale: Owner | None = None  # a dead run's lock that was taken over
        self._fd: int | None = None
        self._key = out.resolve()

    def __enter__(self) -> Lock:
        if _HELD.get(self._key):
            _HELD[self._key] += 1
            return self
        self._take()
        _HELD[self._key] = 1
        return self

    def __exit__(self, *exc: object) -> None:
        _HELD[self._key] -= 1
        if _HELD[self._key] == 0:
            del _HELD[self._key]
            self._release()

    def _take(self) -> None:
        path = self.out / LOCK
        if self.out.exists() and not self.out.is_dir():
            raise ReportDirError(
                f"--report {self.out} is a file, not a directory: name a directory (it is "
                "created when missing)"
            )
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            raise ReportDirError(
                f"--report {self.out}: cannot create {path} ({exc.strerror}); choose a "
                "directory you can write"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _read_owner(fd)
            os.close(fd)
            who = owner.describe() if owner else "another process"
            raise ReportDirError(
                f"--report {self.out} is in use by {who}; wait for it to end, or use another "
                "--report directory"
            ) from None
        self.stale = _read_owner(fd)  # a lock file whose process died: not held, taken over
        me = Owner(
            os.getpid(),
            socket.gethostname(),
            time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            self.command,
        )
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(me.__dict__) + "\n").encode(), 0)
        self._fd = fd

    def _release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def _read_owner(fd: int) -> Owner | None:
    try:
        text = os.pread(fd, 4096, 0).decode(errors="replace").strip()
        d = json.loads(text) if text else None
        if not isinstance(d, dict):
            return None
        return Owner(int(d["pid"]), str(d["host"]), str(d["started"]), str(d["command"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def regular_file(path: Path, what: str) -> bool:
    """Whether ``path`` exists; raises unless it is absent or a regular file (no symlink, no
    device, no directory) inside its report directory."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(path)
        raise ReportDirError(
            f"{path} is a symbolic link (to {target}), not the {what}: a run writes only regular "
            "files inside its report directory; remove the link, or use another --report"
        )
    if not stat.S_ISREG(st.st_mode):
        raise ReportDirError(
            f"{path} is not a regular file (the {what}); remove it, or use another --report"
        )
    return True


def write_file(path: Path, data: str | bytes) -> None:
    """``path``'s new content, written beside it and renamed over it: a symlink in its place is
    replaced, never written through."""
    regular_file(path, path.name)
    tmp = path.with_name(f".{path.name}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(tmp, mode) as f:
        f.write(data)
    os.replace(tmp, path)


def open_append(path: Path) -> IO[str]:
    """The file for appending, refusing to follow a symlink made after the check."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    return os.fdopen(fd, "a", encoding="utf-8")


@dataclass(frozen=True)
class Line:
    """A complete line of a results file (``text``), or one too long to read (``too_long``:
    its length in bytes, its text not kept)."""

    number: int
    text: bytes
    too_long: int = 0


def bounded_lines(path: Path) -> Iterator[Line]:
    """The file's complete lines in order, each at most MAX_LINE bytes; a longer line is
    reported by its length and skipped a block at a time. A torn last line (a kill mid-write)
    is cut off the file first."""
    if not regular_file(path, "results file"):
        return
    size = path.stat().st_size
    with open(path, "r+b") as f:
        if size:
            f.seek(size - 1)
            if f.read(1) != b"\n":
                pos, keep = size, 0
                while pos > 0 and not keep:
                    step = min(65536, pos)
                    pos -= step
                    f.seek(pos)
                    block = f.read(step)
                    if (nl := block.rfind(b"\n")) >= 0:
                        keep = pos + nl + 1
                f.truncate(keep)
        f.seek(0)
        number = 0
        while True:
            line = f.readline(MAX_LINE + 1)
            if not line:
                return
            number += 1
            if len(line) > MAX_LINE and not line.endswith(b"\n"):
                n = len(line)
                while (more := f.readline(MAX_LINE)) and not more.endswith(b"\n"):
                    n += len(more)
                n += len(more)
                yield Line(number, b"", n)
                continue
            if line.strip():
                yield Line(number, line)


def digest(key: str, record_json: str) -> str:
    """The digest of a results line: sha256 over the run's key and the line's record (its JSON
    without the digest), 16 hex digits."""
    return hashlib.sha256(f"{key}\n{record_json}".encode()).hexdigest()[:16]


def with_digest(record_json: str, key: str) -> str:
    """The line to write for a record."""
    return record_json[:-1] + f',"digest":"{digest(key, record_json)}"}}'


def split_digest(text: str) -> tuple[str, str | None]:
    """(the record's JSON without its digest, the digest written with it or None)."""
    d = json.loads(text)
    if not isinstance(d, dict):
        raise ValueError("not a JSON object")
    written = d.pop("digest", None)
    return json.dumps(d, separators=(",", ":")), written if isinstance(written, str) else None
