"""Prim nodes end to end: IR text -> compile -> interpreter and static runtime.

Packing/unpacking, attributes of %self, isinstance, raise, conversions between scalars
and tensors, and how values print, each checked on both backends; values that PyTorch
prints (tensors, floats) are compared with torch where torch is installed.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import compiler
import vm
from compiler.diagnostics import RunError
from vm.ops.prim import ScriptException
from vm.ops.strings import format_tensor

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def run_both(ir: str, *args: object, weights: dict | None = None) -> object:
    program = compiler.compile_source(ir)
    results = [vm.Interpreter(program, weights)(*args), vm.StaticRuntime(program, weights)(*args)]
    assert repr(results[0]) == repr(results[1])
    return results[0]


def test_list_and_tuple_packing_round_trips() -> None:
    ir = """graph(%a : int, %b : float):
  %l : int[] = prim::ListConstruct(%a, %a)
  %x : int, %y : int = prim::ListUnpack(%l)
  %t : (int, float, int) = prim::TupleConstruct(%x, %b, %y)
  %s : (float, int) = prim::TupleSlice[beg=1, end=3](%t)
  %i : int = prim::Constant[value=0]()
  %f : float = prim::TupleIndex(%s, %i)
  %p : float, %q : int = prim::TupleUnpack(%s)
  %r : (float, float, int, (int, float, int)) = prim::TupleConstruct(%f, %p, %q, %t)
  return (%r)
"""
    assert run_both(ir, 3, 2.5) == (2.5, 2.5, 3, (3, 2.5, 3))


def test_list_unpack_of_the_wrong_length_is_a_run_error() -> None:
    ir = """graph(%l : int[]):
  %x : int, %y : int = prim::ListUnpack(%l)
  return (%x)
"""
    program = compiler.compile_source(ir)
    with pytest.raises(RunError, match="Expected 2 elements in a list but found 3"):
        vm.Interpreter(program)([1, 2, 3])


def test_dict_construct_keeps_insertion_order_and_getattr_reads_weights() -> None:
    ir = """graph(%self : __torch__.M, %k : str):
  %w : Tensor = prim::GetAttr[name="weight"](%self)
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %z : str = prim::Constant[value="z"]()
  %d : Dict(str, int) = prim::DictConstruct(%z, %one, %k, %two)
  %keys : str[] = aten::keys(%d)
  %n : int = aten::len(%d)
  %r : (str[], int, Tensor) = prim::TupleConstruct(%keys, %n, %w)
  return (%r)
"""
    w = np.arange(3, dtype=np.float32)
    keys, n, got = run_both(ir, "a", weights={"weight": w})
    assert keys == ["z", "a"] and n == 2 and np.array_equal(got, w)


def test_isinstance_and_is_none_checks() -> None:
    ir = """graph(%x : Any, %o : int?):
  %a : bool = prim::isinstance[types=[int]](%x)
  %n : NoneType = prim::Constant()
  %b : bool = aten::__is__(%o, %n)
  %c : bool = aten::__isnot__(%o, %n)
  %r : (bool, bool, bool) = prim::TupleConstruct(%a, %b, %c)
  return (%r)
"""
    assert run_both(ir, 3, None) == (True, True, False)
    assert run_both(ir, "s", 4) == (False, False, True)


def test_isinstance_of_bare_container_names_matches_torch() -> None:
    """``isinstance(x, list)`` / ``isinstance(x, tuple)`` on a ``Union`` argument, as
    scripted code checks a ``Union[Tensor, List[Tensor]]`` (timm coat's ``forward_head``):
    the bare names mean any list and any tuple, as in torch."""
    torch = pytest.importorskip("torch")

    def f(x: torch.Tensor | list[torch.Tensor] | tuple[int, int]) -> tuple[bool, bool, bool]:
        return isinstance(x, list), isinstance(x, tuple), isinstance(x, torch.Tensor)

    scripted = torch.jit.script(f)
    t = np.ones(2, np.float32)
    for value in ([t, t], (1, 2), t):
        theirs = [torch.from_numpy(v) for v in value] if isinstance(value, list) else value
        theirs = torch.from_numpy(theirs) if isinstance(theirs, np.ndarray) else theirs
        assert run_both(str(scripted.graph), value) == scripted(theirs)


def test_raise_exception_carries_message_and_python_class() -> None:
    ir = """graph(%x : int):
  %m : str = prim::Constant[value="bad input"]()
  %c : str = prim::Constant[value="builtins.ValueError"]()
   = prim::RaiseException(%m, %c)
  return (%x)
"""
    program = compiler.compile_source(ir)
    with pytest.raises(RunError, match="builtins.ValueError: bad input"):
        vm.Interpreter(program)(1)
    assert str(ScriptException("bad input", "builtins.ValueError")) == "builtins.ValueError: bad input"


def test_scalar_tensor_conversions() -> None:
    ir = """graph(%t : Tensor, %i : int, %f : float):
  %a : Tensor = prim::NumToTensor(%i)
  %b : Tensor = prim::NumToTensor(%f)
  %c : int = aten::Int(%t)
  %d : float = aten::Float(%t)
  %e : bool = aten::Bool(%t)
  %s : Scalar = aten::ScalarImplicit(%t)
  %g : int = prim::dtype(%t)
  %h : Device = prim::device(%t)
  %r : (Tensor, Tensor, int, float, bool, Scalar, int, Device) = prim::TupleConstruct(%a, %b, %c, %d, %e, %s, %g, %h)
  return (%r)
"""
    a, b, c, d, e, s, g, h = run_both(ir, np.array(2.75, dtype=np.float32), 3, 0.5)
    assert a.shape == () and a.dtype == np.int64 and a == 3
    assert b.shape == () and b.dtype == np.float64 and b == 0.5
    assert (c, d, e, s, g, h) == (2, 2.75, True, 2.75, 6, "cpu")


def test_print_writes_like_torchscript(capfd: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    from tests.support.prim_torch import script

    src = "def f(x: int, s: str, l: List[float], t: torch.Tensor):\n    print(x, s, l, t, None, (x, s))\n    return x"
    args = (3, "hi", [1.0, 0.1], np.array([[1.5, -2.0], [0.25, 4.0]], dtype=np.float32))
    script(src)(*(torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args))
    theirs = capfd.readouterr().out
    ir = """graph(%x : int, %s : str, %l : float[], %t : Tensor):
  %n : NoneType = prim::Constant()
  %p : (int, str) = prim::TupleConstruct(%x, %s)
   = prim::Print(%x, %s, %l, %t, %n, %p)
  return (%x)
"""
    vm.Interpreter(compiler.compile_source(ir))(*args)
    assert capfd.readouterr().out == theirs


tensors = st.one_of(
    hnp.arrays(st.sampled_from([np.float32, np.float64]), hnp.array_shapes(min_dims=0, max_dims=3, max_side=3),
               elements=st.floats(-1e6, 1e6, width=32)),
    hnp.arrays(st.sampled_from([np.float32]), hnp.array_shapes(min_dims=1, max_dims=2, max_side=3),
               elements=st.sampled_from([0.0, 1e-5, 123456.0, -3.25, 1e9, 7.0])),
    hnp.arrays(st.sampled_from([np.int64, np.int32, np.bool_]), hnp.array_shapes(min_dims=0, max_dims=3, max_side=3)),
)  # fmt: skip


@given(t=tensors)
def test_tensors_print_like_torchscript(t: np.ndarray) -> None:
    torch = pytest.importorskip("torch")

    fn = _str_of_tensor()
    assert format_tensor(t) == fn(torch.from_numpy(t.copy())), t


_CACHE: dict[str, object] = {}


def _str_of_tensor():  # type: ignore[no-untyped-def]
    from tests.support.prim_torch import script

    if "f" not in _CACHE:
        _CACHE["f"] = script("def f(t: torch.Tensor):\n    return str(t)")
    return _CACHE["f"]


def test_profiling_nodes_are_identities_and_type_check_checks() -> None:
    from compiler import types as T
    from vm.ops.registry import OpRef, bind

    x = np.zeros((2, 3), dtype=np.float32)
    assert bind(OpRef("prim::profile", 1, 1))(x) is x
    assert bind(OpRef("prim::BailOut", 2, 1))(x, 7) is x
    check = bind(OpRef("prim::TypeCheck", 1, 2, attrs=(("types", (T.TensorType("Float", (2, 3)),)),)))
    assert check(x)[0] is x and check(x)[1] is True
    assert check(x.astype(np.float64))[1] is False
    assert check(np.zeros((3, 2), np.float32))[1] is False


def test_set_attr_then_get_attr_on_a_created_object() -> None:
    ir = """graph(%v : int):
  %o : __torch__.Foo = prim::CreateObject()
   = prim::SetAttr[name="x"](%o, %v)
  %r : int = prim::GetAttr[name="x"](%o)
  return (%r)
"""
    assert run_both(ir, 5) == 5


def test_tolist_checks_depth_and_element_kind() -> None:
    ir = """graph(%t : Tensor):
  %d : int = prim::Constant[value=2]()
  %k : int = prim::Constant[value=1]()
  %l : float[][] = prim::tolist(%t, %d, %k)
  return (%l)
"""
    t = np.array([[1.5, 2.0], [3.0, 4.0]], dtype=np.float32)
    assert run_both(ir, t) == [[1.5, 2.0], [3.0, 4.0]]
    program = compiler.compile_source(ir)
    with pytest.raises(RunError, match="dimension must match"):
        vm.Interpreter(program)(np.zeros(3, np.float32))
    with pytest.raises(RunError, match="element type must match"):
        vm.Interpreter(program)(np.zeros((1, 1), np.int64))
