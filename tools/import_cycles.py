"""Import cycles between irvm's packages, counting imports inside functions too.

    python tools/import_cycles.py [ROOT]

Reads every module of ``compiler/`` and ``vm/`` with ``ast`` (nothing is imported),
draws an edge for each ``import``/``from ... import`` of another irvm module wherever it
stands (module level, inside a function, or under ``if TYPE_CHECKING``: a type-level
import is a dependency too, of the reader if not of the interpreter; a package whose ``__init__`` imports
its modules by name from a ``FAMILIES`` tuple, as ``vm.ops`` does, to each of them), and prints the strongly connected
components with more than one module: each is a set of modules that import each other,
directly or not.  ``vm`` below ``compiler`` means no component mixes the two packages.

``import_graph(root)`` and ``cycles(graph)`` are what ``tests/project/test_layering.py``
asserts on.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGES = ("compiler", "vm")


def module_names(root: Path) -> dict[str, Path]:
    names: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            names[".".join(parts)] = path
    return names


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The irvm modules ``name`` imports anywhere in its source."""
    found: set[str] = set()
    is_package = path.name == "__init__.py"
    source = path.read_text()
    tree = ast.parse(source, str(path))
    if is_package:  # FAMILIES = ("dicts", "nn.conv", ...): modules imported by importlib
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "FAMILIES" for t in node.targets):
                found.update(f"{name}.{m}" for m in ast.literal_eval(node.value) if f"{name}.{m}" in known)
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join([*parent, base] if base else parent)
            # `from pkg import sub` imports the submodule; the package only when a name of
            # it is imported (its __init__ runs either way, but its lazy imports do not)
            subs = [f"{base}.{alias.name}" for alias in node.names]
            targets = subs if all(t in known for t in subs) else [*subs, base]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: list[list[str]] = []
    counter = 0
    for start, edges_of_start in graph.items():
        if start in index:
            continue
        work = [(start, iter(sorted(edges_of_start)))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.append(member)
                    if member == node:
                        break
                result.append(sorted(comp))
    return result


def import_graph(root: Path) -> dict[str, set[str]]:
    """Each irvm module under ``root`` -> the irvm modules it imports anywhere."""
    known = module_names(root)
    return {name: imports_of(name, path, known) for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The sets of modules that import each other (directly or not), largest first."""
    return sorted((c for c in components(graph) if len(c) > 1), key=len, reverse=True)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent
    graph = import_graph(root)
    known = graph
    cycles_found = cycles(graph)
    mixed = [c for c in cycles_found if {m.split(".")[0] for m in c} == set(PACKAGES)]
    print(f"{len(known)} modules, {sum(len(v) for v in graph.values())} imports")
    print(f"{len(cycles_found)} import cycles; largest {len(cycles_found[0]) if cycles_found else 0} modules; "
          f"{sum(len(c) for c in mixed)} modules in cycles that mix compiler and vm")
    for comp in cycles_found:
        print(f"  {len(comp)}: {', '.join(comp)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
