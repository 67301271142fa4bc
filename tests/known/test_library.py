"""The known-bodies package as data: the ``.ir`` files, their sections, the front door.

``compiler/known/bodies/*/*.ir`` hold the bodies whose text is fixed; Python templates
hold the rest.  These tests protect what the behaviour tests (test_functions.py,
test_modules.py) cannot see: that every section of every file is a graph that
verifies and is reachable from the tables, that no name is both a fixed body and a
template (which one won would depend on the order of a merge), that the files ship in
a wheel, and that the rest of irvm goes through ``compiler.known`` alone.
"""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest
import tomllib

from compiler.known.library import fixed_bodies, parse_sections
from compiler.verify import verify
from tests.support.paths import ROOT

BODIES = ROOT / "compiler" / "known" / "bodies"


def test_sections_split_on_headers_with_shared_bodies_and_overloads() -> None:
    """A header names one or more keys for the graph after it; a key heading two
    sections has two overloads, in file order; text before the first header is the
    file's documentation."""
    text = (
        "# what this file holds\n\n"
        "# == a b\n# a note\ngraph(%x : int):\n  return (%x)\n\n"
        "# == a\ngraph(%x : float):\n  return (%x)\n"
    )
    sections = parse_sections(text, "t.ir")
    assert list(sections) == ["a", "b"]
    heads = [next(line for line in s.splitlines() if line.startswith("graph(")) for s in sections["a"]]
    assert heads == ["graph(%x : int):", "graph(%x : float):"]
    assert sections["b"] == sections["a"][:1]


@pytest.mark.parametrize("text", ["# ==\ngraph(%x : int):\n  return (%x)\n", "# == a\n# no graph here\n"])
def test_a_section_without_name_or_graph_is_refused(text: str) -> None:
    """A malformed bodies file fails loudly, naming the file, instead of losing a body."""
    with pytest.raises(ValueError, match="t.ir"):
        parse_sections(text, "t.ir")


def test_every_fixed_body_parses_verifies_and_is_in_its_table() -> None:
    """Each section of each file is one graph that verifies, and the lookups serve it."""
    from compiler.known.functions import known_graphs, known_table
    from compiler.known.modules import known_classes, known_forward

    functions, modules = fixed_bodies("functions"), fixed_bodies("modules")
    assert functions and modules
    for name, texts in functions.items():
        assert known_table()[name] == texts
        for graph in known_graphs(name):
            verify(graph)
    for qualname, texts in modules.items():
        assert len(texts) == 1 and known_classes()[qualname] == texts[0]
        graph = known_forward(qualname)
        verify(graph)
        assert str(graph.inputs[0].type) == qualname


def test_no_name_is_both_fixed_text_and_a_template() -> None:
    """A name has its bodies in one place: a file or a template family, never both."""
    from compiler.known import activation, interpolate, loss, nn, pool, unique
    from compiler.known.modules import TEMPLATES

    templates = [n for family in (activation, nn, loss, interpolate, pool, unique) for n in family.BODIES]
    assert len(templates) == len(set(templates))
    assert not set(templates) & set(fixed_bodies("functions"))
    assert not set(TEMPLATES) & set(fixed_bodies("modules"))


def test_the_bodies_files_are_package_data() -> None:
    """pyproject's package data covers every ``.ir`` file, so an installed wheel has them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["compiler.known"]
    files = sorted(p.relative_to(BODIES.parent).as_posix() for p in BODIES.rglob("*.ir"))
    assert files
    assert all(any(fnmatch.fnmatch(f, pattern) for pattern in patterns) for f in files)


def test_outside_the_package_only_the_front_door_is_imported() -> None:
    """compiler/, vm/, tools/ and tests/ import ``compiler.known`` itself, never one of its
    modules (this file excepted: it tests the package's inside)."""
    inside = {f"compiler.known.{p.stem}" for p in (ROOT / "compiler" / "known").glob("*.py")} - {
        "compiler.known.__init__"
    }
    offenders = []
    for folder in ("compiler", "vm", "tools", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.is_relative_to(ROOT / "compiler" / "known") or path == Path(__file__).resolve():
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = []
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                if any(n in inside for n in names):
                    offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
