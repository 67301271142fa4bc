"""The operator registry: one entry per overload holding everything irvm knows about it.

An operator is declared in one place, the registration in its family module::

    @kernel(
        "aten::relu(Tensor self) -> Tensor",
        elementwise=True,                      # a pointwise map: fusion may group it
    )
    def relu(x): ...

    @relu.out                                  # writes into a given buffer and returns it
    def relu_out(out, x): ...

    @relu.prepare                              # work its constant arguments decide, done once
    def relu_prepared(known, kernel, out): ...  (``vm.ops.prepared`` says what it promises)

What a registration may declare (``register_op``'s keywords; ``@kernel`` takes the same):
the schema (several schemas for one kernel: ``@kernel(text1, text2)``, the kernel taking
the longest argument list, with ``*rest`` for trailing arguments it ignores), the out
variant (``out=`` or ``@k.out``), the prepared form (``prepare=`` or ``@k.prepare``),
``pure`` (False: print, raise, random), ``elementwise``, kind-level ``facts`` no schema
states (``Fact.SHAPE_QUERY``, ``DATA_DEPENDENT_SHAPE``...), ``draws_unless`` / ``writes_unless``
(random draws or writes that a constant argument switches off), ``priority``
(``FALLBACK`` registers only what nothing else registers), and the facts of an operator
that reads weights: ``dtypes=DtypeRule(...)`` (the tensor arguments PyTorch's kernel takes
of one dtype), ``weights=Weights(...)`` (where a convolution or linear layer keeps its
weight and bias, and which weight passes and inferences apply to it) and
``weight_shapes=WeightShapes(...)`` (the sizes a weight must share with the values the
graph declares); and ``fast=(FastCall(...),)``, the bare numpy call the static runtime may
make in its place once a plan shows float operands of one dtype.  Mutation and aliasing come
from the schema's ``(a!)`` / ``(a)`` annotations.  PyTorch's ``out=`` overload of a
functional overload (``aten::relu.out``) is registered with it, from PyTorch's schema
(``vm.ops._out_schemas``), running the functional's out variant.

Every table the passes, the runtimes and fusion read is a query over these entries:
``lookup``, ``overloads``, ``all_ops``, ``declared_facts``, ``bind``/``bind_out`` here,
``vm.ops.facts`` (per-overload and per-kind facts, the weight facts by kind),
``vm.ops.prepared.prepared``.

Overload order, which decides a tie when two overloads fit a node equally well, is a rule
and not the order modules happen to be imported in: higher ``priority`` first, then the
more specific schema (``schema.generality``: fewer ``Scalar``/``Any``/type-variable/
optional arguments), then the registering module's name and the order within it.

Calling convention (shared by the interpreter and the static runtime): a kernel takes
every schema argument positionally, in schema order, defaults already filled in by the
compiler; it returns one value, or a tuple when the schema has several returns.  Tensors
are numpy arrays (0-dim tensors are 0-dim arrays, never numpy scalars), ``int``/``float``/
``bool`` are Python scalars, ``ScalarType`` is PyTorch's integer code (6 = float32),
``Device`` a string such as ``"cpu"``, lists are Python lists and tuples Python tuples.

The table is full whenever this module can be used: it lives inside ``vm.ops``, and
Python runs a package's ``__init__`` (which imports every family, ``vm.ops.FAMILIES``)
before any module of it, so the registry never imports the kernels itself.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable
from typing import Any

import attrs

from vm.ops._common import copy_out
from vm.ops._out_schemas import OUT_SCHEMAS
from vm.ops.schema import MISSING, Argument, Schema, generality, parse_schema

__all__ = ["CHANNEL", "MISSING", "Argument", "DtypeRule", "Fact", "FastCall", "OpInfo", "OpRef", "Schema", "WeightShapes",
           "Weights", "bind", "bind_out", "kernel", "lookup", "overloads", "parse_schema", "register_op"]

FALLBACK = -100  # priority of a registration that stands aside for any other


class Fact(enum.Flag):
    """One fact about an operator or node kind; a kind's facts are an or of these."""

    NONE = 0
    PURE = enum.auto()  # no side effect, whatever the registry says: removable, movable
    EFFECT = enum.auto()  # always a side effect: never removed, merged or moved
    ALIASING = enum.auto()  # outputs are (or contain) inputs rather than fresh values
    CONTROL = enum.auto()  # no operator entry: the emitter and the runtimes handle the node
    SUBGRAPH = enum.auto()  # runs other IR (blocks, a callee, a fusion group's subgraph)
    CONTAINER = enum.auto()  # packs, unpacks or casts containers: computes no new data
    SHAPE_QUERY = enum.auto()  # reads a tensor's metadata (size, dtype...), not its contents
    DATA_DEPENDENT_SHAPE = enum.auto()  # the result's shape depends on tensor contents
    SHAPE_ONLY_LIST = enum.auto()  # a list of pieces whose number and shapes follow from shapes
    SIMPLE_MAP = enum.auto()  # PyTorch's isSimpleMap by kind: fusible when no overload is known
    RANDOM = enum.auto()  # draws from the runtime's generator (always, or unless draws_unless holds)
    TAKES_EPILOGUE = enum.auto()  # returns a fresh tensor an EPILOGUE activation may overwrite in place
    EPILOGUE = enum.auto()  # a unary activation keeping shape and dtype: may run in place on such a result
    # per overload, from the registration
    ELEMENTWISE = enum.auto()  # a pointwise map: fusion may group it; output may reuse an operand
    OUT_VARIANT = enum.auto()  # has out(buffer, *args): the memory planner may hand it a buffer
    MUTATES = enum.auto()  # writes an argument annotated (a!)
    VIEW = enum.auto()  # a return annotated (a): may share memory with an argument


CHANNEL = 99  # a value axis in WeightShapes: a convolution's channels, the axis before its spatial ones


@attrs.frozen
class DtypeRule:
    """The tensor arguments PyTorch's kernel takes of one dtype only: a float64 image fed to
    a float32 convolution raises "expected scalar type Double but found Float", where numpy
    would promote.  ``vm.binding.preflight`` refuses such a mix before the run.

    ``same``: their positions (the first is the data; a ``Tensor[]`` position stands for
    its items); ``cpu_norm``: PyTorch's CPU norms, which take a float16 input with float32
    parameters and refuse other mixes as "mixed dtype (CPU)"; ``indices``: the position of
    an index tensor that must hold integers (an embedding's)."""

    same: tuple[int, ...] = ()
    cpu_norm: bool = False
    indices: int | None = None


@attrs.frozen
class Weights:
    """Where a layer operator (a convolution, a linear) keeps the weight it applies to its
    input, and what the passes and checks that read weights may do with it.

    ``weight``/``bias``: argument positions (``bias`` None: none); ``out_axis`` / ``in_axis``:
    the weight's axes of output and input channels (features; per group with ``groups``);
    ``features_last``: the weight maps the input's last axis to the result's last axis (a
    linear: a 2-d weight keeps the input's rank), else channels sit on axis 1, before the
    spatial axes (a convolution, ``(N, C, *spatial)``); ``groups`` / ``transposed``:
    positions of the ``groups`` argument and of a ``transposed`` flag (the facts here hold
    when it is False); ``rank``: the rank of a batched input the operator fixes (conv2d: 4),
    None when the weight's rank says it (or, features last, any rank).

    What may be done with it: ``folds_batch_norm``, an eval BatchNorm after it folds into
    its weight and bias (``compiler.passes.fold_batch_norm``: scaled along ``out_axis``,
    which must be 0); ``transposed_weight``, its kernel multiplies by ``weight.T``, so a
    small weight is worth storing column-major (``compiler.passes.fold_transposed_weights``);
    ``infers_input``, a scripted model's input read straight by it takes the weight's dtype
    and, for a convolution, its rank and (``groups`` 1) channels (``vm.api.signature``)."""

    weight: int = 1
    bias: int | None = 2
    out_axis: int = 0
    in_axis: int = 1
    features_last: bool = False
    groups: int | None = None
    transposed: int | None = None
    rank: int | None = None
    folds_batch_norm: bool = False
    transposed_weight: bool = False
    infers_input: bool = False


@attrs.frozen
class WeightShapes:
    """Sizes a weight shares with the values at its use, checked against the sizes a traced
    graph declares (``vm.binding.weight_checks``: weights of another model are refused as
    ``load_state_dict`` refuses them).  ``weight``: its argument position; ``checks``:
    ``(side, value axis, weight axis)`` with side ``"in"`` (input 0) or ``"out"`` (output
    0) and ``CHANNEL`` for a convolution's channel axis."""

    weight: int
    checks: tuple[tuple[str, int, int], ...]


@attrs.frozen
class FastCall:
    """A bare numpy call the static runtime may make in place of the kernel once a plan
    shows it float tensors of one dtype and constant numbers (``vm.static.fastpath``): for
    those operands the kernel computes exactly ``call``, so the bits are the kernel's.

    ``call(*operands, out=None)``: a ufunc or a function called as one; ``operands``, in
    order: an argument position (a tensor, or a constant number), ``("s", c)`` a constant
    the call adds (relu's 0), ``("c", i)`` argument ``i``, which must be a constant number;
    ``required``: ``(position, int)`` constants the node must have (``alpha=1``); ``none``:
    positions whose constant must be None (a clamp with one bound); ``matrices``: a
    product of matrices (a linear's), called only where the plan fixes the shapes and they
    are 2-d, 2-d, 1-d of matching sizes.  A registration declares alternatives in order;
    the first whose constants fit is the one tried."""

    call: Callable[..., Any]
    operands: tuple[Any, ...]
    required: tuple[tuple[int, Any], ...] = ()
    none: tuple[int, ...] = ()
    matrices: bool = False


# fn(known, kernel, out) -> a prepared kernel, Forms, or None (vm.ops.prepared)
Preparer = Callable[..., Any]
Switches = tuple[tuple[str, Any], ...]


@attrs.frozen
class OpInfo:
    """One registered overload and everything declared with it."""

    schema: Schema
    kernel: Callable[..., Any]
    out: Callable[..., Any] | None = None  # out(out_buffer, *args) -> out_buffer
    pure: bool = True  # no side effect beyond what the schema's (a!) annotations say
    elementwise: bool = False  # a pointwise map the fusion pass may group
    facts: Fact = Fact.NONE  # kind-level facts no schema states (SHAPE_QUERY...)
    prepare: Preparer | None = None  # the construction-time form (vm.ops.prepared)
    prepare_tensors: bool = False  # the preparer sees constant arrays (bound weights)
    priority: int = 0
    draws_unless: Switches = ()  # random unless one (argument, value) switch holds
    writes_unless: tuple[str, Any, tuple[str, ...]] | None = None  # (switch, off value, written)
    out_of: str | None = None  # for a derived out= overload: the functional overload it writes
    dtypes: DtypeRule | None = None  # arguments its kernel takes of one dtype (vm.binding.preflight)
    weights: Weights | None = None  # where a layer keeps its weight; what weight passes may do
    weight_shapes: WeightShapes | None = None  # sizes its weight shares with its values
    fast: tuple[FastCall, ...] = ()  # bare numpy calls the static runtime may make instead
    module: str = ""  # the registering module (overload order, diagnostics)

    @property
    def name(self) -> str:
        return self.schema.qualified


_REGISTRY: dict[str, OpInfo] = {}
_BY_NAME: dict[str, list[str]] = {}
_ORDER: dict[str, tuple[Any, ...]] = {}
_SEQ: dict[str, int] = {}  # registrations so far per module
_PENDING: dict[str, dict[str, Any]] = {}  # declarations made before their overload registered
_VERSION = [0]
_KIND_FACTS: dict[str, Fact] = {}  # declared_facts, cleared by every registration


class _Registered:
    """What ``@kernel`` returns: the function, plus ``.out`` and ``.prepare`` to declare its
    out variant and prepared form (for every schema it registered)."""

    def __init__(self, fn: Callable[..., Any], qualified: str, also: tuple[str, ...] = ()):
        self._fn = fn
        self.qualified = qualified
        self.names = (qualified, *also)
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", qualified)
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args: Any) -> Any:
        return self._fn(*args)

    def out(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in self.names:
            declare(name, out=fn)
        return fn

    def prepare(self, fn: Preparer) -> Preparer:
        for name in self.names:
            declare(name, prepare=fn)
        return fn


def _caller_module() -> str:
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    return "" if frame is None else str(frame.f_globals.get("__name__", ""))


def register_op(
    schema: str,
    fn: Callable[..., Any],
    *,
    out: Callable[..., Any] | None = None,
    pure: bool = True,
    elementwise: bool = False,
    replace: bool = False,
    **declared: Any,
) -> OpInfo:
    """Register an operator from its schema text and a kernel; the public custom-op API.
    ``declared``: any other ``OpInfo`` field (``facts``, ``prepare``, ``priority``...)."""
    parsed = parse_schema(schema)
    q = parsed.qualified
    old = _REGISTRY.get(q)
    priority = declared.get("priority", 0)
    if old is not None and not replace:
        if priority == FALLBACK:
            return old  # a fallback stands aside
        if old.priority != FALLBACK:
            raise ValueError(f"operator {q} is already registered")
    declared.setdefault("module", _caller_module())
    info = OpInfo(parsed, fn, out, pure, elementwise, **declared)
    info = attrs.evolve(info, **_PENDING.pop(q, {}))
    _store(info)
    _derive_out_overload(info)
    return info


def _store(info: OpInfo) -> None:
    q = info.name
    _REGISTRY[q] = info
    old = _ORDER.get(q)
    if old is not None and old[2] == info.module:
        seq = old[3]
    else:
        seq = _SEQ[info.module] = _SEQ.get(info.module, -1) + 1
    _ORDER[q] = (-info.priority, generality(info.schema), info.module, seq)
    names = _BY_NAME.setdefault(info.schema.name, [])
    if q not in names:
        names.append(q)
    names.sort(key=_ORDER.__getitem__)
    _VERSION[0] += 1
    _KIND_FACTS.clear()


def declare(qualified: str, **fields: Any) -> None:
    """Add declarations (``out``, ``prepare``, ``facts``...) to a registered overload; made
    before it registers (another module's import came first), they wait for it."""
    info = _REGISTRY.get(qualified)
    if info is None:
        _PENDING.setdefault(qualified, {}).update(fields)
        return
    _store(attrs.evolve(info, **fields))
    if "out" in fields:
        _derive_out_overload(_REGISTRY[qualified])


def unregister(qualified: str) -> None:
    """Remove an overload (and the out= overload derived from it); for custom operators
    and tests.  KeyError if it is not registered."""
    info = _REGISTRY.pop(qualified)
    _ORDER.pop(qualified)
    _BY_NAME[info.schema.name].remove(qualified)
    if not _BY_NAME[info.schema.name]:
        del _BY_NAME[info.schema.name]
    for derived in [i.name for i in _REGISTRY.values() if i.out_of == qualified]:
        unregister(derived)
    _VERSION[0] += 1
    _KIND_FACTS.clear()


def pending() -> dict[str, dict[str, Any]]:
    """Declarations made for overloads that never registered (a typo in ``@prepares``)."""
    return {q: dict(fields) for q, fields in _PENDING.items()}


def kernel(*schemas: str, **declared: Any) -> Callable[[Callable[..., Any]], _Registered]:
    """Decorator form of ``register_op``; several schemas register the one kernel under each."""

    def wrap(fn: Callable[..., Any]) -> _Registered:
        declared.setdefault("module", _caller_module())
        infos = [register_op(schema, fn, **declared) for schema in schemas]
        return _Registered(fn, infos[0].name, tuple(i.name for i in infos[1:]))

    return wrap


# ---------------------------------------------------------------------------------------
# PyTorch's out= overloads, registered with their functional overloads


def _out_overload(functional: OpInfo) -> Callable[..., Any]:
    """``f(*args, out)``: the functional's out variant into ``out`` (the documented limits:
    ``vm.ops._common.copy_out``)."""
    write = functional.out or copy_out(functional.kernel)

    def run(*args: Any) -> Any:
        return write(args[-1], *args[:-1])

    run.__name__ = f"{functional.schema.name.split('::')[-1]}_out_overload"
    return run


def _derive_out_overload(functional: OpInfo) -> None:
    text = OUT_SCHEMAS.get(functional.name)
    if text is None:
        return
    parsed = parse_schema(text)
    if len(parsed.arguments) != len(functional.schema.arguments) + 1:
        return
    existing = _REGISTRY.get(parsed.qualified)
    if existing is not None and existing.out_of != functional.name:
        return  # a family registered this out overload itself
    made = OpInfo(parsed, _out_overload(functional), pure=functional.pure, priority=FALLBACK)
    _store(attrs.evolve(made, out_of=functional.name, module=functional.module))


# ---------------------------------------------------------------------------------------
# Queries


def lookup(qualified: str) -> OpInfo:
    """The operator registered under ``aten::add.Tensor``; KeyError if none."""
    return _REGISTRY[qualified]


def find(qualified: str) -> OpInfo | None:
    """The operator registered under ``qualified``, or None."""
    return _REGISTRY.get(qualified)


def overloads(name: str) -> list[OpInfo]:
    """Every overload registered for ``aten::add``, in overload order (the module docstring)."""
    return [_REGISTRY[q] for q in _BY_NAME.get(name, [])]


def all_ops() -> list[OpInfo]:
    return list(_REGISTRY.values())


def declared_facts(kind: str) -> Fact:
    """The kind-level facts the overloads of ``kind`` declare at registration (an or)."""
    facts = _KIND_FACTS.get(kind)
    if facts is None:
        facts = Fact.NONE
        for q in _BY_NAME.get(kind, ()):
            facts |= _REGISTRY[q].facts
        _KIND_FACTS[kind] = facts
    return facts


def kinds() -> list[str]:
    """Every operator name with a registered overload (``aten::add``)."""
    return list(_BY_NAME)


def version() -> int:
    """A number that changes whenever a registration does (for caches of derived tables)."""
    return _VERSION[0]


# ---------------------------------------------------------------------------------------
# Binding: what the compiler resolved, made callable.  The compiler (vm/ir/resolve.py)
# turns a node into an OpRef using the IR's types; the VM binds an OpRef to a callable at
# load time, without the compiler (an .irbc file stores OpRefs).


@attrs.frozen
class OpRef:
    """A resolved operator as the bytecode stores it.

    ``name`` is a registered overload (``aten::add.Tensor``) or a prim kind with a
    factory (``prim::GetAttr``).  The bound callable takes the node's ``n_inputs`` inputs;
    ``defaults`` are the values of the schema's trailing arguments the node left out,
    appended after them.  ``attrs`` are the node attributes a prim factory needs
    (``(("name", "weight"),)`` for a GetAttr), as sorted (key, value) pairs.
    """

    name: str
    n_inputs: int
    n_outputs: int
    defaults: tuple[Any, ...] = ()
    attrs: tuple[tuple[str, Any], ...] = ()


Factory = Callable[[dict[str, Any], int, int], Callable[..., Any]]
_FACTORIES: dict[str, Factory] = {}


def prim_factory(kind: str) -> Callable[[Factory], Factory]:
    """Register a factory for a node kind whose behaviour depends on its attributes or its
    number of inputs/outputs (``prim::GetAttr[name=...]``, ``prim::ListUnpack``...).

    ``factory(attrs, n_inputs, n_outputs)`` returns the callable the VM will run.
    """

    def wrap(factory: Factory) -> Factory:
        _FACTORIES[kind] = factory
        return factory

    return wrap


def has_factory(kind: str) -> bool:
    return kind in _FACTORIES


def bind(ref: OpRef) -> Callable[..., Any]:
    """The callable for ``ref``: ``f(*inputs)`` returns the value (or a tuple of values)."""
    if ref.name in _FACTORIES:
        return _FACTORIES[ref.name](dict(ref.attrs), ref.n_inputs, ref.n_outputs)
    fn = _REGISTRY[ref.name].kernel
    if not ref.defaults:
        return fn
    defaults = ref.defaults
    return lambda *args: fn(*args, *defaults)


def bind_out(ref: OpRef) -> Callable[..., Any] | None:
    """The out variant for ``ref``, ``f(out, *inputs)``, or None when it has none."""
    info = _REGISTRY.get(ref.name)
    if info is None or info.out is None:
        return None
    out, defaults = info.out, ref.defaults
    if not defaults:
        return out
    return lambda buf, *args: out(buf, *args, *defaults)
