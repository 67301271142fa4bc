"""The Python source of the differential corpus (``tests/data/corpus/``).

Each ``Case`` names a function or module factory (defined below, or for tensor operators,
modules and semantic traps in ``tools/corpus_tensor_programs.py``), the sample inputs to run it on,
how to compile it (script, trace, freeze) and the features it exercises (the rows of
``docs/features.md``).  ``python tools/gen_corpus.py`` scripts every case with torch,
writes the dump, inputs, weights and torch's outputs, and is the only writer of
``tests/data/corpus/``.  Inputs are made under ``torch.manual_seed`` of a per-case seed, so a
rerun rewrites identical files.

To add a program: write the function in one of the two files, add a ``Case`` to ``CASES`` (features from
``FEATURES``), run ``python tools/gen_corpus.py``, and commit the new files.
"""

# These are TorchScript programs: typing.List/Optional annotations, d.keys(), sorted(list(...))
# are kept on purpose (each becomes a node of the dump).
# ruff: noqa: UP006, UP032, UP035, UP045, SIM118, C414, PLC0206

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import corpus_tensor_programs as tp
import torch

FEATURES = {
    "control-flow": "if/else, while, for-range, break/continue, nested loops, early return",
    "scalars": "int/float/bool arithmetic, floordiv and mod with negatives, int division",
    "lists": "lists built in loops, append/pop/slicing/len/sort",
    "tuples": "tuple construct, index, unpack, nested tuples",
    "dicts": "dict construct, set/get, keys/values/items, membership",
    "strings": "str format, join, str methods",
    "optional": "Optional inputs, None and not None",
    "calls": "calls between scripted functions (inlined in the dump)",
    "raise": "raise/assert whose error path is taken",
    "pointwise": "pointwise tensor ops, broadcasting, type promotion, int tensors",
    "reductions": "sum/mean/max/argmax/prod... over dims",
    "shape": "view/reshape/permute/transpose/squeeze/expand/flatten",
    "indexing": "slicing, select, tensor indexing, slice assignment",
    "matmul": "mm/matmul/bmm/einsum/addmm/linear",
    "join-split": "cat/stack/split/chunk/unbind",
    "creation": "zeros/ones/full/arange/eye/*_like",
    "nn-functional": "softmax, layer_norm, conv2d, max_pool2d, batch_norm, embedding...",
    "inplace": "in-place ops and aliasing views",
    "seed": "the seed programs (x*2, dim loop, ratio_iou, lunif2, LSTM cell)",
    "module": "scripted nn.Module (%self, prim::GetAttr, weights)",
    "traced": "torch.jit.trace'd functions and modules",
    "frozen": "torch.jit.freeze'd module (parameters as tensor constants)",
}


@dataclass
class Case:
    name: str
    target: Any  # a function, or a zero-arg factory returning an nn.Module
    inputs: Callable[[], tuple]
    features: tuple
    trace: bool = False
    freeze: bool = False
    inline: bool = True  # False: keep the calls, one `with NAME = graph(...)` per callee


def r(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


# -- seeds --------------------------------------------------------------------------------


def x2(x):
    return x * 2


def dim_loop(x):
    for i in range(x.dim()):  # noqa: B007 (TorchScript source: the name shows in the IR)
        x = x * x
    return x


def ratio_iou(x1, y1, w1, h1, x2, y2, w2, h2):
    xi = torch.max(x1, x2)  # Intersection left
    yi = torch.max(y1, y2)  # Intersection top
    wi = torch.clamp(torch.min(x1 + w1, x2 + w2) - xi, min=0.)  # Intersection width
    hi = torch.clamp(torch.min(y1 + h1, y2 + h2) - yi, min=0.)  # Intersection height
    area_i = wi * hi  # Area Intersection
    area_u = w1 * h1 + w2 * h2 - wi * hi  # Area Union
    return area_i / torch.clamp(area_u, min=1e-5)  # Intersection over Union


def lunif2(x, t: int = 2):
    t = 2
    xnorm = torch.norm(x, p=2, dim=1).pow(2)
    sq_pdist = xnorm[None] + xnorm[:, None] - 2 * torch.mm(x, x.t())
    exp = sq_pdist.mul(-t).exp().tril(diagonal=-1)
    N = x.size(0)
    res = exp.sum().mul(2 / (N * N - N)).log()
    return res


def lstm_cell(x, hx, cx, w_ih, w_hh, b_ih, b_hh):
    gates = x.mm(w_ih.t()) + hx.mm(w_hh.t()) + b_ih + b_hh
    ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
    ingate = torch.sigmoid(ingate)
    forgetgate = torch.sigmoid(forgetgate)
    cellgate = torch.tanh(cellgate)
    outgate = torch.sigmoid(outgate)
    cy = (forgetgate * cx) + (ingate * cellgate)
    hy = outgate * torch.tanh(cy)
    return hy, cy


def ratio_iou_inputs():
    x1, y1, w1, h1, x2_, y2, w2, h2 = torch.randn(8, 4, 5).exp()
    return (x1, y1, w1, h1, x2_, y2, w2, h2)


def lunif2_inputs():
    x = torch.randn(16, 8)
    return (x / x.norm(p=2, dim=1, keepdim=True), 2)


def lstm_cell_inputs():
    return (r(3, 4), r(3, 5), r(3, 5), r(20, 4), r(20, 5), r(20), r(20))


# -- control flow -------------------------------------------------------------------------


def if_else(x, flag: bool):
    if flag:
        y = x * 2
    elif bool(x.sum() > 0):
        y = x - 1
    else:
        y = -x
    return y


def while_collatz(n: int):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def for_range(x, n: int):
    total = 0
    acc = torch.zeros_like(x)
    for i in range(n):
        total += i * i
        acc = acc + x * i
    return total, acc


def break_continue(n: int):
    acc = 0
    seen: List[int] = []
    for i in range(n):
        if i % 3 == 0:
            continue
        if i > 13:
            break
        acc += i
        seen.append(i)
    return acc, seen


def nested_loops_tuple(x, n: int, m: int):
    state = (x, 0)
    for i in range(n):
        for j in range(m):
            t, c = state
            if (i + j) % 2 == 0:
                state = (t + float(j), c + 1)
            else:
                state = (t * 0.5, c)
    return state


def early_return(x, n: int):
    if n == 0:
        return x
    for i in range(n):  # noqa: B007 (TorchScript source: the name shows in the IR)
        if bool(x.max() > 10.0):
            return x * -1.0
        x = x * 3.0
    return x + 0.5


def while_tensor_cond(x):
    count = 0
    while bool(x.norm() > 1.0):
        x = x / 2
        count += 1
    return x, count


def gcd_fib(a: int, b: int, n: int):
    while b != 0:
        a, b = b, a % b
    f0, f1 = 0, 1
    for _ in range(n):
        f0, f1 = f1, f0 + f1
    return a, f0


# -- scalars ------------------------------------------------------------------------------


def int_math(a: int, b: int):
    return a + b, a - b, a * b, a // b, a % b, -a // b, -a % b, a // -b, a % -b, a ** 2, abs(-a), max(a, b), min(a, b)


def float_math(a: float, b: float):
    return a / b, a // b, a % b, -a % b, a ** 2.0, math.sqrt(abs(a)), math.exp(b), math.log(abs(a) + 1.0), round(a), float(int(a))


def int_division(a: int, b: int):
    return a / b, float(a) / b, a // b, int(a / b), divmod(a, b)


def bool_logic(a: bool, b: bool, n: int):
    c = a and not b
    d = a or n > 3
    e = (n > 0) != b
    f = not (a and b) or n == 2
    return c, d, e, f, int(a) + int(b), float(b)


def scalar_from_tensor(x):
    s = x.sum()
    i = int(x.argmax())
    f = float(s)
    n = x.numel()
    b = bool(s > 0)
    return i, f, n, b, x.size(0) * x.size(1)


# -- lists, tuples, dicts, strings --------------------------------------------------------


def list_build(n: int):
    xs: List[int] = []
    for i in range(n):
        xs.append(i * i - 3 * i)
    squares = [v * 2 for v in xs]
    return xs, squares, len(xs)


def list_ops(xs: List[int]):
    ys = xs.copy()
    last = ys.pop()
    first = ys.pop(0)
    ys.insert(1, 100)
    ys.sort()
    middle = ys[1:-1]
    rev = ys[::-1] if len(ys) > 0 else ys
    total = 0
    for v in ys:
        total += v
    return ys, last, first, middle, rev, len(ys), total, 100 in ys, ys.index(100)


def list_of_tensors(x, n: int):
    parts: List[torch.Tensor] = []
    for i in range(n):
        parts.append(x * float(i))
    stacked = torch.stack(parts)
    joined = torch.cat(parts, dim=0)
    return stacked, joined, len(parts), parts[-1]


def list_float_sort(xs: List[float]):
    ys = sorted(xs)
    zs = xs[:]
    zs.sort(reverse=True)
    return ys, zs, sum(xs), max(xs), min(xs)


def tuple_ops(x, y):
    t = (x, y, x.size(0))
    a, b, n = t
    nested = ((a + b, n), (a - b, n * 2))
    first = nested[0]
    return nested, first[1], t[2] + nested[1][1], len(t)


def dict_ops(keys: List[str], values: List[int]):
    d: Dict[str, int] = {}
    for k, v in zip(keys, values):
        d[k] = d.get(k, 0) + v
    total = 0
    for k in d.keys():
        total += d[k]
    names = sorted(list(d.keys()))
    return d, total, len(d), "a" in d, names, d.get("zz", -1)


def dict_tensors(x):
    d: Dict[str, torch.Tensor] = {"double": x * 2, "square": x * x}
    d["neg"] = -x
    acc = torch.zeros_like(x)
    for v in d.values():
        acc = acc + v
    return d, acc


def dict_int_keys(n: int):
    d: Dict[int, float] = {}
    for i in range(n):
        d[i * 10] = float(i) / 2
    items = d.items()
    s = 0.0
    for k, v in items:
        s += v * k
    return d, s, list(d.keys())


def string_format(name: str, n: int, f: float):
    a = "{} has {} items".format(name, n)
    b = f"{name}:{n}:{f}"
    c = ", ".join([name, str(n), "end"])
    d = name + "_" + str(n * 2)
    return a, b, c, d, len(d), name.upper(), name.startswith("ab"), c.split(", ")


def list_aliasing(n: int):
    a: List[int] = [1, 2]
    b = a  # the same list: TorchScript lists are references, as in Python
    for i in range(n):
        b.append(i)
    c = a.copy()
    c.append(99)
    return a, b, c, len(a) == len(b)


def stack_machine(code: List[int]):
    stack: List[int] = []
    depth = 0
    for op in code:
        if op >= 0:
            stack.append(op)
        elif op == -1 and len(stack) >= 2:
            y = stack.pop()
            x = stack.pop()
            stack.append(x + y)
        elif op == -2 and len(stack) >= 2:
            y = stack.pop()
            x = stack.pop()
            stack.append(x * y)
        depth = max(depth, len(stack))
    return stack, depth


def none_and_empty(x, flag: bool) -> Tuple[Optional[torch.Tensor], List[int], List[torch.Tensor], Optional[int]]:
    empty: List[int] = []
    tensors: List[torch.Tensor] = []
    maybe: Optional[torch.Tensor] = None
    if flag:
        maybe = x + 1
    return maybe, empty, tensors, None


def dtype_queries(x, i):
    return (x.dtype, i.dtype, x.is_floating_point(), i.is_floating_point(), x.dim(), x.size(), x.stride(0),
            x.to(torch.float64).dtype, x.to(i.dtype), i.to(x.dtype), x.type_as(i), x.long().sum(), x.int().dtype)


def str_of_numbers(f: float, n: int, b: bool):
    return str(f), str(n), str(b), "{} {} {}".format(f, n, b), str(f * 3), str(1e-5), str(1.0e20), str([n, n])


def inplace_on_input(x, y):
    x.add_(y)  # mutates the caller's tensor too
    y.mul_(2.0)
    return x, y, x.sum() + y.sum()


# -- Optional, calls, raise ---------------------------------------------------------------


def optional_tensor(x, bias: Optional[torch.Tensor], scale: Optional[float] = None):
    if bias is not None:
        x = x + bias
    if scale is None:
        s = 1.0
    else:
        s = scale
    return x * s


def optional_int(x, k: Optional[int]):
    if k is None:
        k = x.size(0) - 1
    return x[k], k


def _helper_affine(x, a: float, b: float):
    return x * a + b


def _helper_count_positive(x) -> int:
    n = 0
    values: List[float] = x.flatten().tolist()
    for v in values:
        if v > 0:
            n += 1
    return n


def calls_inlined(x):
    y = _helper_affine(x, 2.0, 1.0)
    z = _helper_affine(y, 0.5, -1.0)
    return z, _helper_count_positive(z)


def _norm_rows(x):
    return x / x.norm(p=2, dim=1, keepdim=True)


def _pairwise(x, y):
    return torch.mm(_norm_rows(x), _norm_rows(y).t())


def _best(scores) -> List[int]:
    best: List[int] = []
    for i in range(scores.size(0)):
        best.append(int(scores[i].argmax()))
    return best


def multi_function(x, y):
    s = _pairwise(x, y)
    return s, _best(s), _best(s.t())


def checked_div(x, n: int):
    if n <= 0:
        raise ValueError("n must be positive, got {}".format(n))
    return x / n


def assert_matrix(x):
    assert x.dim() == 2, "expected a matrix"
    return x.t()


def index_out_of_range(xs: List[int], i: int):
    return xs[i]


# -- the case list ------------------------------------------------------------------------


def _i(*vals: int) -> torch.Tensor:
    return torch.tensor(vals, dtype=torch.int64)


CASES = [
    # seeds
    Case("x2", x2, lambda: (r(5),), ("seed", "pointwise")),
    Case("x2_traced", x2, lambda: (r(5),), ("seed", "traced"), trace=True),
    Case("dim_loop", dim_loop, lambda: (r(3, 3),), ("seed", "control-flow")),
    Case("dim_loop_traced", tp.traced_loop, lambda: (r(3, 3),), ("seed", "traced"), trace=True),
    Case("ratio_iou", ratio_iou, ratio_iou_inputs, ("seed", "pointwise")),
    Case("lunif2", lunif2, lunif2_inputs, ("seed", "reductions", "matmul", "indexing")),
    Case("lstm_cell", lstm_cell, lstm_cell_inputs, ("seed", "matmul", "join-split", "tuples")),
    Case("lstm_cell_traced", lstm_cell, lstm_cell_inputs, ("seed", "traced"), trace=True),
    # control flow
    Case("if_else_true", if_else, lambda: (r(3), True), ("control-flow",)),
    Case("if_else_false", if_else, lambda: (r(3).abs() + 1, False), ("control-flow",)),
    Case("while_collatz", while_collatz, lambda: (27,), ("control-flow", "scalars")),
    Case("for_range", for_range, lambda: (r(2, 2), 5), ("control-flow",)),
    Case("break_continue", break_continue, lambda: (20,), ("control-flow", "lists")),
    Case("nested_loops_tuple", nested_loops_tuple, lambda: (r(3), 3, 4), ("control-flow", "tuples")),
    Case("early_return_zero", early_return, lambda: (r(3), 0), ("control-flow",)),
    Case("early_return_loop", early_return, lambda: (r(3).abs() + 1, 5), ("control-flow",)),
    Case("while_tensor_cond", while_tensor_cond, lambda: (r(4) * 10,), ("control-flow", "reductions")),
    Case("gcd_fib", gcd_fib, lambda: (1071, 462, 30), ("control-flow", "scalars", "tuples")),
    # scalars
    Case("int_math", int_math, lambda: (7, 3), ("scalars",)),
    Case("int_math_neg", int_math, lambda: (-17, 5), ("scalars",)),
    Case("float_math", float_math, lambda: (-7.5, 2.0), ("scalars",)),
    Case("int_division", int_division, lambda: (-7, 2), ("scalars",)),
    Case("bool_logic", bool_logic, lambda: (True, False, 2), ("scalars",)),
    Case("scalar_from_tensor", scalar_from_tensor, lambda: (r(3, 4),), ("scalars",)),
    # containers and strings
    Case("list_build", list_build, lambda: (6,), ("lists",)),
    Case("list_ops", list_ops, lambda: ([5, -2, 9, 0, 3, 7],), ("lists",)),
    Case("list_of_tensors", list_of_tensors, lambda: (r(2, 3), 3), ("lists", "join-split")),
    Case("list_float_sort", list_float_sort, lambda: ([2.5, -1.0, 3.25, 0.0],), ("lists",)),
    Case("tuple_ops", tuple_ops, lambda: (r(3), r(3)), ("tuples",)),
    Case("dict_ops", dict_ops, lambda: (["b", "a", "c", "a"], [1, 2, 3, 4]), ("dicts", "lists")),
    Case("dict_tensors", dict_tensors, lambda: (r(2, 2),), ("dicts",)),
    Case("dict_int_keys", dict_int_keys, lambda: (4,), ("dicts",)),
    Case("string_format", string_format, lambda: ("abc", 3, 0.5), ("strings",)),
    Case("list_aliasing", list_aliasing, lambda: (3,), ("lists",)),
    Case("stack_machine", stack_machine, lambda: ([3, 4, -1, 5, -2, 2, 7, -1, -2],), ("lists", "control-flow")),
    Case("none_and_empty_given", none_and_empty, lambda: (r(2), True), ("optional", "lists", "tuples")),
    Case("none_and_empty_none", none_and_empty, lambda: (r(2), False), ("optional", "lists", "tuples")),
    Case("dtype_queries", dtype_queries, lambda: (r(2, 3), _i(1, 2, 3)), ("scalars", "pointwise")),
    Case("str_of_numbers", str_of_numbers, lambda: (0.1, -42, True), ("strings",)),
    Case("inplace_on_input", inplace_on_input, lambda: (r(3), r(3)), ("inplace",)),
    # Optional, calls, raise
    Case("optional_none", optional_tensor, lambda: (r(3), None, None), ("optional",)),
    Case("optional_given", optional_tensor, lambda: (r(3), r(3), 2.0), ("optional",)),
    Case("optional_int_none", optional_int, lambda: (r(4), None), ("optional",)),
    Case("optional_int_given", optional_int, lambda: (r(4), 1), ("optional",)),
    Case("calls_inlined", calls_inlined, lambda: (r(2, 3),), ("calls", "lists")),
    Case("multi_function", multi_function, lambda: (r(3, 4), r(5, 4)), ("calls", "matmul", "lists")),
    Case("multi_function_graphs", multi_function, lambda: (r(3, 4), r(5, 4)), ("calls", "matmul", "lists"),
         inline=False),
    Case("calls_mixed_graphs", tp.calls_mixed, lambda: (r(5, 4), 2.0), ("calls", "optional", "tuples"), inline=False),
    Case("calls_mixed", tp.calls_mixed, lambda: (r(5, 4), None), ("calls", "optional", "tuples")),
    Case("raise_taken", checked_div, lambda: (r(2), -3), ("raise", "strings")),
    Case("raise_not_taken", checked_div, lambda: (r(2), 4), ("raise",)),
    Case("assert_fails", assert_matrix, lambda: (r(3),), ("raise",)),
    Case("list_index_error", index_out_of_range, lambda: ([1, 2, 3], 5), ("raise", "lists")),
    # tensor ops
    Case("pointwise_broadcast", tp.pointwise_broadcast, lambda: (r(3, 1), r(1, 4), r(4)), ("pointwise",)),
    Case("type_promotion", tp.type_promotion,
         lambda: (_i(1, -2, 3), _i(2, 2, -2), r(3), r(3).double(), torch.tensor([True, False, True])), ("pointwise",)),
    Case("int_tensor_ops", tp.int_tensor_ops, lambda: (_i(7, -7, 5, -5, 0), _i(2, 2, -3, -3, 4)), ("pointwise",)),
    Case("math_unary", tp.math_unary, lambda: (r(6),), ("pointwise",)),
    Case("reductions", tp.reductions, lambda: (r(2, 3, 4),), ("reductions", "tuples")),
    Case("shape_view", tp.shape_view, lambda: (r(2, 3, 4),), ("shape",)),
    Case("indexing_slicing", tp.indexing_slicing, lambda: (r(4, 5), _i(2, 0, 3), r(4, 5) > 0), ("indexing",)),
    Case("index_assign", tp.index_assign, lambda: (r(4, 3), r(2, 3)), ("indexing", "inplace")),
    Case("matmul_family", tp.matmul_family, lambda: (r(3, 4), r(4, 5), r(2, 3, 4), r(5)), ("matmul",)),
    Case("cat_stack_split", tp.cat_stack_split, lambda: (r(5, 2), r(2, 6)), ("join-split", "tuples")),
    Case("creation_ops", tp.creation_ops, lambda: (r(2, 3), 4), ("creation",)),
    Case("nn_functional", tp.nn_functional, lambda: (r(3, 4), r(2, 3, 2), r(4), r(4)), ("nn-functional",)),
    Case("inplace_ops", tp.inplace_ops, lambda: (r(2, 3),), ("inplace",)),
    Case("sort_topk", tp.sort_topk, lambda: (r(3, 3),), ("reductions", "shape")),
    Case("promotion_edges", tp.promotion_edges,
         lambda: (r(3), _i(-3, 4, 7), torch.tensor([1, -2, 3], dtype=torch.int32),
                  torch.tensor([1, 10, 200], dtype=torch.uint8), torch.tensor([True, False, True])), ("pointwise",)),
    Case("float_semantics", tp.float_semantics, lambda: (torch.tensor([-3.5, -2.5, -0.5, 0.5, 1.5, 2.5]),),
         ("pointwise", "reductions")),
    Case("scalar_traps", tp.scalar_traps, lambda: (-2.5, -7), ("scalars",)),
    Case("scalar_traps_pos", tp.scalar_traps, lambda: (2.5, 13), ("scalars",)),
    Case("tensor_from_lists", tp.tensor_from_lists, lambda: ([1.5, -2.0, 3.0], [4, 5, 6], r(2, 3)),
         ("creation", "lists", "scalars")),
    Case("string_more", tp.string_more, lambda: ("Hello World", "o W"), ("strings",)),
    # modules
    Case("mlp", tp.mlp, lambda: (r(2, 4),), ("module",)),
    Case("mlp_sequential", tp.mlp_sequential, lambda: (r(8, 1),), ("module",)),
    Case("cnn", tp.cnn, lambda: (r(2, 1, 8, 8),), ("module", "nn-functional")),
    Case("gated_attrs", tp.gated, lambda: (r(2, 4),), ("module", "control-flow")),
    Case("stack_modulelist", tp.stack, lambda: (_i(1, 4, 9, 0).reshape(2, 2),), ("module", "nn-functional")),
    Case("lstm_cell_module", tp.lstm_cell_module, lambda: (r(3, 4), (r(3, 5), r(3, 5))), ("module", "optional", "tuples")),
    Case("attrs_module", tp.attrs_module, lambda: (r(6),), ("module", "lists", "tuples", "strings", "optional")),
    Case("gru_cell_module", tp.gru_cell_module, lambda: (r(3, 4), r(3, 5)), ("module", "nn-functional", "optional")),
    Case("mlp_traced", tp.mlp, lambda: (r(2, 4),), ("module", "traced"), trace=True),
    Case("cnn_traced", tp.cnn, lambda: (r(2, 1, 8, 8),), ("module", "traced", "nn-functional"), trace=True),
    Case("traced_branches", tp.traced_branches, lambda: (r(3).abs(), r(3)), ("traced", "join-split"), trace=True),
    Case("mlp_frozen", tp.mlp, lambda: (r(2, 4),), ("module", "frozen"), freeze=True),
    Case("cnn_frozen", tp.cnn, lambda: (r(2, 1, 8, 8),), ("module", "frozen", "nn-functional"), freeze=True),
]
