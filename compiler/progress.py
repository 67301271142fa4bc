"""A one-line progress display for long compiles, on a terminal only.

    with Progress("irc") as progress:
        progress.stage("parse")
        progress.stage("propagate_constants", nodes=10593)

Nothing is shown for the first ``delay`` seconds (a fast compile stays silent), nor ever
when the stream is not a terminal (a pipe, a log file, a test).  After that a
background thread redraws ``irc: propagate_constants (10,593 nodes) 3.2s`` in place
five times a second, so a pass that runs long still shows its clock moving; the line is
erased when the work ends.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is Python 3.11+


class Progress:
    """Shows the current stage of a long piece of work on ``stream`` (stderr)."""

    def __init__(self, tool: str, stream: TextIO | None = None, delay: float = 1.0, enabled: bool | None = None) -> None:
        self.tool = tool
        self.stream = stream if stream is not None else sys.stderr
        self.delay = delay
        self.enabled = _is_terminal(self.stream) if enabled is None else enabled
        self.start = time.perf_counter()
        self.current = "starting"
        self.shown = False
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        self.start = time.perf_counter()
        if self.enabled:
            self._thread = threading.Thread(target=self._tick, name="irvm-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self.shown:
                self.stream.write("\r\033[K")  # erase the line: what follows starts clean
                self.stream.flush()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def stage(self, name: str, nodes: int | None = None) -> None:
        """The work now running: a pass or phase name, and the graph's size."""
        with self._lock:
            self.current = name if nodes is None else f"{name} ({nodes:,} nodes)"

    def line(self) -> str:
        return f"{self.tool}: {self.current} {self.elapsed:.1f}s"

    def _tick(self) -> None:
        while not self._done.wait(0.2):
            if self.elapsed < self.delay:
                continue
            with self._lock:
                self.stream.write("\r\033[K" + self.line())
                self.stream.flush()
                self.shown = True


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
