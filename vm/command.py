"""What the two command lines (``irc`` in ``compiler.cli``, ``irvm`` in ``vm.cli``) share:
the exit codes, the guard that turns every failure into one paragraph, the version, and
reading a weights ``.npz``.

It sits in ``vm`` below both, so that ``compiler.cli`` never imports ``vm.cli`` (which
imports the compiler to run ``.ir`` text): the command lines form no import cycle.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from vm.core.errors import IRError, RunError

EXIT_RUN_ERROR = 1  # a run-time error, bad input, or a refused overwrite
EXIT_COMPILE_ERROR = 65  # does not compile, a bad .irbc, or a file that is no program
EXIT_NO_INPUT = 66  # a missing or unreadable file
EXIT_INTERNAL = 70  # an irvm bug


def version() -> str:
    """The installed irvm's version (from the distribution's metadata)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("irvm")
    except PackageNotFoundError:
        return "(not installed)"


def run_guarded(tool: str, body: Callable[[], int]) -> int:
    """Run a command body, turning every failure into one paragraph and an exit code."""
    try:
        return body()
    except IRError as err:
        print(str(err), file=sys.stderr)
        return EXIT_RUN_ERROR if isinstance(err, RunError) else EXIT_COMPILE_ERROR
    except BrokenPipeError:  # the reader went away (`irvm run ... | head`): not an error
        sys.stderr.close()
        return 0
    except OSError as err:
        where = f" {err.filename}" if getattr(err, "filename", None) else ""
        print(f"{tool}: cannot access{where}: {err.strerror or err}", file=sys.stderr)
        return EXIT_NO_INPUT
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # an irvm bug: say so in one paragraph, no traceback
        if os.environ.get("IRVM_DEBUG"):
            raise
        print(
            f"{tool}: internal error: {type(err).__name__}: {err} "
            f"(set IRVM_DEBUG=1 for a traceback, and please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def load_npz(path: str | None, role: str = "weights") -> dict[str, Any]:
    """The arrays of the ``.npz`` at ``path`` ({} for None), irvm's own mark left out; a
    file of another kind is refused saying what it is (``vm.files.kinds.expect``)."""
    if path is None:
        return {}
    import zipfile

    from vm.files.kinds import MARK_KEY, expect

    expect(path, role)
    from vm.files.arrays import mapped_npz

    try:  # every header checked against the file's size first; large arrays memory-mapped
        flat = {k: v for k, v in mapped_npz(path).items() if k != MARK_KEY}
    except (ValueError, OSError, zipfile.BadZipFile) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise RunError(f"{path}: not a readable .npz file ({err})") from None
    from vm.files.quantized import decode

    try:
        return decode(flat)  # quantized tensors and packed parameters (vm/files/quantized.py)
    except RunError as err:
        raise RunError(f"{path}: {err.message}") from None


__all__ = ["EXIT_COMPILE_ERROR", "EXIT_INTERNAL", "EXIT_NO_INPUT", "EXIT_RUN_ERROR", "load_npz", "run_guarded", "version"]
