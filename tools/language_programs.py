"""A corpus of small TorchScript programs over the whole language, run against torch.

    python tools/language_programs.py [--only NAME ...] [--json OUT]

Each program is a module whose ``forward(self, x)`` takes one float tensor (``x`` is
``arange(6).reshape(2, 3)``) and exercises one corner of the language: lists, dicts,
strings and ``%`` formatting, tuples and NamedTuples, Optional and Union, exceptions,
slicing, module containers, classes, ``with``, enums, warnings, frozen modules, tensor
methods and properties.  Each is scripted by torch, saved, and run by irvm from its printed
graph (``inlined_graph``) and from its ``.pt`` archive, on the interpreter and the static
runtime (each twice: the static runtime's second call runs its planned code), and compared
with torch's result (or torch's error: irvm must raise too).  Torch's optimizing executor
is known to fold some container writes away (a list appended to through another list);
where its unoptimized interpreter answers otherwise, either answer counts as torch's.

Outcomes: ``match``; ``wrong`` (a different value: the worst); ``refused`` (a clear irvm
error where torch ran: a gap); ``internal`` (any other exception: a bug).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

HEADER = '''
import enum
import math
import warnings
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union
import torch
from torch import Tensor, nn


class Point(NamedTuple):
    x: int
    y: float


class Color(enum.Enum):
    RED = 1
    GREEN = 2


@torch.jit.script
class Counter:
    def __init__(self, start: int):
        self.n = start

    def bump(self, k: int) -> int:
        self.n += k
        return self.n

    def __lt__(self, other: "Counter") -> bool:
        return self.n < other.n

    def __contains__(self, k: int) -> bool:
        return k == self.n

    def __len__(self) -> int:
        return self.n


@torch.jit.script
class Ctx:
    def __init__(self, log: List[int]):
        self.log = log

    def __enter__(self):
        self.log.append(1)

    def __exit__(self, a: Any, b: Any, c: Any):
        self.log.append(2)


@torch.jit.script
class Scope:
    def __init__(self, v: int):
        self.v = v

    def __enter__(self) -> int:
        return self.v * 2

    def __exit__(self, a: Any, b: Any, c: Any):
        self.v = 0
'''

# name -> body of forward(self, x: Tensor) (its return annotation first, then the body)
PROGRAMS: dict[str, tuple[str, str]] = {
    # lists
    "list_append_pop": ("List[int]", "l = [1, 2, 3]\nl.append(4)\nl.pop(0)\nl.insert(1, 9)\nreturn l"),
    "list_slice": ("List[int]", "l = [0, 1, 2, 3, 4, 5]\nreturn l[1:5:2] + l[::-1] + l[-2:]"),
    "list_sort_rev": ("List[int]", "l = [3, 1, 2]\nl.sort()\nm = sorted(l)\nl.reverse()\nreturn l + m"),
    "list_index_count": ("Tuple[int, int]", "l = [1, 2, 2, 3]\nreturn l.index(2), l.count(2)"),
    "list_remove_clear": ("Tuple[List[int], int]", "l = [1, 2, 3]\nl.remove(2)\nn = len(l)\nl.clear()\nreturn l, n"),
    "list_extend_mul": ("List[int]", "l = [1]\nl.extend([2, 3])\nreturn l * 2"),
    "list_comprehension": ("List[int]", "return [i * i for i in range(5)]"),
    "list_of_tensors_cat": ("Tensor", "parts = [x, x * 2]\nparts.append(x + 1)\nreturn torch.cat(parts, 0)"),
    "list_min_max_sum": ("Tuple[int, int, int]", "l = [4, 2, 8]\nreturn min(l), max(l), sum(l)"),
    "list_in": ("Tuple[bool, bool]", "l = [1, 2]\nreturn 2 in l, 5 in l"),
    "list_eq_ne": ("Tuple[bool, bool]", "return [1, 2] == [1, 2], [1.0] != [2.0]"),
    "list_setitem": ("List[float]", "l = [1.0, 2.0]\nl[0] = 5.0\nl[-1] += 1.0\nreturn l"),
    "list_nested_alias": ("List[List[int]]", "a = [1]\nb = [a, a]\nb[0].append(2)\nreturn b"),
    "list_copy": ("Tuple[List[int], List[int]]", "a = [1, 2]\nb = a.copy()\nb.append(3)\nreturn a, b"),
    "list_enumerate_zip": ("List[int]", "out: List[int] = []\nfor i, (a, b) in enumerate(zip([1, 2], [3, 4])):\n    out.append(i + a * b)\nreturn out"),
    "list_empty_len": ("int", "a: List[int] = []\nreturn len(a)"),
    "list_tensor_eq_raises": ("bool", "return [x, x + 1] == [x + 1, x]"),
    "list_index_error": ("int", "l = [1]\nreturn l[3]"),
    "list_str_join": ("str", "return '-'.join(['a', 'b', 'c'])"),
    # dicts
    "dict_basic": ("Dict[str, int]", "d = {'a': 1}\nd['b'] = 2\nd['a'] += 5\nreturn d"),
    "dict_keys_values_items": ("Tuple[List[str], List[int], int]", "d = {'a': 1, 'b': 2}\ns = 0\nfor k, v in d.items():\n    s += v\nreturn d.keys(), d.values(), s"),
    "dict_keys_append": ("List[str]", "d = {'a': 1}\nk = d.keys()\nk.append('z')\nreturn k"),
    "dict_get_pop": ("Tuple[int, int, int]", "d = {'a': 1, 'b': 2}\nreturn d.get('a', 0), d.get('z', -1), d.pop('b')"),
    "dict_setdefault_update": ("Dict[str, int]", "d = {'a': 1}\nd.setdefault('b', 7)\nd.update({'c': 3})\nreturn d"),
    "dict_in_del": ("Tuple[bool, int]", "d = {1: 2, 3: 4}\ndel d[1]\nreturn 1 in d, len(d)"),
    "dict_tensor_inplace": ("Tuple[Tensor, Tensor]", "d = {'a': x}\nt = d['a']\nt.add_(1)\nreturn d['a'], x"),
    "dict_of_lists": ("Dict[str, List[int]]", "a = [1]\nd = {'k': a}\na.append(5)\nd['k'].append(6)\nreturn d"),
    "dict_keyerror": ("int", "d = {'a': 1}\nreturn d['b']"),
    "dict_comprehension": ("Dict[int, int]", "return {i: i * i for i in range(4)}"),
    "dict_int_keys_sorted": ("List[int]", "d = {3: 1, 1: 2, 2: 3}\nreturn sorted(d.keys())"),
    "dict_clear_copy": ("Tuple[int, int]", "d = {'a': 1}\ne = d.copy()\nd.clear()\nreturn len(d), len(e)"),
    "dict_popitem": ("Tuple[str, int]", "d = {'a': 1, 'b': 2}\nreturn d.popitem()"),
    "dict_tensor_values": ("Tensor", "d: Dict[str, Tensor] = {'x': x, 'y': x * 2}\nreturn d['x'] + d['y']"),
    # strings
    "str_methods": ("List[str]", "s = ' Hello World '\nreturn [s.strip(), s.lower(), s.upper(), s.lstrip(), s.rstrip(), s.title()]"),
    "str_split_replace": ("Tuple[List[str], str]", "s = 'a,b,,c'\nreturn s.split(','), s.replace(',', ';')"),
    "str_find_count": ("Tuple[int, int, int, bool, bool]", "s = 'banana'\nreturn s.find('an'), s.rfind('an'), s.count('a'), s.startswith('ba'), s.endswith('x')"),
    "str_slice_index": ("Tuple[str, str, str]", "s = 'abcdef'\nreturn s[1:4], s[-1], s[::2]"),
    "str_format": ("str", "return '{} and {}'.format(1, 'two')"),
    "str_percent_d": ("str", "return 'n=%d' % 42"),
    "str_percent_many": ("str", "return '%s %d %f %e %c %%' % ('a', 3, 2.5, 1000.0, 65)"),
    "str_percent_too_few": ("str", "return '%d %d' % (1,)"),
    "str_percent_too_many": ("str", "return '%d' % (1, 2)"),
    "str_percent_bad_spec": ("str", "return '%x' % 255"),
    "str_of_values": ("List[str]", "return [str(1), str(2.5), str(True), str([1, 2]), str(None)]"),
    "str_of_tensor_size": ("str", "return str(x.size())"),
    "str_isdigit_etc": ("List[bool]", "return ['12'.isdigit(), 'ab'.isalpha(), 'a1'.isalnum(), '  '.isspace(), 'AB'.isupper(), 'ab'.islower()]"),
    "str_int_float": ("Tuple[int, float]", "return int('42'), float('2.5')"),
    "str_compare": ("Tuple[bool, bool, bool]", "return 'a' < 'b', 'abc' == 'abc', 'a' in 'cat'"),
    "str_join_concat": ("str", "s = ''\nfor c in ['x', 'y']:\n    s += c\nreturn s + s"),
    "str_ord_chr": ("Tuple[int, str]", "return ord('A'), chr(66)"),
    "str_zfill_center": ("List[str]", "return ['7'.zfill(3), 'ab'.center(6, '*'), 'ab'.ljust(4, '.'), 'ab'.rjust(4)]"),
    "str_partition_splitlines": ("Tuple[Tuple[str, str, str], List[str]]", "return 'a=b'.partition('='), 'a\\nb'.splitlines()"),
    "str_int_error": ("int", "return int('abc')"),
    # tuples and NamedTuples
    "tuple_unpack": ("Tuple[int, int]", "a, b = (1, 2)\nb, a = a, b\nreturn a, b"),
    "tuple_index_slice": ("Tuple[int, int]", "t = (1, 2, 3)\nreturn t[0], t[-1]"),
    "tuple_of_list_alias": ("Tuple[List[int], int]", "a = [1]\nt = (a, 2)\nt[0].append(9)\nreturn a, len(t[0])"),
    "tuple_compare": ("Tuple[bool, bool]", "return (1, 2) == (1, 3), (1, 2) == (1, 2)"),
    "namedtuple_fields": ("Tuple[int, float]", "p = Point(3, 2.5)\nreturn p.x, p.y"),
    "namedtuple_return": ("Point", "return Point(1, 1.5)"),
    "namedtuple_index": ("int", "p = Point(4, 0.5)\nreturn p[0]"),
    "tuple_in_loop": ("int", "s = 0\nfor a, b in [(1, 2), (3, 4)]:\n    s += a * b\nreturn s"),
    # Optional and Union
    "optional_none": ("int", "o: Optional[int] = None\nif o is None:\n    return -1\nreturn o"),
    "optional_refine": ("int", "o: Optional[int] = 3\nif o is not None:\n    return o + 1\nreturn 0"),
    "optional_tensor": ("Tensor", "o: Optional[Tensor] = None\nif x.sum() > 0:\n    o = x\nassert o is not None\nreturn o * 2"),
    "union_isinstance": ("str", "u: Union[int, str] = 'a'\nif isinstance(u, int):\n    return 'int'\nreturn 'str:' + u"),
    "union_int_branch": ("int", "u: Union[int, str] = 5\nif isinstance(u, int):\n    return u * 2\nreturn 0"),
    "isinstance_list": ("bool", "l = [1]\nreturn isinstance(l, List[int])"),
    # exceptions
    "raise_valueerror": ("int", "if x.sum() > 0:\n    raise ValueError('bad value')\nreturn 1"),
    "raise_runtime_fmt": ("int", "n = 3\nif n > 2:\n    raise RuntimeError('n is ' + str(n))\nreturn n"),
    "assert_fails": ("int", "assert x.sum() < 0, 'must be negative'\nreturn 1"),
    "assert_passes": ("int", "assert x.numel() == 6\nreturn 2"),
    "zero_division": ("int", "a = 0\nreturn 5 // a"),
    "float_zero_division": ("float", "a = 0.0\nreturn 1.0 / a"),
    # ints, floats, bools, math
    "int_ops": ("List[int]", "a = 17\nb = -5\nreturn [a // b, a % b, -a // 4, abs(b), a << 2, a >> 1, a & 6, a | 8, a ^ 3]"),
    "float_ops": ("List[float]", "a = 7.5\nreturn [a // 2.0, a % 2.0, a ** 0.5, round(a), float(math.floor(a)), float(math.ceil(-a))]"),
    "math_funcs": ("List[float]", "return [math.sqrt(2.0), math.exp(1.0), math.log(10.0), math.sin(0.5), math.atan2(1.0, 2.0), math.pi]"),
    "math_isnan_inf": ("List[bool]", "n = float('nan')\nreturn [math.isnan(n), math.isinf(float('inf')), n == n]"),
    "bool_logic": ("List[bool]", "a = True\nb = False\nreturn [a and b, a or b, not a, a != b]"),
    "int_float_conv": ("Tuple[int, float, int, bool]", "return int(3.9), float(2), int(-2.5), bool(0)"),
    "divmod_minmax": ("Tuple[int, int, float]", "return max(3, 7), min(-1, 2), max(1.5, 0.5)"),
    "int_overflow_wraps": ("int", "a = 9223372036854775807\nreturn a + 1"),
    "chained_compare": ("bool", "a = 3\nreturn 1 < a < 5"),
    # control flow
    "while_break_continue": ("int", "i = 0\ns = 0\nwhile i < 10:\n    i += 1\n    if i % 2 == 0:\n        continue\n    if i > 7:\n        break\n    s += i\nreturn s"),
    "for_range_step": ("List[int]", "return [i for i in range(10, 0, -3)]"),
    "nested_loops_tensor": ("Tensor", "y = x.clone()\nfor i in range(2):\n    for j in range(3):\n        y[i, j] = float(i * 10 + j)\nreturn y"),
    "if_elif_else": ("str", "v = int(x.sum())\nif v < 0:\n    return 'neg'\nelif v == 0:\n    return 'zero'\nelse:\n    return 'pos'"),
    "early_return_loop": ("int", "for i in range(10):\n    if i * i > 20:\n        return i\nreturn -1"),
    "ternary": ("int", "return 1 if x.sum() > 3 else 2"),
    "loop_over_tensor": ("List[float]", "out: List[float] = []\nfor row in x:\n    out.append(float(row.sum()))\nreturn out"),
    # classes
    "class_method": ("int", "c = Counter(1)\nc.bump(2)\nreturn c.bump(3)"),
    "class_contains": ("Tuple[bool, bool]", "c = Counter(3)\nreturn 3 in c, 4 in c"),
    "class_len": ("int", "return len(Counter(5))"),
    "class_sort_lt": ("List[int]", "cs = [Counter(3), Counter(1), Counter(2)]\ncs.sort()\nreturn [c.n for c in cs]"),
    "class_attr_list_alias": ("List[int]", "log: List[int] = []\nc = Ctx(log)\nc.log.append(5)\nreturn log"),
    "with_block": ("List[int]", "log: List[int] = []\nwith Ctx(log):\n    log.append(7)\nreturn log"),
    "with_as_value": ("Tuple[int, int]", "s = Scope(4)\nwith s as d:\n    r = d + s.v\nreturn r, s.v"),
    "with_nested": ("List[int]", "log: List[int] = []\nwith Ctx(log), Ctx(log):\n    log.append(9)\nreturn log"),
    # enums
    "enum_value_name": ("Tuple[int, str]", "c = Color.GREEN\nreturn c.value, c.name"),
    "enum_compare": ("bool", "return Color.RED == Color.RED and Color.RED != Color.GREEN"),
    # warnings
    "warn_and_return": ("int", "warnings.warn('careful')\nreturn 3"),
    # tensors
    "tensor_arith": ("Tensor", "return (x + 1) * 2 - x / 3"),
    "tensor_reductions": ("List[Tensor]", "return [x.sum(), x.mean(1), x.max(), x.argmin(), x.prod(0), x.std()]"),
    "tensor_indexing": ("List[Tensor]", "return [x[0], x[:, 1], x[1, 2], x[..., -1], x[None, 0], x[x > 2]]"),
    "tensor_setitem": ("Tensor", "y = x.clone()\ny[0] = 5.0\ny[:, -1] = -1.0\ny[y > 4] = 0.0\nreturn y"),
    "tensor_views_write": ("Tensor", "y = x.clone()\nv = y.view(6)\nv[0] = 100.0\nreturn y"),
    "tensor_inplace_chain": ("Tensor", "y = x.clone()\ny.add_(1).mul_(2).clamp_(0, 7)\nreturn y"),
    "tensor_shape_methods": ("List[Tensor]", "return [x.t(), x.reshape(3, 2), x.flatten(), x.unsqueeze(0), x.permute(1, 0), x.expand(2, 2, 3), x.repeat(2, 1), x.flip(0)]"),
    "tensor_item_tolist": ("Tuple[float, List[List[float]]]", "t: List[List[float]] = x.tolist()\nreturn x[0, 1].item(), t"),
    "tensor_size_dim": ("Tuple[List[int], int, int, int]", "return x.size(), x.dim(), x.size(-1), x.numel()"),
    "tensor_dtype_conv": ("List[Tensor]", "return [x.int(), x.long(), x.double(), x.to(torch.bool), x.to(torch.int16), x.half().float()]"),
    "tensor_compare_where": ("Tensor", "return torch.where(x > 2, x, -x)"),
    "tensor_bool_scalar": ("bool", "return bool(x.sum() > 0)"),
    "tensor_bool_ambiguous": ("bool", "return bool(x > 0)"),
    "tensor_factories": ("List[Tensor]", "return [torch.zeros(2, 3), torch.ones_like(x), torch.arange(5), torch.full([2], 7.0), torch.eye(2), torch.linspace(0, 1, 5)]"),
    "tensor_matmul": ("Tensor", "return x @ x.t()"),
    "tensor_cumsum_sort": ("List[Tensor]", "v, i = torch.sort(-x, 1)\nreturn [x.cumsum(1), v, i, torch.topk(x.flatten(), 2)[0]]"),
    "tensor_properties": ("Tuple[bool, bool, int, int, bool]", "return x.is_cpu, x.is_leaf, x.itemsize, x.nbytes, x.is_sparse"),
    "tensor_mh_real": ("Tuple[Tensor, Tensor]", "return x.mH, x.real"),
    "tensor_grad_none": ("bool", "return x.grad is None"),
    "tensor_split_chunk": ("List[Tensor]", "return list(x.chunk(3, 1)) + list(torch.split(x, 1, 0))"),
    "tensor_stack_unbind": ("Tensor", "return torch.stack(list(x.unbind(1)), 0)"),
    "tensor_nan_ops": ("List[Tensor]", "y = x / 0.0\nreturn [y, torch.isnan(y), torch.nan_to_num(y)]"),
    "tensor_int_div": ("List[Tensor]", "a = torch.tensor([7, -7])\nreturn [a // 2, a % 3, torch.div(a, 2, rounding_mode='trunc'), a / 2]"),
    "tensor_in_list_contains_loop": ("int", "ts = [x, x + 1]\nn = 0\nfor t in ts:\n    n += int(t.sum())\nreturn n"),
    "tensor_scalar_promote": ("List[Tensor]", "i = torch.tensor([1, 2])\nreturn [i + 1.5, i * 2, i.float() / 2, i + True]"),
    "tensor_shape_error": ("Tensor", "return x.view(4, 4)"),
    "tensor_softmax_norm": ("List[Tensor]", "return [torch.softmax(x, 1), torch.nn.functional.normalize(x), torch.nn.functional.relu(x - 2)]"),
    "tensor_einsum": ("Tensor", "return torch.einsum('ij,kj->ik', x, x)"),
    "tensor_clone_detach": ("Tensor", "y = x.detach().clone()\ny += 1\nreturn x + y"),
    "tensor_masked_fill": ("Tensor", "return x.masked_fill(x > 3, -1.0)"),
    "tensor_gather_scatter": ("List[Tensor]", "idx = torch.tensor([[0, 0], [1, 0]])\nreturn [x.gather(1, idx), torch.zeros(2, 3).scatter(1, idx, 1.0)]"),
    "tensor_any_all": ("Tuple[bool, bool]", "return bool((x > 4).any()), bool((x >= 0).all())"),
    "tensor_numel_zero": ("int", "return x[x > 100].numel()"),
    "tensor_list_of_ints_tensor": ("Tensor", "return torch.tensor([len([1, 2]), 3])"),
    "tensor_from_float_list": ("Tensor", "return torch.tensor([1.5, 2.5]) * x[0, :2]"),
    "str_strip_chars": ("Tuple[str, str]", "return 'xxhixx'.strip('x'), 'a.b.c'.rsplit('.', 1)[0]"),
    "list_negative_index": ("Tuple[int, List[int]]", "l = [1, 2, 3]\nreturn l[-1], l[-2:]"),
    "dict_len_truth": ("Tuple[int, bool]", "d: Dict[str, int] = {}\nreturn len(d), len(d) == 0"),
    "tensor_abs_neg_sign": ("List[Tensor]", "y = x - 2\nreturn [y.abs(), -y, y.sign(), y.clamp(min=0)]"),
    "tensor_argmax_dim": ("Tuple[Tensor, Tensor]", "return x.argmax(1), x.argmax(0, keepdim=True)"),
    "tensor_transpose_contiguous": ("Tuple[bool, bool]", "t = x.t()\nreturn t.is_contiguous(), t.contiguous().is_contiguous()"),
    "int_float_mixed": ("List[float]", "a = 3\nb = 0.5\nreturn [a * b, a / 2, a + b, float(a ** 2)]"),
    "float_compare_int": ("Tuple[bool, bool]", "return 2.0 == 2, 1 < 1.5"),
    "tensor_int_scalar_ops": ("Tuple[int, float]", "return int(x.sum()) * 2, float(x.mean()) + 0.5"),
    "list_of_tuples_sort": ("List[int]", "l = [3, 1, 2]\nl.sort(reverse=True)\nreturn l"),
}

# programs that need modules of their own: name -> (class source, return annotation)
MODULES: dict[str, str] = {
    "moduledict_index": '''
class Inner(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return torch.relu(x - 2)

class Program(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = Inner()
        self.md = nn.ModuleDict({"relu": self.relu, "tanh": nn.Tanh()})

    def forward(self, x: Tensor) -> Tensor:
        return self.md["relu"](x) + self.md["tanh"](x)
''',
    "modulelist_loop": '''
class Program(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(3)])

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x
''',
    "modulelist_index": '''
class Program(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 2)])

    def forward(self, x: Tensor) -> Tensor:
        return self.layers[1](self.layers[0](x))
''',
    "sequential": '''
class Program(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))

    def forward(self, x: Tensor) -> Tensor:
        return self.seq(x)
''',
    "module_attributes": '''
class Program(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 2.5
        self.names: List[str] = ["a", "b"]
        self.table: Dict[str, int] = {"a": 1}
        self.register_buffer("offset", torch.ones(3))

    def forward(self, x: Tensor) -> Tuple[Tensor, str, int]:
        return x * self.scale + self.offset, self.names[1], self.table["a"]
''',
    "module_state_update": '''
class Program(nn.Module):
    def __init__(self):
        super().__init__()
        self.count = 0

    def forward(self, x: Tensor) -> int:
        self.count += 1
        return self.count
''',
    "module_interface": '''
@torch.jit.interface
class Act(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        pass

class Double(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x * 2

class Program(nn.Module):
    act: Act

    def __init__(self):
        super().__init__()
        self.act = Double()

    def forward(self, x: Tensor) -> Tensor:
        return self.act.forward(x)
''',
    "frozen_module": '''
class Program(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 2)
        self.flag = True

    def forward(self, x: Tensor) -> Tensor:
        y = self.conv(x.view(1, 1, 2, 3))
        if self.flag:
            y = y + 1
        return y
''',
    "submodule_identity": '''
class Program(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU()
        self.md = nn.ModuleDict({"relu": self.relu})

    def forward(self, x: Tensor) -> bool:
        return self.md["relu"] is self.relu
''',
    "isinstance_any": '''
class Program(nn.Module):
    def forward(self, x: Tensor) -> str:
        a: Any = 3
        if isinstance(a, int):
            return "int"
        return "other"
''',
}
FROZEN = {"frozen_module"}


def _source() -> str:
    parts = [HEADER]
    for name, (returns, body) in PROGRAMS.items():
        parts.append(
            f"class {name}(nn.Module):\n    def forward(self, x: Tensor) -> {returns}:\n"
            + textwrap.indent(body, " " * 8) + "\n"
        )
    for name, text in MODULES.items():
        parts.append(text.replace("class Program(", f"class {name}(").replace("Program()", f"{name}()"))
    return "\n\n".join(parts)


def _numpy(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().resolve_conj().numpy()
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return tuple(_numpy(v) for v in value)
    if isinstance(value, (list, tuple)):
        return type(value)(_numpy(v) for v in value)
    if isinstance(value, dict):
        return {k: _numpy(v) for k, v in value.items()}
    return value


def _same(a: Any, b: Any) -> bool:
    import numpy as np

    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)))
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a:
        return b != b
    return type(a) is type(b) and a == b or (isinstance(a, float) and isinstance(b, float) and abs(a - b) <= 1e-6 * max(1.0, abs(a)))


def _torch_outcomes(module: Any, x: Any, path: Path) -> list[tuple[str, Any]]:
    """torch's answer on a fresh copy of the module (its state untouched), optimized and not."""
    import torch

    outcomes = []
    for optimized in (True, False):
        module = torch.jit.load(str(path))
        with torch.jit.optimized_execution(optimized), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                outcomes.append(("ok", _numpy(module(x.clone()))))
            except Exception as err:  # noqa: BLE001  (torch's error: irvm must raise too)
                outcomes.append(("error", str(err).strip().splitlines()[-1][:100]))
    return outcomes


def run_one(name: str, mod: Any, workdir: Path) -> dict[str, str]:
    import numpy as np
    import torch

    import compiler
    import vm
    from compiler.torchscript import compile_archive
    from vm.core.errors import IRError

    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    module = getattr(mod, name)().eval()
    try:
        scripted = torch.jit.script(module)
        if name in FROZEN:
            scripted = torch.jit.freeze(scripted)
    except Exception as err:  # noqa: BLE001
        return {"all": f"torch cannot script it: {str(err).strip().splitlines()[0][:80]}"}
    path = workdir / f"{name}.pt"
    torch.jit.save(scripted, str(path))
    wants = _torch_outcomes(scripted, x, path)
    results: dict[str, str] = {}
    sources = {"graph": lambda: (compiler.compile_source(str(scripted.inlined_graph)), None),
               "pt": lambda: compile_archive(path)}
    for source, make in sources.items():
        try:
            program, weights = make()
        except IRError as err:
            for backend in ("interp", "static"):
                results[f"{source}/{backend}"] = f"refused: {str(err).strip().splitlines()[0][:100]}"
            continue
        except Exception as err:  # noqa: BLE001
            for backend in ("interp", "static"):
                results[f"{source}/{backend}"] = f"internal: {type(err).__name__}: {str(err)[:100]}"
            continue
        if weights is None and source == "graph":  # what tools/export_torch.py writes for a dump
            from export_torch import module_weights

            weights = module_weights(scripted, scripted.inlined_graph) or None
        for backend, runtime_class in (("interp", vm.Interpreter), ("static", vm.StaticRuntime)):
            fresh = None if weights is None else type(weights)(
                {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in weights.items()})
            results[f"{source}/{backend}"] = _judge(runtime_class, program, fresh, x, wants)
    return results


def _judge(runtime_class: Any, program: Any, weights: Any, x: Any, wants: list[tuple[str, Any]]) -> str:
    from vm.core.errors import IRError

    try:
        runtime = runtime_class(program, weights) if weights is not None else runtime_class(program)
        got = ("ok", runtime(x.numpy().copy()))
        runtime(x.numpy().copy())  # the static runtime's planned code runs from the second call
    except IRError as err:
        got = ("error", str(err))
    except Exception as err:  # noqa: BLE001
        return f"internal: {type(err).__name__}: {str(err)[:100]}"
    if any(w[0] == "ok" and got[0] == "ok" and _same(w[1], got[1]) for w in wants):
        return "match"
    if got[0] == "error" and any(w[0] == "error" for w in wants):
        return "match"
    if got[0] == "error":
        return f"refused: {str(got[1]).strip().splitlines()[0][:100]}"
    return f"wrong: torch {str(wants[0][1])[:60]!s} irvm {str(got[1])[:60]!s}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="run these programs only")
    parser.add_argument("--json", help="write the outcomes here")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        source = workdir / "language_corpus.py"
        source.write_text(_source())
        spec = importlib.util.spec_from_file_location("language_corpus", source)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules["language_corpus"] = mod
        spec.loader.exec_module(mod)
        names = args.only or [*PROGRAMS, *MODULES]
        outcomes = {name: run_one(name, mod, workdir) for name in names}
    counts: dict[str, int] = {}
    for name, per in outcomes.items():
        for key, outcome in per.items():
            kind = outcome.split(":")[0]
            counts[kind] = counts.get(kind, 0) + 1
            if kind != "match":
                print(f"{name:32} {key:14} {outcome}")
    total = sum(counts.values())
    print(f"{len(outcomes)} programs, {total} runs: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
          + f"; match rate {counts.get('match', 0) / max(total, 1):.1%}")
    if args.json:
        Path(args.json).write_text(json.dumps(outcomes, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
