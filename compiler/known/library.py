"""The fixed known bodies: IR files under ``compiler/known/bodies/``, read once.

A body whose text depends on nothing is stored as the IR it is, not built by Python:
``bodies/functions/<family>.ir`` holds ``torch.nn.functional`` helpers,
``bodies/modules/<family>.ir`` the ``forward`` of ``torch.nn`` classes.  A file is a
series of sections, each opened by a header line naming what the graph after it is the
body of::

    # == softsign
    # any comment lines (what the body computes, and how)
    graph(%input : Tensor):
      ...
      return (%out)

A header may list several names that share the body (``# == max_unpool1d max_unpool2d``),
and a name may head several sections: its overloads, tried in file order.  A module
body is headed by its class's unmangled qualname, and its ``%self`` has that class type.
Text before the first header is the file's own documentation.  The files ship as package
data (``pyproject.toml``), as ``grammar/ir.lark`` does, and are read through
``importlib.resources`` the first time a table is asked for; the text is parsed only
when a body is used (``compiler.known.functions`` / ``compiler.known.modules``).
"""

from __future__ import annotations

from functools import cache
from importlib import resources

HEADER = "# == "


def parse_sections(text: str, where: str) -> dict[str, list[str]]:
    """The sections of one bodies file: name -> the texts it heads, in file order."""
    sections: dict[str, list[str]] = {}
    names: list[str] = []
    lines: list[str] = []

    def close() -> None:
        if names:
            body = "".join(lines)
            if "graph(" not in body:
                raise ValueError(f"{where}: section {' '.join(names)} holds no graph")
            for name in names:
                sections.setdefault(name, []).append(body)

    for line in text.splitlines(keepends=True):
        words = line.split()
        if words[:2] == HEADER.split():
            close()
            names, lines = words[2:], []
            if not names:
                raise ValueError(f"{where}: a section header without a name")
        else:
            lines.append(line)
    close()
    return sections


@cache
def fixed_bodies(kind: str) -> dict[str, list[str]]:
    """Every fixed body of ``kind`` (``"functions"`` or ``"modules"``): name -> its
    texts, the files read in name order."""
    folder = resources.files("compiler.known").joinpath("bodies").joinpath(kind)
    table: dict[str, list[str]] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".ir"):
            continue
        for name, texts in parse_sections(entry.read_text(), f"compiler/known/bodies/{kind}/{entry.name}").items():
            table.setdefault(name, []).extend(texts)
    return table


__all__ = ["HEADER", "fixed_bodies", "parse_sections"]
