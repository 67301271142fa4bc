"""Overload resolution over a graph TorchScript printed (lists, dicts, strings, loops, raise).

The IR below is ``print(torch.jit.script(f).graph)`` of a function that exercises the
builtins TorchScript emits for Python code; every node must resolve, to the overload
TorchScript itself bound (checked by hand against the schemas PyTorch registers).
"""

from __future__ import annotations

import compiler
from vm.ir.resolve import resolve_all

IR = """\
graph(%x.1 : int,
      %y.1 : float,
      %s.1 : str,
      %l.1 : int[],
      %d.1 : Dict(str, int),
      %t.1 : Tensor):
  %173 : str = prim::Constant[value="builtins.ValueError"]() # probe.py:19:14
  %170 : str = prim::Constant[value="bad "]() # probe.py:19:25
  %165 : str = prim::Constant[value="k"]() # probe.py:18:21
  %158 : str = prim::Constant[value="hi"]() # probe.py:17:19
  %149 : str = prim::Constant[value=","]() # probe.py:16:59
  %146 : NoneType = prim::Constant()
  %133 : str = prim::Constant[value="{} and {}"]() # probe.py:16:8
  %124 : str = prim::Constant[value="b"]() # probe.py:15:14
  %121 : str = prim::Constant[value="a"]() # probe.py:14:6
  %92 : bool = prim::Constant[value=1]() # probe.py:8:4
  %76 : bool = prim::Constant[value=0]()
  %46 : int = prim::Constant[value=-1]() # probe.py:5:38
  %7 : int = prim::Constant[value=3]() # probe.py:4:13
  %17 : int = prim::Constant[value=4]() # probe.py:4:41
  %35 : int = prim::Constant[value=2]() # probe.py:5:12
  %44 : int = prim::Constant[value=1]() # probe.py:5:39
  %63 : int = prim::Constant[value=0]() # probe.py:6:41
  %64 : int = prim::Constant[value=5]() # probe.py:6:44
  %8 : int = aten::floordiv(%x.1, %7) # probe.py:4:8
  %11 : int = aten::remainder(%x.1, %7) # probe.py:4:17
  %12 : int = aten::add(%8, %11) # probe.py:4:8
  %14 : int = prim::abs(%x.1) # probe.py:4:25
  %15 : int = aten::add(%12, %14) # probe.py:4:8
  %18 : int = prim::min(%x.1, %17) # probe.py:4:34
  %19 : int = aten::add(%15, %18) # probe.py:4:8
  %21 : int = prim::max(%l.1) # probe.py:4:46
  %22 : int = aten::add(%19, %21) # probe.py:4:8
  %24 : int = aten::len(%l.1) # probe.py:4:55
  %25 : int = aten::add(%22, %24) # probe.py:4:8
  %28 : int = aten::Int(%y.1) # probe.py:4:64
  %29 : int = aten::add(%25, %28) # probe.py:4:8
  %32 : int = aten::Int(%t.1) # probe.py:4:73
  %a.1 : int = aten::add(%29, %32) # probe.py:4:8
  %36 : float = aten::div(%y.1, %35) # probe.py:5:8
  %38 : float = aten::div(%x.1, %35) # probe.py:5:16
  %39 : float = aten::add(%36, %38) # probe.py:5:8
  %41 : float = aten::pow(%35, %x.1) # probe.py:5:24
  %42 : float = aten::add(%39, %41) # probe.py:5:8
  %47 : float = aten::pow(%x.1, %46) # probe.py:5:33
  %48 : float = aten::add(%42, %47) # probe.py:5:8
  %51 : float = aten::Float(%x.1) # probe.py:5:43
  %52 : float = aten::add(%48, %51) # probe.py:5:8
  %55 : float = prim::min(%y.1, %x.1) # probe.py:5:54
  %b.1 : float = aten::add(%52, %55) # probe.py:5:8
  %58 : int[] = aten::append(%l.1, %7) # probe.py:6:4
  %60 : int[] = prim::ListConstruct(%44)
   = aten::extend(%l.1, %60) # probe.py:6:17
   = aten::insert(%l.1, %63, %64) # probe.py:6:32
  %68 : int = aten::pop(%l.1, %46) # probe.py:6:48
  %70 : int = aten::pop(%l.1, %63) # probe.py:6:57
   = aten::remove(%l.1, %64) # probe.py:6:67
   = aten::reverse(%l.1) # probe.py:6:80
   = aten::sort(%l.1, %76) # probe.py:6:93
   = aten::clear(%l.1) # probe.py:6:103
  %82 : int[] = aten::slice(%l.1, %44, %7, %44) # probe.py:7:8
  %84 : int[] = aten::mul(%l.1, %35) # probe.py:7:17
  %85 : int[] = aten::add(%82, %84) # probe.py:7:8
  %87 : int = aten::__getitem__(%l.1, %63) # probe.py:7:26
  %88 : int[] = prim::ListConstruct(%87)
  %z.1 : int[] = aten::add(%85, %88) # probe.py:7:8
  %a.39 : int = prim::Loop(%7, %92, %a.1) # probe.py:8:4
    block0(%93 : int, %a.37 : int):
      %i.1 : int = aten::__derive_index(%93, %35, %7) # probe.py:8:4
      %a.5 : int = aten::add(%a.37, %i.1) # probe.py:9:8
      -> (%92, %a.5)
  %100 : (str, int)[] = aten::items(%d.1) # probe.py:10:16
  %101 : int = aten::len(%100) # probe.py:10:4
  %a.43 : int = prim::Loop(%101, %92, %a.39) # probe.py:10:4
    block0(%103 : int, %a.41 : int):
      %104 : (str, int) = aten::__getitem__(%100, %103) # probe.py:10:4
      %k : str, %v.1 : int = prim::TupleUnpack(%104)
      %a.11 : int = aten::add(%a.41, %v.1) # probe.py:11:8
      -> (%92, %a.11)
  %112 : int = aten::len(%l.1) # probe.py:12:4
  %a.47 : int = prim::Loop(%112, %92, %a.43) # probe.py:12:4
    block0(%114 : int, %a.45 : int):
      %e.1 : int = aten::__getitem__(%l.1, %114) # probe.py:12:4
      %a.17 : int = aten::add(%a.45, %e.1) # probe.py:13:8
      -> (%92, %a.17)
   = aten::_set_item(%d.1, %121, %44) # probe.py:14:4
  %125 : int = aten::get(%d.1, %124, %7) # probe.py:15:8
  %128 : int = aten::pop(%d.1, %121) # probe.py:15:24
  %129 : int = aten::add(%125, %128) # probe.py:15:8
  %131 : int = aten::len(%d.1) # probe.py:15:37
  %q.1 : int = aten::add(%129, %131) # probe.py:15:8
  %136 : str = aten::format(%133, %x.1, %s.1) # probe.py:16:8
  %139 : str = aten::str(%x.1) # probe.py:16:35
  %140 : str = aten::add(%136, %139) # probe.py:16:8
  %142 : str = aten::__getitem__(%s.1, %63) # probe.py:16:44
  %143 : str = aten::add(%140, %142) # probe.py:16:8
  %147 : str = aten::slice(%s.1, %44, %146, %44) # probe.py:16:51
  %148 : str = aten::add(%143, %147) # probe.py:16:8
  %152 : str[] = prim::ListConstruct(%121, %s.1)
  %153 : str = aten::join(%149, %152) # probe.py:16:59
  %m.1 : str = aten::add(%148, %153) # probe.py:16:8
   = prim::Print(%x.1, %s.1, %t.1, %158) # probe.py:17:4
  %161 : str[] = prim::ListConstruct(%121)
  %162 : bool = aten::__contains__(%161, %s.1) # probe.py:18:7
  %169 : bool = prim::If(%162) # probe.py:18:7
    block0():
      -> (%92)
    block1():
      %167 : bool = aten::__contains__(%d.1, %165) # probe.py:18:21
      -> (%167)
   = prim::If(%169) # probe.py:18:4
    block0():
      %172 : str = aten::add(%170, %s.1) # probe.py:19:25
       = prim::RaiseException(%172, %173) # probe.py:19:8
      -> ()
    block1():
      -> ()
  %176 : bool = aten::gt(%x.1, %63) # probe.py:20:31
  %o.1 : int? = prim::If(%176) # probe.py:20:23
    block0():
      -> (%146)
    block1():
      -> (%x.1)
  %183 : bool = aten::__isnot__(%o.1, %146) # probe.py:21:7
  %a : int = prim::If(%183) # probe.py:21:4
    block0():
      %o.7 : int = prim::unchecked_cast(%o.1)
      %a.23 : int = aten::add(%a.47, %o.7) # probe.py:22:8
      -> (%a.23)
    block1():
      -> (%a.47)
  %216 : int = prim::dtype(%t.1)
  %218 : Device = prim::device(%t.1)
  %222 : bool = aten::eq(%x.1, %35) # probe.py:26:73
  %224 : bool = aten::__not__(%222) # probe.py:26:68
  %227 : (int, float, int[], int, str, int, int, Device, bool, bool, int) = prim::TupleConstruct(%a, %b.1, %z.1, %q.1, %m.1, %x.1, %216, %218, %92, %224, %44)
  return (%227)

"""

EXPECTED = {
    "%8": "aten::floordiv.int", "%11": "aten::remainder.int", "%14": "prim::abs.int", "%18": "prim::min.int",
    "%21": "prim::max.self_int", "%24": "aten::len.t", "%28": "aten::Int.float", "%32": "aten::Int.Tensor",
    "%36": "aten::div", "%38": "aten::div.int", "%41": "aten::pow.int", "%47": "aten::pow.int", "%51": "aten::Float.int",
    "%55": "prim::min.float_int", "%58": "aten::append.t", "%68": "aten::pop.t", "%82": "aten::slice.t",
    "%84": "aten::mul.left_t", "%z.1": "aten::add.t", "%87": "aten::__getitem__.t", "%i.1": "aten::__derive_index",
    "%100": "aten::items.str", "%101": "aten::len.t", "%104": "aten::__getitem__.t", "%125": "aten::get.default_str",
    "%128": "aten::pop.Dict_str", "%131": "aten::len.Dict_str", "%136": "aten::format", "%139": "aten::str",
    "%142": "aten::__getitem__.str", "%147": "aten::slice.str", "%153": "aten::join", "%m.1": "aten::add.str",
    "%162": "aten::__contains__.str_list", "%167": "aten::__contains__.str", "%176": "aten::gt.int",
    "%183": "aten::__isnot__", "%216": "prim::dtype", "%218": "prim::device", "%222": "aten::eq.int",
    "%224": "aten::__not__", "%b.1": "aten::add.float", "%a.1": "aten::add.int",
}  # fmt: skip


def test_every_node_of_a_torchscript_dump_resolves_to_torchscripts_overload() -> None:
    module = compiler.parse(IR, "probe.ir")
    resolved, errors = resolve_all(module)
    assert errors == []
    by_output = {f"%{n.outputs[0].name}": ref.name for n, ref in resolved.items() if n.outputs}
    for value, overload in EXPECTED.items():
        assert by_output[value] == overload, value
    no_output = sorted(ref.name for n, ref in resolved.items() if not n.outputs)
    assert no_output == sorted([
        "aten::extend.t", "aten::insert.t", "aten::remove.int", "aten::reverse.t", "aten::sort.int", "aten::clear.t",
        "aten::_set_item.str", "prim::Print", "prim::RaiseException",
    ])  # fmt: skip


def test_every_unsupported_node_is_reported_with_its_line() -> None:
    text = """graph(%x : int, %s : str):
  %a : int = aten::frobnicate(%x)
  %b : int = aten::add(%x, %s)
  %c : int = aten::len(%s)
  return (%c)
"""
    _, errors = resolve_all(compiler.parse(text, "bad.ir"))
    assert [(e.span.line, e.message.split(" (")[0].split(";")[0]) for e in errors] == [
        (2, "unknown operator aten::frobnicate(int)"),
        (3, "no overload of aten::add accepts"),
    ]
    assert "aten::add.int(int a, int b) -> int" in errors[1].message
