"""Write real PyTorch graph dumps to tests/data/dumps/*.ir, the parser's test data.

Scripts, traces and freezes ~30 varied functions and modules with torch (control flow,
loops, lists, dicts, strings, tuples, Optional, raise, class-typed ``%self`` modules,
traced graphs with refined ``Float(...)`` types and scopes, frozen modules with tensor
constants, fusion groups from ``last_executed_optimized_graph`` after profiling runs,
inlined graphs, a Python op) and writes what ``print(graph)`` shows, unchanged.

    python tools/dump_parser_cases.py            # needs torch (pip install torch==2.13.0)
    python tools/dump_parser_cases.py --check    # only report which dumps would change

Source comments carry this machine's paths for torch's own files; they are rewritten to
be relative to the torch package (``torch/nn/functional.py:12:4``) so dumps are stable.
"""

# The functions below are TorchScript sources: typing.List/Dict/Tuple/Optional/Union and str.format
# are kept on purpose (the dumps are what torch prints for them).
# ruff: noqa: UP006, UP007, UP032, UP035, UP045

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "dumps"
CASES: dict[str, Callable[[], str]] = {}


def case(fn: Callable[[], str]) -> Callable[[], str]:
    CASES[fn.__name__] = fn
    return fn


def scripted(fn: Callable[..., object]) -> str:
    return str(torch.jit.script(fn).graph)


# ---------------------------------------------------------------- scripted functions


def _control_flow(x: torch.Tensor, n: int) -> torch.Tensor:
    if n > 3:
        y = x * 2
    elif n < 0:
        y = x - 1
    else:
        y = x.relu()
    return y


def _loops(x: torch.Tensor, n: int) -> Tuple[torch.Tensor, int]:
    acc = 0
    for i in range(n):
        if i % 2 == 0:
            continue
        acc += i
        x = x + i
        if acc > 100:
            break
    while acc > 0:
        acc -= 7
    return x, acc


def _lists(xs: List[torch.Tensor], k: List[int]) -> List[int]:
    out: List[int] = []
    for v in k:
        out.append(v * 2)
    out.extend([len(xs), 3])
    out.insert(0, -1)
    return out[1:] + sorted(out)


def _dicts(d: Dict[str, torch.Tensor], key: str) -> Dict[str, int]:
    res: Dict[str, int] = {}
    for k, v in d.items():
        res[k + key] = v.numel()
    if "a" in d:
        res["has_a"] = 1
    return res


def _strings(s: str, n: int) -> str:
    t = s.upper() + "-" + str(n) + 'quote" \\ back\tslash\n' + "é"
    if t.startswith("X"):
        t = t.replace("X", "Y")
    return t.format(n) + ",".join(["a", "b"])


def _tuples(x: torch.Tensor) -> Tuple[torch.Tensor, Tuple[int, float], bool]:
    a, b = x.chunk(2)
    shape = (x.dim(), 2.5)
    return a + b, shape, x.is_floating_point()


def _optional(x: torch.Tensor, scale: Optional[float] = None, dim: Optional[int] = None) -> torch.Tensor:
    if scale is not None:
        x = x * scale
    if dim is None:
        return x.sum()
    return x.sum(dim)


def _raises(x: torch.Tensor, n: int) -> torch.Tensor:
    if n < 0:
        raise ValueError("n must be >= 0, got {}".format(n))
    assert x.dim() == 2, "expected a matrix"
    return x.repeat(n, 1)


def _floats(x: float) -> List[float]:
    return [0.1, 1.0, -1.0, 1e-5, 1e20, -0.0, 100.0, 2.5e-7, 1e16, float("inf"), float("-inf"), float("nan"), x]


def _tensor_ops(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    y = torch.matmul(x, w.t()).softmax(-1)
    z = torch.cat([y, y], dim=1).view(-1, 2)
    idx = torch.arange(4, dtype=torch.long)
    return z.index_select(0, idx).to(torch.float64).mean(dtype=torch.float32)


def _nested(x: torch.Tensor, n: int) -> torch.Tensor:
    for i in range(n):
        for j in range(i):
            if (i + j) % 3 == 0:
                if j > 1:
                    x = x + j
                else:
                    x = x - i
    return x


def _devices(x: torch.Tensor) -> torch.Tensor:
    y = torch.zeros([2, 3], dtype=torch.float32, device=torch.device("cpu"), layout=torch.strided)
    return x.to(y.device) + y.contiguous(memory_format=torch.contiguous_format)


def _helper(x: torch.Tensor, k: int) -> torch.Tensor:
    return x * k


def _calls(x: torch.Tensor) -> torch.Tensor:
    return _helper(x, 2) + _helper(x, 3)


class _Pair(NamedTuple):
    a: torch.Tensor
    b: int


def _fork_union_namedtuple(x: torch.Tensor, u: Union[int, str], anything: Any) -> _Pair:
    fut = torch.jit.fork(torch.neg, x)
    y = torch.jit.wait(fut)
    if isinstance(u, int):
        y = y + u
    return _Pair(y, 2)


for _fn in (_fork_union_namedtuple, _control_flow, _loops, _lists, _dicts, _strings, _tuples, _optional, _raises, _floats,
            _tensor_ops, _nested, _devices, _calls):  # fmt: skip
    CASES["script" + _fn.__name__] = (lambda f: lambda: scripted(f))(_fn)


@case
def script_calls_inlined() -> str:
    return str(torch.jit.script(_calls).inlined_graph)


# ---------------------------------------------------------------- modules


class _Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.1), nn.Linear(8, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.log_softmax(self.seq(x), dim=-1)


class _Cnn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(F.relu(self.bn(self.conv(x)))).flatten(1)


class _Lstm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(3, 5, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, (h, c) = self.lstm(x)
        return out + h.transpose(0, 1)


class _Buffers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.tensor([0.1234567, -0.2, 3.0, 4e-5]))
        self.register_buffer("idx", torch.tensor([[1, 2], [3, 4]]))
        self.register_buffer("mask", torch.tensor([True, False, True, True]))
        self.register_buffer("cube", torch.arange(8.0).reshape(2, 2, 2) / 3)
        self.register_buffer("halfv", torch.tensor(0.5))
        self.register_buffer("big", torch.linspace(-1, 1, 30))
        self.scales = [1.0, 2.5]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * self.w + self.idx.sum() + self.cube.sum() + self.halfv + self.big.mean()
        return torch.where(self.mask, y, y * self.scales[1])


class _Constants(nn.Module):
    """Attributes of every kind, which freezing turns into constants."""

    ls: List[int]
    d: Dict[str, int]

    def __init__(self) -> None:
        super().__init__()
        self.ls = []
        self.d = {"a": 1, "b": 2}
        self.t = (1, 2.5, "x")
        self.fl = [1.5, 2.0]
        self.register_buffer("cube", torch.arange(8.0).reshape(2, 2, 2) / 3)
        self.register_buffer("small", torch.tensor([1e-5, 2e-5, 3e-3]))
        self.register_buffer("m", torch.tensor([[1.5, 2], [3, 4]]))
        self.register_buffer("c4", torch.ones(1, 2, 1, 2))
        self.register_buffer("ints", torch.tensor([[1, -2], [3, 4]]))

    def forward(self, x: torch.Tensor):  # type: ignore[no-untyped-def]
        s = x.sum()
        return (s * self.cube, x * self.small, s + self.m, len(self.ls), self.d, self.t, self.fl,
                self.ls, s * self.c4, s.long() * self.ints)  # fmt: skip


@case
def frozen_constants() -> str:
    return str(torch.jit.freeze(torch.jit.script(_Constants().eval())).graph)


def _module_graph(module: nn.Module, inlined: bool = False) -> str:
    scripted_module = torch.jit.script(module.eval())
    return str(scripted_module.inlined_graph if inlined else scripted_module.graph)


@case
def module_sequential() -> str:
    return _module_graph(_Mlp())


@case
def module_sequential_inlined() -> str:
    return _module_graph(_Mlp(), inlined=True)


@case
def module_cnn_inlined() -> str:
    return _module_graph(_Cnn(), inlined=True)


@case
def module_lstm() -> str:
    return _module_graph(_Lstm())


@case
def module_transformer_layer() -> str:
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    return _module_graph(layer)


@case
def frozen_mlp() -> str:
    return str(torch.jit.freeze(torch.jit.script(_Mlp().eval())).graph)


@case
def frozen_cnn() -> str:
    return str(torch.jit.freeze(torch.jit.script(_Cnn().eval())).graph)


@case
def frozen_buffers() -> str:
    return str(torch.jit.freeze(torch.jit.script(_Buffers().eval())).graph)


@case
def traced_mlp() -> str:
    return str(torch.jit.trace(_Mlp().eval(), torch.randn(2, 4)).graph)


@case
def traced_mlp_inlined() -> str:
    return str(torch.jit.trace(_Mlp().eval(), torch.randn(2, 4)).inlined_graph)


@case
def traced_cnn_inlined() -> str:
    return str(torch.jit.trace(_Cnn().eval(), torch.randn(1, 1, 6, 6)).inlined_graph)


@case
def traced_function() -> str:
    def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (x @ y).clamp(min=0.0, max=6.0).sum(dim=0, keepdim=True)

    return str(torch.jit.trace(f, (torch.randn(3, 4), torch.randn(4, 2))).graph)


class _MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):  # type: ignore[no-untyped-def, override]
        return x.clamp(min=0) * k

    @staticmethod
    def backward(ctx, g):  # type: ignore[no-untyped-def, override]
        return g, None


@case
def traced_python_op() -> str:
    def f(x: torch.Tensor) -> torch.Tensor:
        return _MyReLU.apply(x, 2.5) + 1

    return str(torch.jit.trace(f, torch.randn(3)).graph)


# ---------------------------------------------------------------- fused graphs


def _fused(fn: Callable[..., torch.Tensor], *args: object, runs: int = 3) -> str:
    torch._C._jit_override_can_fuse_on_cpu(True)
    torch._C._jit_set_texpr_fuser_enabled(True)
    torch._C._jit_set_te_must_use_llvm_cpu(False)
    scripted_fn = torch.jit.script(fn)
    with torch.jit.optimized_execution(True):
        for _ in range(runs):
            scripted_fn(*args)
    return str(torch.jit.last_executed_optimized_graph())


def _pointwise(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    a = torch.sigmoid(x) * y + 1.0
    return torch.tanh(a) - x * 0.5


def _pointwise_branch(x: torch.Tensor, y: torch.Tensor, flag: bool) -> torch.Tensor:
    if flag:
        z = (x + y).relu() * 2.0
    else:
        z = (x - y).sigmoid() / 3.0
    return z.exp() + z


@case
def fused_pointwise() -> str:
    return _fused(_pointwise, torch.randn(4, 5), torch.randn(4, 5))


@case
def fused_branches() -> str:
    return _fused(_pointwise_branch, torch.randn(3, 3), torch.randn(3, 3), True)


@case
def fused_profiled_once() -> str:
    return _fused(_pointwise, torch.randn(2, 2), torch.randn(2, 2), runs=1)


# ---------------------------------------------------------------- driver


def _stable_paths(text: str) -> str:
    """``# /site-packages/torch/nn/functional.py:12:4`` -> ``# torch/nn/functional.py:12:4``."""
    torch_root = str(Path(torch.__file__).resolve().parent.parent) + "/"
    here = str(Path(__file__).resolve().parent.parent) + "/"
    text = text.replace(torch_root, "").replace(here, "")
    return re.sub(r"/tmp/[^ :\n]*/", "", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="report changed dumps, write nothing")
    parser.add_argument("names", nargs="*", help="only these cases")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    OUT.mkdir(parents=True, exist_ok=True)
    changed = 0
    for name, make in CASES.items():
        if args.names and name not in args.names:
            continue
        torch.manual_seed(0)  # each case alone gives the same dump as in a full run
        text = _stable_paths(make())
        path = OUT / f"{name}.ir"
        if path.exists() and path.read_text() == text:
            continue
        changed += 1
        print(f"{'would change' if args.check else 'wrote'} {path.relative_to(OUT.parent.parent)}")
        if not args.check:
            path.write_text(text)
    print(f"{len(CASES)} cases, {changed} changed")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
