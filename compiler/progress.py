"""A one-line progress display for long compiles, on a terminal only, drawn by ``rich``.

    with Progress("irc") as progress:
        progress.stage("parse")
        progress.stage("propagate_constants", nodes=10593)
        print("wrote model.irbc", file=sys.stderr)   # printed above the line, never into it

Nothing is shown for the first ``delay`` seconds (a fast compile stays silent), nor ever
when the stream is not a terminal (a pipe, a log file, a test).  After that, ``rich``'s
live display draws ``irc: propagate_constants (10,593 nodes) 3.2s`` and
redraws it five times a second, so a pass that runs long still shows its clock moving.
While it is shown, whatever the program prints to stdout or stderr goes above the line
(``rich.live.Live`` redirects them; stdout only when it is the same terminal), so a message never lands in the middle of it (it
did: ``irc: save 9.2swrote big.irbc``); the line is erased when the work ends.  The
node count is the graph's size as last reported (a pass reports it when it starts).

``rich`` is a core dependency for this: a well-kept library that already knows how to
share a terminal between a live line and ordinary output.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO

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
        self.nodes: int | None = None
        self.shown = False
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._live: Any = None

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
            if self._live is not None:
                self._live.stop()  # transient: the line goes, what was printed above it stays
                self._live = None

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def stage(self, name: str, nodes: int | None = None) -> None:
        """The work now running: a pass or phase name, and the graph's size (kept from the
        last report when not given)."""
        with self._lock:
            self.current = name
            if nodes is not None:
                self.nodes = nodes

    def line(self) -> str:
        size = f" ({self.nodes:,} nodes)" if self.nodes is not None else ""
        return f"{self.tool}: {self.current}{size} {self.elapsed:.1f}s"

    def _tick(self) -> None:
        while not self._done.wait(0.2):
            if self.elapsed < self.delay:
                continue
            with self._lock:
                if self._done.is_set():
                    return
                if self._live is None:
                    self._live = _start_live(self.stream)
                    self.shown = True
                self._live.update(_renderable(self.line()), refresh=True)


def _start_live(stream: TextIO) -> Any:
    from rich.console import Console
    from rich.live import Live

    console = Console(file=stream, force_terminal=True, soft_wrap=True)
    # stdout goes above the line only when it is this terminal too: `irc compile --emit ir > f` keeps f clean
    live = Live(console=console, transient=True, auto_refresh=False, redirect_stdout=_is_terminal(sys.stdout),
                redirect_stderr=True)
    live.start()
    return live


def _renderable(line: str) -> Any:
    from rich.text import Text

    return Text(line, no_wrap=True, overflow="ellipsis")


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
