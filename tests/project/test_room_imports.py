"""Each room's README says what the room may import, and the imports agree (issue #37).

A *room* is a package directory of ``compiler/`` or ``vm/`` (one holding an ``__init__.py``);
its modules are the ``.py`` files directly in it (a sub-package is a room of its own).  Its
``README.md`` carries one paragraph that begins ``May import:`` and names, in backquotes,
rooms (``vm.ops``: every module directly in ``vm/ops/``) or single modules
(``vm.binding.unbound``); words in parentheses explain and are not read; ``May import: nothing
of irvm.`` names none.  Against the import graph ``tools/import_cycles.py`` draws (every
``import`` of ``compiler/`` and ``vm/``, inside functions and under ``if TYPE_CHECKING`` too):

- every room has a README with that paragraph;
- every import of a room's modules goes to the room itself or to a name its paragraph lists;
- every listed name exists and is imported by the room: the paragraph is what the room imports,
  with nothing missing and nothing stale, so the READMEs cannot drift from the code.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from tests.support.paths import ROOT, TOOLS

sys.path.insert(0, str(TOOLS))
import import_cycles

GRAPH = import_cycles.import_graph(ROOT)
MODULES = import_cycles.module_names(ROOT)


def _room_name(directory: Path) -> str:
    return ".".join(directory.relative_to(ROOT).parts)


ROOMS = {
    _room_name(init.parent): init.parent
    for package in import_cycles.PACKAGES
    for init in sorted((ROOT / package).rglob("__init__.py"))
}


def room_of(module: str) -> str:
    return _room_name(MODULES[module].parent)


def may_import(readme: str) -> set[str] | None:
    """The names the ``May import:`` paragraph of ``readme`` lists; ``None`` without one."""
    found = re.search(r"^May import:(.*?)(?:\n\s*\n|\Z)", readme, re.MULTILINE | re.DOTALL)
    if found is None:
        return None
    text = found.group(1)
    while re.search(r"\([^()]*\)", text):
        text = re.sub(r"\([^()]*\)", "", text)  # the explanations
    return {name for name in re.findall(r"`([\w.]+)`", text) if name.split(".")[0] in import_cycles.PACKAGES}


def _covers(name: str, target: str) -> bool:
    return target == name or room_of(target) == name


def stray_imports(room: str, listed: set[str]) -> set[tuple[str, str]]:
    """The imports of ``room``'s modules that go neither into the room nor to a listed name."""
    return {
        (module, target)
        for module, targets in GRAPH.items() if room_of(module) == room
        for target in targets
        if room_of(target) != room and not any(_covers(name, target) for name in listed)
    }


def unused_names(room: str, listed: set[str]) -> set[str]:
    """The listed names no import of ``room``'s modules goes to, and names of nothing."""
    used = {target for module, targets in GRAPH.items() if room_of(module) == room for target in targets}
    return {name for name in listed if not any(_covers(name, target) for target in used)}


def _listed() -> dict[str, set[str] | None]:
    return {
        room: may_import((directory / "README.md").read_text()) if (directory / "README.md").exists() else None
        for room, directory in ROOMS.items()
    }


LISTED = _listed()


def test_the_rooms_are_read() -> None:
    """The rooms are the package directories, sub-packages included (a vacuous rule reads none)."""
    assert {"compiler", "compiler.passes", "compiler.torchscript", "vm", "vm.ir", "vm.api", "vm.static",
            "vm.interpreter", "vm.binding", "vm.ops", "vm.ops.compiled", "vm.ops.nn"} <= ROOMS.keys()
    assert room_of("vm.ops.nn.conv") == "vm.ops.nn" and room_of("vm.ops") == "vm.ops" and room_of("vm.cli") == "vm"


def test_every_room_says_what_it_may_import() -> None:
    """Each room's README.md has a ``May import:`` paragraph."""
    assert [room for room, names in LISTED.items() if names is None] == []


def test_every_import_goes_to_the_room_or_a_listed_name() -> None:
    """No module imports outside its room but for what its room's README lists."""
    stray = {room: sorted(stray_imports(room, names)) for room, names in LISTED.items() if names is not None}
    assert {room: edges for room, edges in stray.items() if edges} == {}


def test_every_listed_name_is_imported() -> None:
    """Each listed name is a room or module the room's modules import (no stale permission)."""
    unused = {room: sorted(unused_names(room, names)) for room, names in LISTED.items() if names}
    assert {room: names for room, names in unused.items() if names} == {}


def test_a_readme_that_omits_an_import_fails() -> None:
    """Dropping one name from a room's line leaves imports the rule reports (the rule bites)."""
    listed = LISTED["vm.static"]
    assert listed and "vm.ir" in listed
    assert stray_imports("vm.static", listed - {"vm.ir"}) >= {("vm.static.module_ir", "vm.ir.graph")}
    assert may_import("May import: `vm.core`, `vm.ops` (the `vm.fusion` registry).\nNext line.\n\nOther.") \
        == {"vm.core", "vm.ops"}
    assert may_import("May import: nothing of irvm.") == set() and may_import("no such line") is None
