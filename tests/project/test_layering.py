"""The layering of the packages, read from the imports themselves (``tools/import_cycles.py``:
every ``import`` in ``compiler/`` and ``vm/``, inside functions too, drawn with ``ast``).

- no import cycle between modules (issue #18's bar);
- ``vm/`` stands below ``compiler/``: outside ``vm/static/``, only the front door
  (``vm/api/``, which compiles ``.pt`` and ``.ir`` files for ``vm.load``, IR text and the
  specialization for the weights for ``vm.StaticRuntime``) and the server on top of it import
  anything from ``compiler`` (issue #15); the command line opens models through the front
  door and imports none (issue #37);
- ``vm/static/``, which runs the IR itself, reads the compiler's IR data model and
  analyses (the model, its parser, the tables a program carries, overload resolution,
  fusion specs), never the compiler's front door (``compiler``, ``compiler.cli``), a pass,
  the pipeline or the emitter: it compiles nothing (issue #37: IR text and a program
  compiled without its weights are the front door's work, ``vm/api/static.py``).

Each rule is a plain test of the rule itself, with the few entry points it allows named
(the exceptions once listed here are gone), so a new cycle or a new import fails at once.
"""

from __future__ import annotations

import sys

from tests.support.paths import ROOT, TOOLS

sys.path.insert(0, str(TOOLS))
import import_cycles

GRAPH = import_cycles.import_graph(ROOT)

VM_ROOMS_TO_COMPILER = (
    "vm.api.",  # the front door: vm.load compiles .pt and .ir files, vm.StaticRuntime IR text and specializes
    "vm.serve.",  # irvm serve sits on top of both packages (it opens models through vm.load)
)

STATIC_MAY_READ = {
    "compiler.ir", "compiler.parser", "compiler.program_tables", "compiler.resolve", "compiler.fusion_spec",
}
STATIC_MAY_READ_PACKAGES = ("compiler.analysis.",)
# what compiles: the compiler's front door and command line, the pipeline, the passes, the emitter
COMPILING = ("compiler", "compiler.cli", "compiler.pipeline", "compiler.emit")
COMPILING_PACKAGES = ("compiler.passes", "compiler.torchscript")



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


def _static_beyond_the_data_model() -> set[tuple[str, str]]:
    return {
        (name, target)
        for name, target in _vm_imports_of_compiler()
        if name.startswith("vm.static.")
        and target not in STATIC_MAY_READ
        and not target.startswith(STATIC_MAY_READ_PACKAGES)
    }


def test_the_graph_is_read() -> None:
    """The import graph has the modules and edges it must have (the tool reads the tree)."""
    assert {"compiler.emit", "vm.interpreter.machine", "vm.static.module_ir", "vm.ops.nn.conv"} <= GRAPH.keys()
    assert "vm.program.bytecode" in GRAPH["compiler.emit"] and "compiler.ir" in GRAPH["vm.static.module_ir"]
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


def test_the_vm_imports_the_compiler_only_in_the_static_runtime_and_the_front_door() -> None:
    """Outside vm/static/, vm/api/ and vm/serve/, no vm module imports a compiler module (a
    function-level import counts): not the command line, which opens models with ``vm.load``."""
    outside = {(n, t) for n, t in _vm_imports_of_compiler() if not n.startswith("vm.static.")}
    assert {(n, t) for n, t in outside if not n.startswith(VM_ROOMS_TO_COMPILER)} == set()
    assert not any(_is_compiler(t) for t in GRAPH["vm.cli"])


def test_the_static_runtime_reads_only_the_data_model() -> None:
    """vm/static/ imports from compiler only the IR data model and analyses: no compile, no
    pass, no pipeline, no front door of the compiler (the exception once listed here, IR text
    compiled by ``module_ir.compile_text``, and ``compiler.specialize`` called at construction,
    moved to the front door, ``vm/api/static.py``)."""
    assert _static_beyond_the_data_model() == set()
    compiling = {
        (n, t) for n, t in _vm_imports_of_compiler() if n.startswith("vm.static.")
        and (t in COMPILING or t.startswith(COMPILING_PACKAGES))
    }
    assert compiling == set()


def test_the_rules_name_modules_that_exist() -> None:
    """The modules the rules above name are in the graph (a renamed module would make a rule vacuous)."""
    named = {*STATIC_MAY_READ, "compiler", "compiler.cli", "compiler.pipeline", "compiler.emit", "vm.cli", "vm.api.static"}
    assert named <= GRAPH.keys()


def test_the_compiler_never_imports_the_vm_package_or_its_command_line() -> None:
    """A compiler module names the vm modules it uses: the ``vm`` package would bring the
    static runtime (which imports the compiler) and vm.cli the compiler's command line."""
    wrong = {
        (n, t) for n, targets in GRAPH.items() if _is_compiler(n) for t in targets
        if t in ("vm", "vm.cli") or t.startswith(VM_ROOMS_TO_COMPILER)
    }
    assert wrong == set()


def test_str_of_a_module_prints_it_though_ir_does_not_import_the_printer() -> None:
    """``compiler.ir`` has no import of ``compiler.printer``, yet ``str(module)`` is the
    printed module in a fresh process that imports only ``compiler.ir`` (the ``compiler``
    package registers the printer)."""
    import subprocess

    assert "compiler.printer" not in GRAPH["compiler.ir"]
    code = (
        "from compiler.ir import Graph, Module\n"
        "print(str(Module(main=Graph())))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.startswith("graph(")


def test_nothing_below_the_server_imports_it() -> None:
    """vm/serve/ is the top of the tree: outside it only the command line (``irvm serve``)
    imports it, so the runtime, the front door and the compiler never load starlette or Ray."""
    users = {n for n, targets in GRAPH.items() for t in targets if t == "vm.serve" or t.startswith("vm.serve.")}
    assert {n for n in users if not n.startswith("vm.serve")} == {"vm.cli"}
