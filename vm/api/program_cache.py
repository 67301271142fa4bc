"""Compiled programs kept between processes: a TorchScript archive is compiled once per
machine, and every later ``vm.load`` of the same file reads the compiled program instead.

A ``.pt`` holds TorchScript *source*; running it means compiling that source (the
frontend, the pass pipeline, the emitter: 0.2 s for resnet18, 1.2 s for densenet121),
which ``torch.jit.load`` does in C++ and irvm did on every load.  The result is plain data
(a ``Program``, what ``.irbc`` files hold), so it is kept in a cache, as numba keeps its
machine code and a browser its compiled scripts:

- **the key** is the SHA-256 of the archive's bytes (a file of other contents can never
  hit another's entry, whatever its name or date), the method, the ``torch.package``
  module, the compile options, the weights given over the archive's own (folded into the
  program: their bytes are hashed too), and irvm's own code (every source file's size and
  modification time under ``compiler/``, ``vm/`` and ``grammar/``): an upgrade or an edit
  of irvm never reads an entry an older irvm wrote;
- **an entry** is the ``.irbc`` of the program (``vm.program.irbc``: loading it runs no
  pass and checks it all again) and a small JSON of what else a load needs without the
  compiler (the module's method names).  The archive's own weights are not copied: they
  are read from the archive itself (memory-mapped), and so are its traced example inputs;
- **where**: ``$IRVM_CACHE_DIR/programs``, else ``$XDG_CACHE_HOME/irvm/programs``, else
  ``~/.cache/irvm/programs``; ``IRVM_CACHE_DIR=off`` turns the cache off.  The folder must
  be the user's alone (owned, not writable by group or others; made so when missing), as an
  entry is a program the process runs: another is not used.  Entries are
  written atomically (never half a file), only ever inside that folder, and the folder is
  kept under ``IRVM_CACHE_MAX_MB`` (default 2048) by removing the entries used least
  recently;
- **never in the way**: an entry that cannot be read (damaged, of another format, a
  folder that cannot be written) is ignored or rewritten, and the file compiled as if
  there were no cache; a cache never changes an answer or a refusal, only when it comes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = 1  # of the entry's JSON (the .irbc has its own version)
_CODE: str | None = None  # irvm's code fingerprint, once per process


def cache_dir() -> Path | None:
    """The folder of compiled programs, or None when the cache is off."""
    configured = os.environ.get("IRVM_CACHE_DIR")
    if configured is not None:
        if configured.strip().lower() in ("", "off", "0", "none"):
            return None
        return Path(configured) / "programs"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "irvm" / "programs"


def code_fingerprint() -> str:
    """irvm's code as it is now: every source file's path, size and modification time."""
    global _CODE
    if _CODE is None:
        root = Path(__file__).resolve().parents[2]
        h = hashlib.sha256()
        for package in ("compiler", "vm", "grammar"):
            for dirpath, dirnames, filenames in os.walk(root / package):
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                for name in sorted(filenames):
                    if name.endswith((".py", ".lark", ".ir")):
                        st = os.stat(os.path.join(dirpath, name))
                        h.update(f"{os.path.relpath(dirpath, root)}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        _CODE = h.hexdigest()
    return _CODE


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


_PLAIN = (bool, int, float, str, type(None))


def _weights_digest(weights: Mapping[str, Any] | None) -> str | None:
    """The digest of the given weights' keys and bytes; None when a value is not an array
    or a plain setting (a quantized tensor, say): such weights are compiled, never cached."""
    if not weights:
        return ""
    h = hashlib.sha256()
    for key in sorted(weights):
        value = weights[key]
        h.update(key.encode() + b"\0")
        if isinstance(value, np.ndarray) and not value.dtype.hasobject:
            h.update(f"{value.dtype.str}{value.shape}".encode())
            h.update(np.ascontiguousarray(value).view(np.uint8).reshape(-1).data if value.size else b"")
        elif isinstance(value, _PLAIN) or (isinstance(value, (list, tuple)) and all(isinstance(v, _PLAIN) for v in value)):
            h.update(repr(value).encode())
        else:
            return None
        h.update(b"\1")
    return h.hexdigest()


def entry_key(path: Path, method: str, module: str | None, options: Mapping[str, Any],
              weights: Mapping[str, Any] | None) -> str | None:
    """The entry's name; None when these weights cannot be keyed (``_weights_digest``)."""
    given = _weights_digest(weights)
    if given is None:
        return None
    parts = {
        "format": FORMAT, "file": _file_digest(path), "method": method, "module": module,
        "options": sorted((k, repr(v)) for k, v in options.items()), "weights": given,
        "code": code_fingerprint(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _private(folder: Path) -> bool:
    """Whether ``folder`` is this user's alone (made so if it is missing): an entry is a
    program this process will run, so a folder others may write into is not used."""
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = folder.stat()
    except OSError:
        return False
    getuid = getattr(os, "getuid", None)
    return (getuid is None or st.st_uid == getuid()) and not st.st_mode & 0o022


class Entry:
    """One compiled program in the cache (``path.irbc`` and ``path.json``)."""

    def __init__(self, folder: Path, key: str) -> None:
        self.folder = folder
        self.irbc = folder / f"{key}.irbc"
        self.meta = folder / f"{key}.json"

    def read(self) -> tuple[Any, dict[str, Any]] | None:
        """The program and the entry's facts, or None when there is no readable entry."""
        from vm.core.errors import IRError
        from vm.program.irbc import load

        try:
            meta = json.loads(self.meta.read_text())
            if not isinstance(meta, dict) or meta.get("format") != FORMAT:
                return None
            program = load(self.irbc)
        except (OSError, ValueError, IRError):  # no entry, a damaged one, another format
            return None
        with contextlib.suppress(OSError):
            os.utime(self.meta)  # used now: the last to be evicted
        return program, meta

    def write(self, program: Any, facts: dict[str, Any]) -> None:
        """Keep ``program`` (best effort: a cache that cannot be written is no error)."""
        from vm.core.errors import IRError
        from vm.files.atomic import atomic_write_bytes
        from vm.program.irbc import save

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            save(program, self.irbc)
            atomic_write_bytes(self.meta, json.dumps({"format": FORMAT, **facts}).encode())
        except (OSError, IRError, ValueError, TypeError):  # a full disk, a folder not ours to write
            for f in (self.meta, self.irbc):
                with contextlib.suppress(OSError):
                    f.unlink()
            return
        evict(self.folder, keep=self.meta.stem)

    def remember(self, **facts: Any) -> None:
        """Add ``facts`` to the entry (the method names, once a caller has read them)."""
        from vm.files.atomic import atomic_write_bytes

        try:
            meta = json.loads(self.meta.read_text())
            if isinstance(meta, dict) and meta.get("format") == FORMAT:
                atomic_write_bytes(self.meta, json.dumps({**meta, **facts}).encode())
        except (OSError, ValueError):
            return


def evict(folder: Path, keep: str = "", limit_mb: float | None = None) -> None:
    """Remove the entries used least recently until the folder holds at most the limit."""
    if limit_mb is None:
        try:
            limit_mb = float(os.environ.get("IRVM_CACHE_MAX_MB", "2048"))
        except ValueError:
            limit_mb = 2048.0
    entries = []
    total = 0
    for meta in folder.glob("*.json"):
        irbc = meta.with_suffix(".irbc")
        try:
            size = meta.stat().st_size + (irbc.stat().st_size if irbc.exists() else 0)
            entries.append((meta.stat().st_mtime, meta, irbc, size))
        except OSError:
            continue
        total += size
    for _, meta, irbc, size in sorted(entries, key=lambda e: e[0]):
        if total <= limit_mb * 1e6:
            break
        if meta.stem == keep:
            continue
        for f in (irbc, meta):
            with contextlib.suppress(OSError):
                f.unlink()
        total -= size


def compiled_archive(
    path: str | Path,
    method: str,
    compile_it: Callable[[], tuple[Any, dict[str, Any]]],
    *,
    module: str | None,
    options: Mapping[str, Any],
    weights: Mapping[str, Any] | None,
) -> tuple[Any, dict[str, Any], dict[str, Any], Entry | None]:
    """``(program, own weights, facts, the cache entry)`` of the archive at ``path``: from
    the cache when an entry for it is there, else ``compile_it()`` (the compiler's
    ``compile_archive``), kept for the next time.  ``facts``: ``implied`` (what the weights
    imply of the inputs, ``vm.api.signature.implied_json``) and, once a load has read them
    (``Entry.remember``), ``methods`` (the module's method names)."""
    folder = cache_dir()
    key = entry_key(Path(path), method, module, options, weights) if folder is not None else None
    if folder is None or key is None or not _private(folder):
        program, own = compile_it()
        return program, own, {}, None
    entry = Entry(folder, key)
    found = entry.read()
    if found is not None:
        from compiler.torchscript import archive_weights
        from vm.binding.strict import ArchiveState

        program, meta = found
        own = ArchiveState(archive_weights(path, module=module))
        return program, own, meta, entry
    program, own = compile_it()
    from vm.api.signature import implied_json

    # what the IR and the weights say of the inputs: kept, as the IR is not read on a hit
    facts: dict[str, Any] = {"implied": implied_json(program.module_if_loaded, {**own, **(weights or {})})}
    entry.write(program, facts)
    return program, own, facts, entry


__all__ = ["cache_dir", "code_fingerprint", "compiled_archive", "entry_key", "evict"]
