"""The operator registry as the one place an operator is declared (vm/ops/registry.py).

Three promises are held here: overload order (which decides ties) is a rule, so importing
the families in another order gives the same order and the same facts for every operator;
an operator registered the old way (``@kernel``, ``register_op``, ``@k.out``,
``@prepares``) reaches every table derived from the registry; and the facts of every
registered operator are complete and agree with each other (an ``out=`` overload's schema
is its functional schema plus ``out``, a switch names a real argument, a fusion table
names an elementwise overload).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import compiler
from vm.ir.resolve import resolve
from vm.ops import FAMILIES, facts, prepared, registry
from vm.ops._out_schemas import OUT_SCHEMAS
from vm.ops.registry import FALLBACK, Fact, OpRef, kernel, register_op

ROOT = Path(__file__).resolve().parents[2]

# Imports the families in the order given on argv without running vm/ops/__init__.py (a
# bare package object stands in), then prints every operator's overload order and facts.
_PROBE = """
import importlib, json, sys, types
root = sys.argv[1]
pkg = types.ModuleType("vm.ops")
pkg.__path__ = [root + "/vm/ops"]
sys.modules["vm.ops"] = pkg
for name in sys.argv[2:]:
    importlib.import_module("vm.ops." + name)
from vm.ops import registry
print(json.dumps({
    name: [[i.name, i.facts.value, i.out is not None, i.prepare is not None, i.pure, i.elementwise,
            i.priority, i.out_of, list(map(list, i.draws_unless)), i.module]
           for i in registry.overloads(name)]
    for name in sorted(registry.kinds())
}))
"""


def _probe(order: list[str]) -> dict[str, list[list[object]]]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(ROOT), *order],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("how", ["reversed", "shuffled"])
def test_overload_order_and_facts_do_not_depend_on_import_order(how: str) -> None:
    """Importing the families reversed (fallbacks first, then every family) or shuffled
    gives every operator the same overloads, in the same order, with the same facts,
    out variants, prepared forms and out= overloads as the package's own order."""
    order = list(reversed(FAMILIES))
    if how == "shuffled":
        np.random.default_rng(30).shuffle(order)
    assert order != list(FAMILIES)
    got = _probe(order)
    want = _probe(list(FAMILIES))  # the package's own order, in a fresh process too (no test's custom ops)
    assert got.keys() == want.keys()
    changed = [name for name in want if got[name] != want[name]]
    assert changed == [], changed[:5]


def test_overload_order_is_priority_then_specificity() -> None:
    """The rule: a fallback comes after every other overload; among equals the schema with
    fewer generic (Scalar/Any/type-variable/optional) arguments comes first."""
    for name in registry.kinds():
        infos = registry.overloads(name)
        prios = [-i.priority for i in infos]
        assert prios == sorted(prios), name
    add = [i.name for i in registry.overloads("aten::add")]
    assert add.index("aten::add.int") < add.index("aten::add") < add.index("aten::add.t")
    assert add.index("aten::add.Tensor") < add.index("aten::add.out")


@pytest.fixture
def scratch_ops():
    """Operators registered by a test, removed after it (namespace ``irvm_test::``)."""
    made: list[str] = []
    yield made
    for name in made:
        if registry.find(name) is not None:
            registry.unregister(name)


def test_an_operator_registered_the_old_way_reaches_every_derived_table(scratch_ops: list[str]) -> None:
    """``@kernel`` + ``@k.out`` + ``@prepares`` and a bare ``register_op``, exactly as the
    families wrote them before: lookup, overload order, bind/bind_out, the facts, the live
    kind sets, the prepared forms and the compiler's overload resolution all see them."""

    @kernel("irvm_test::twice(Tensor self) -> Tensor", elementwise=True)
    def twice(x: np.ndarray) -> np.ndarray:
        return x * 2

    @twice.out
    def twice_out(out: np.ndarray, x: np.ndarray) -> np.ndarray:
        return np.multiply(x, 2, out=out)

    @prepared.prepares("irvm_test::twice")
    def _twice_prepared(known, kernel_, out):  # noqa: ANN001, ANN202
        return lambda x: kernel_(x) + 0

    register_op("irvm_test::shout(str s) -> ()", lambda s: None, pure=False)
    scratch_ops += ["irvm_test::twice", "irvm_test::shout"]

    info = registry.lookup("irvm_test::twice")
    assert [i.name for i in registry.overloads("irvm_test::twice")] == ["irvm_test::twice"]
    x = np.arange(3.0)
    ref = OpRef("irvm_test::twice", 1, 1)
    assert list(registry.bind(ref)(x)) == [0, 2, 4]
    buf = np.empty(3)
    out = registry.bind_out(ref)
    assert out is not None and out(buf, x) is buf and list(buf) == [0, 2, 4]
    assert {Fact.ELEMENTWISE, Fact.OUT_VARIANT} <= {f for f in Fact if f in facts.op_facts(info.name)}
    assert Fact.EFFECT in facts.op_facts("irvm_test::shout")
    register_op("irvm_test::rank(Tensor self) -> int", lambda x: x.ndim, facts=Fact.SHAPE_QUERY)
    scratch_ops.append("irvm_test::rank")
    assert "irvm_test::rank" in facts.SHAPE_QUERIES  # the kind sets are live views
    forms = prepared.prepared(ref, [prepared.UNKNOWN], info.kernel, info.out)
    assert forms is not None and list(forms.kernel(x)) == [0, 2, 4]
    module = compiler.parse("graph(%x : Tensor):\n  %y : Tensor = irvm_test::twice(%x)\n  return (%y)\n")
    node = next(n for n in module.main.walk() if n.kind == "irvm_test::twice")
    assert resolve(node).name == "irvm_test::twice"


def test_a_fallback_stands_aside_whichever_registers_first(scratch_ops: list[str]) -> None:
    """``priority=FALLBACK`` registrations are replaced by a real one made later, and do
    not replace one made earlier (what made ``nn.fallbacks`` depend on import order)."""
    scratch_ops += ["irvm_test::mode", "irvm_test::flag"]
    register_op("irvm_test::mode() -> bool", lambda: False, priority=FALLBACK)
    register_op("irvm_test::mode() -> bool", lambda: True)
    register_op("irvm_test::flag() -> bool", lambda: True)
    register_op("irvm_test::flag() -> bool", lambda: False, priority=FALLBACK)
    assert registry.lookup("irvm_test::mode").kernel() is True
    assert registry.lookup("irvm_test::flag").kernel() is True
    with pytest.raises(ValueError, match="already registered"):
        register_op("irvm_test::flag() -> bool", lambda: False)


def test_one_kernel_registers_several_schemas(scratch_ops: list[str]) -> None:
    """``@kernel(a, b)``: one function under both overloads, ``.out`` given to both; the
    convolution family registers ``convolution``, ``_convolution`` and its deprecated
    overload with one kernel."""

    @kernel("irvm_test::pad(Tensor self) -> Tensor", "irvm_test::pad.flag(Tensor self, bool flag) -> Tensor")
    def pad(x: np.ndarray, *_flags: bool) -> np.ndarray:
        return x + 1

    pad.out(lambda out, x, *_: np.add(x, 1, out=out))
    scratch_ops += ["irvm_test::pad", "irvm_test::pad.flag"]
    one, two = registry.lookup("irvm_test::pad"), registry.lookup("irvm_test::pad.flag")
    assert one.kernel is two.kernel and one.out is two.out and one.out is not None
    conv = {registry.lookup(q).kernel for q in ("aten::convolution", "aten::_convolution", "aten::_convolution.deprecated")}
    assert len(conv) == 1


def test_out_overloads_are_their_functional_schema_plus_out() -> None:
    """Every out= overload derived from PyTorch's schema takes the functional overload's
    arguments (names, types, defaults) then ``Tensor(a!) out`` and returns it aliased;
    every registered functional with such a schema has its out= overload."""
    derived = [i for i in registry.all_ops() if i.out_of is not None]
    assert len(derived) > 250
    for info in derived:
        functional = registry.lookup(info.out_of)
        args = info.schema.arguments
        assert [(a.name, a.type) for a in args[:-1]] == [(a.name, a.type) for a in functional.schema.arguments], info.name
        assert args[-1].name == "out" and args[-1].alias == "a!" and info.schema.returns[0].alias == "a!"
        assert info.pure == functional.pure and info.priority == FALLBACK
    for functional, text in OUT_SCHEMAS.items():
        if registry.find(functional) is not None:
            assert registry.find(registry.parse_schema(text).qualified) is not None, text


def test_declared_facts_are_complete_and_consistent() -> None:
    """No declaration waits for an overload that never registered; a switch names an
    argument of its schema; a registration declares only kind-level facts (the per-overload
    ones come from the schema and the registration's flags); a random kind is impure unless
    its draws have switches; a fusion table names an elementwise overload with an out
    variant."""
    from vm.fusion import numba_backend, plan

    assert registry.pending() == {}
    derived_only = Fact.ELEMENTWISE | Fact.OUT_VARIANT | Fact.MUTATES | Fact.VIEW
    for info in registry.all_ops():
        names = [a.name for a in info.schema.arguments]
        assert all(name in names for name, _ in info.draws_unless), info.name
        if info.writes_unless is not None:
            switch, _, written = info.writes_unless
            assert switch in names and set(written) <= set(names), info.name
        assert not info.facts & derived_only, info.name
        if Fact.RANDOM in info.facts:
            assert (not info.pure) or info.draws_unless, info.name
    tables = (plan.BINARY_UFUNCS, plan.COMPARE_UFUNCS, plan.FLOAT_UNARY, numba_backend.EXPRESSIONS)
    for name in {*numba_backend.WHERE}.union(*tables):
        info = registry.find(name)
        assert info is not None and info.elementwise and info.out is not None, name
