"""Writing a file so that no reader ever sees half of it, and no other file is touched.

``atomic_write(path, write)`` has ``write`` fill a temporary file in the target's folder and
then renames it over the target (``os.replace``, atomic on one file system).  The temporary
file gets a fresh random name (``.NAME.<hex>.tmp``) and is created with ``O_CREAT | O_EXCL |
O_NOFOLLOW``: it is always a new file irvm made, so an existing file of that name (somebody's
``out.irbc.tmp``) or a symlink planted there (pointing at a file to destroy) is never opened,
written or renamed away; a name taken is simply another name drawn.  On failure the
temporary file is removed and the target is as it was.  Its permissions are the umask's, as
for a file opened the ordinary way.  A failure of the file system (a full disk, a folder
one may not write) is a ``WriteError`` naming the target: a ``RunError`` (exit 1, a refused
write, as every irvm command reports one) and an ``OSError`` with the target as its
``filename`` and the cause's ``errno``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from vm.core.errors import RunError

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


class WriteError(RunError, OSError):
    """A file irvm could not write (see the module docstring); the old file is intact."""

    def __init__(self, target: Path, cause: OSError):
        RunError.__init__(self, f"cannot write {target}: {cause.strerror or cause} (the file is as it was)")
        self.errno, self.strerror, self.filename = cause.errno, cause.strerror, str(target)


def _create_unique(target: Path) -> tuple[int, Path]:
    """A new, empty file beside ``target``, opened for writing, and its path."""
    for _ in range(100):
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
        try:
            return os.open(tmp, _FLAGS, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{target.parent}: cannot create a temporary file beside {target.name}")


def atomic_write(path: str | Path, write: Callable[[BinaryIO], object]) -> None:
    """Write ``path`` through ``write(file)`` atomically (see the module docstring)."""
    target = Path(path)
    try:
        fd, tmp = _create_unique(target)
    except FileExistsError:
        raise
    except OSError as err:
        raise WriteError(target, err) from err
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, target)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(err, OSError) and not isinstance(err, (RunError, FileNotFoundError)):
            raise WriteError(target, err) from err
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """``atomic_write`` of ``data``."""
    atomic_write(path, lambda f: f.write(data))
