"""The layering of the packages, read from the imports themselves (``tools/import_cycles.py``:
every ``import`` in ``compiler/`` and ``vm/``, inside functions too, drawn with ``ast``).

- no import cycle between modules (issue #18's bar);
- ``vm/`` stands below ``compiler/``: outside the front door (``vm/api/``, which compiles
  ``.pt`` and ``.ir`` files for ``vm.load``, IR text and the specialization for the weights for
  ``vm.StaticRuntime``) and the server on top of it (``vm/serve/``), no ``vm`` module imports
  anything from ``compiler`` (issue #37: the runtimes execute; the IR they read is the ground
  floor's, ``vm/ir/``), not even the command line, which opens models through the front door;
- the ground floor ``vm/ir/`` imports only the floor below it: ``vm/core``, the operator
  registry ``vm/ops`` and the plain records its values are made of.

Each rule is a plain test of the rule itself, so a new cycle or a new import fails at once.
"""

from __future__ import annotations

import sys

from tests.support.paths import ROOT, TOOLS

sys.path.insert(0, str(TOOLS))
import import_cycles

GRAPH = import_cycles.import_graph(ROOT)

VM_ROOMS_TO_COMPILER = (
    "vm.api.",  # the front door: vm.load compiles .pt and .ir files
    "vm.serve.",  # irvm serve sits on top of both packages, as vm/cli.py does (it opens models through vm.load)
)
VM_ENTRIES_TO_COMPILER: set[str] = set()  # the command line opens models through the front door

# What the ground floor may import besides itself: the floor below it.
IR_MAY_IMPORT = ("vm.core.", "vm.ops", "vm.binding.unbound", "vm.fusion.kernels")



def _is_compiler(module: str) -> bool:
    return module == "compiler" or module.startswith("compiler.")


def _vm_imports_of_compiler() -> set[tuple[str, str]]:
    return {
        (name, target)
        for name, targets in GRAPH.items()
        if name == "vm" or name.startswith("vm.")
        for target in targets
        if _is_compiler(target)
    }


def test_the_graph_is_read() -> None:
    """The import graph has the modules and edges it must have (the tool reads the tree)."""
    assert {"compiler.emit", "vm.interpreter.machine", "vm.static.module_ir", "vm.ops.nn.conv"} <= GRAPH.keys()
    assert "vm.program.bytecode" in GRAPH["compiler.emit"] and "vm.ir.graph" in GRAPH["vm.static.module_ir"]
    assert "vm.ops.nn.conv" in GRAPH["vm.ops"]  # a package that imports its families


def test_no_import_cycle_at_all() -> None:
    """No two modules import each other, directly or not (a function-level import counts,
    and so does one under ``if TYPE_CHECKING``)."""
    assert import_cycles.cycles(GRAPH) == []


def test_a_type_level_import_is_an_edge(tmp_path) -> None:
    """An import under ``if TYPE_CHECKING`` is drawn like any other (issue #30: the
    type-level cycles interpreter <-> reference and static/module <-> static/plan hid there)."""
    package = tmp_path / "vm"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from vm.b import B\n")
    (package / "b.py").write_text("from vm.a import A\n")
    (tmp_path / "compiler").mkdir()
    graph = import_cycles.import_graph(tmp_path)
    assert "vm.b" in graph["vm.a"] and import_cycles.cycles(graph) != []


def test_no_vm_module_below_the_front_door_imports_the_compiler() -> None:
    """Outside vm/cli.py, vm/api/ and vm/serve/, no vm module imports a compiler module (a
    function-level import counts, and so does one under ``if TYPE_CHECKING``): the
    interpreter, the static runtime and everything they stand on read the program as data."""
    below = {
        (n, t) for n, t in _vm_imports_of_compiler()
        if n not in VM_ENTRIES_TO_COMPILER and not n.startswith(VM_ROOMS_TO_COMPILER)
    }
    assert below == set()


def test_the_ground_floor_imports_only_the_floor_below() -> None:
    """vm/ir/ imports itself, vm/core, the operator registry and its plain records, and
    nothing of the compiler, the runtimes or the front door."""
    wrong = {
        (n, t) for n, targets in GRAPH.items() if n == "vm.ir" or n.startswith("vm.ir.") for t in targets
        if not (t == "vm.ir" or t.startswith("vm.ir.") or t == "vm.core" or t.startswith(IR_MAY_IMPORT))
    }
    assert wrong == set()


def test_the_compiler_never_imports_the_vm_package_or_its_command_line() -> None:
    """A compiler module names the vm modules it uses: the ``vm`` package would bring the
    static runtime (which imports the compiler) and vm.cli the compiler's command line."""
    wrong = {
        (n, t) for n, targets in GRAPH.items() if _is_compiler(n) for t in targets
        if t in ("vm", "vm.cli") or t.startswith(VM_ROOMS_TO_COMPILER)
    }
    assert wrong == set()


def test_str_of_a_module_prints_it_though_ir_does_not_import_the_printer() -> None:
    """``vm.ir.graph`` has no import of ``vm.ir.printer``, yet ``str(module)`` is the
    printed module in a fresh process that imports only ``vm.ir.graph`` (the ``vm.ir``
    package registers the printer)."""
    import subprocess

    assert "vm.ir.printer" not in GRAPH["vm.ir.graph"]
    code = (
        "from vm.ir.graph import Graph, Module\n"
        "print(str(Module(main=Graph())))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.startswith("graph(")


def test_nothing_below_the_server_imports_it() -> None:
    """vm/serve/ is the top of the tree: outside it only the command line (``irvm serve``)
    imports it, so the runtime, the front door and the compiler never load starlette or Ray."""
    users = {n for n, targets in GRAPH.items() for t in targets if t == "vm.serve" or t.startswith("vm.serve.")}
    assert {n for n in users if not n.startswith("vm.serve")} == {"vm.cli"}


# the fields that make a class a copy of the IR's Node, Block or Value (vm/ir/graph.py)
IR_SHAPES = {
    "Node": {"kind", "inputs", "outputs", "blocks"},
    "Block": {"params", "nodes", "returns", "owner"},
    "Value": {"name", "type", "uses"},
}


def test_no_module_redeclares_the_ir() -> None:
    """Only vm/ir/graph.py declares classes shaped like the IR's Node, Block and Value: no
    room keeps a shadow of the data model (as vm/program/check_graph.py's records were)."""
    import ast

    found = []
    for top in ("compiler", "vm"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if path == ROOT / "vm" / "ir" / "graph.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not isinstance(node, ast.ClassDef):
                    continue
                fields = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
                found += [(str(path.relative_to(ROOT)), node.name, like) for like, shape in IR_SHAPES.items() if shape <= fields]
    assert found == []
    graph = (ROOT / "vm" / "ir" / "graph.py").read_text()
    assert all(f"class {name}:" in graph for name in IR_SHAPES)  # the rule reads the real model


def test_the_rules_name_modules_that_exist() -> None:
    """The modules the rules above name are in the graph (a renamed module would make a rule vacuous)."""
    assert {"compiler", "compiler.cli", "compiler.pipeline", "compiler.emit", "vm.cli", "vm.api.static", "vm.ir.graph"} \
        <= GRAPH.keys()
