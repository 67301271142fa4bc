"""The bounds of reading a ``.pt`` archive: what a file may make irvm spend.

A model file comes from anyone, and its size says little about what reading it costs: a
zip member can inflate a thousandfold, a pickle can nest a list 100,000 deep in 300 kB or
share one list so that flattening it visits 2^40 paths, a tensor can view 4 GB through a
stride of 0 over 4 bytes.  So every quantity whose cost is not linear in the file's bytes
has a limit, checked *before* the work or the allocation it bounds, and a refusal names
the file, the member and the limit (``docs/bounds.md`` is the table).

The limits are one record, ``ReadLimits``; ``current()`` is the one in force: the defaults,
changed by the environment variable ``IRVM_LIMITS`` (``name=value`` pairs separated by
commas, e.g. ``IRVM_LIMITS=depth=2000,member_bytes=2GiB``) for the rare legitimate file
that needs more.  The readers take a ``limits=`` argument too.
"""

from __future__ import annotations

import os
import re

import attrs

from compiler.diagnostics import IRError

ENV = "IRVM_LIMITS"


@attrs.frozen
class ReadLimits:
    """Each bound of reading an archive (see ``docs/bounds.md``)."""

    members: int = 100_000  # zip members
    member_bytes: int = 512 << 20  # a pickle, code file or record, inflated
    ratio: int = 200  # inflated/compressed, for a member that inflates past 1 MiB
    depth: int = 200  # nesting of containers and objects in a pickle's object graph
    entries: int = 1_000_000  # flattened weights entries (paths through the object graph)
    source_bytes: int = 256 << 20  # all TorchScript source of the archive
    expr_depth: int = 100  # syntax-tree nesting in the source: module, class, def, statements, expression
    literal_elements: int = 10_000  # elements of one list/tuple/dict literal in the source
    expanded_bytes: int = 256 << 20  # a tensor that repeats its storage's elements, written out


RATIO_FLOOR = 1 << 20  # members inflating to less than this may have any ratio
_UNITS = {"": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30}


def parse(text: str) -> ReadLimits:
    """``ReadLimits`` from ``name=value,...`` (values are integers, optionally with a
    KiB/MiB/GiB suffix); an unknown name or a bad value is an ``IRError``."""
    fields = {f.name for f in attrs.fields(ReadLimits)}
    changes: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        name = name.strip()
        match = re.fullmatch(r"\s*(\d{1,18})\s*([a-zA-Z]*)\s*", value)
        if name not in fields or match is None or match.group(2).lower() not in _UNITS:
            raise IRError(
                f"{ENV}: cannot read {part!r:.60}: expected name=integer[KiB|MiB|GiB] with a name among "
                f"{', '.join(sorted(fields))}"
            )
        changes[name] = int(match.group(1)) * _UNITS[match.group(2).lower()]
    return ReadLimits(**changes)


def current() -> ReadLimits:
    """The limits in force: the defaults, changed by ``IRVM_LIMITS`` when it is set."""
    text = os.environ.get(ENV, "")
    return parse(text) if text.strip() else ReadLimits()


def over(what: str, value: int, name: str, limit: int) -> str:
    """The sentence of a refusal: ``what`` is ``value``, over limit ``name``."""
    return f"{what} is {value:,}, over the limit {name}={limit:,} (raise it with {ENV}={name}=N if the file is trusted)"
