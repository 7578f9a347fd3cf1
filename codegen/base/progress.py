"""Progress for every step that takes more than a few seconds: a tqdm bar on a terminal, and in
a log (stderr not a terminal) one plain line at each tenth of the way, never the carriage-return
redraws that turn into one long line in a file."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any, TextIO, TypeVar

T = TypeVar("T")


class LogBar:
    """The part of tqdm's interface the project uses, writing a line at each 10 %."""

    def __init__(self, total: int, desc: str, unit: str, file: TextIO) -> None:
        self.total = max(0, int(total))
        self.desc = desc
        self.unit = unit
        self.file = file
        self.n = 0
        self.postfix = ""
        self._shown = -1  # the last tenth written
        self._t0 = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.total <= 0:
            return
        tenth = min(10, self.n * 10 // self.total)
        if tenth > self._shown:
            self._shown = tenth
            rate = self.n / max(1e-9, time.monotonic() - self._t0)
            extra = f", {self.postfix}" if self.postfix else ""
            print(
                f"{self.desc}: {self.n}/{self.total} {self.unit} ({10 * tenth} %, "
                f"{rate:.1f} {self.unit}/s{extra})",
                file=self.file,
                flush=True,
            )

    def set_postfix(self, refresh: bool = True, **kw: Any) -> None:
        self.postfix = ", ".join(f"{k}={v}" for k, v in kw.items())

    def write(self, text: str, file: TextIO | None = None) -> None:
        print(text, file=file or self.file, flush=True)

    def close(self) -> None:
        if self.total and self._shown < 10 and self.n >= self.total:
            self.update(0)

    def __enter__(self) -> LogBar:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def bar(total: int, desc: str, unit: str = "it", *, enabled: bool = True) -> Any:
    """A progress bar for ``total`` steps: tqdm on a terminal, `LogBar` in a log, silent when
    not ``enabled``."""
    from tqdm import tqdm

    if not enabled:
        return tqdm(total=total, disable=True)
    if sys.stderr.isatty():
        return tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True, smoothing=0.1)
    return LogBar(total, desc, unit, sys.stderr)


def each(
    items: Iterable[T],
    desc: str,
    unit: str = "it",
    *,
    total: int | None = None,
    enabled: bool = True,
) -> Iterator[T]:
    """``items`` one by one with `bar` advancing by one after each (``total``: their count when
    ``items`` has no length)."""
    seq = items if total is not None else list(items)
    n = total if total is not None else len(seq)  # type: ignore[arg-type]
    with bar(n, desc, unit, enabled=enabled) as b:
        for item in seq:
            yield item
            b.update(1)
