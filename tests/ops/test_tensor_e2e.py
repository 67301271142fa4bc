"""Tensor kernels end to end: TorchScript functions covering most of the tensor overloads
TorchScript emits are scripted by torch, their printed IR compiled by irvm, and run on the
interpreter and on the static runtime; every output must equal torch's (type, dtype,
shape, values).  This is where a kernel schema that resolve() cannot fit, or an overload
TorchScript prints that irvm lacks, shows up."""

# The functions below are TorchScript programs written as test data: several operators per line
# (each statement becomes nodes of the dump) and typing.List as TorchScript spells it.
# ruff: noqa: E702, UP006, UP035

from __future__ import annotations

from typing import List

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import compiler  # noqa: E402
import vm  # noqa: E402
from tests.support.against_torch import assert_matches, to_numpy  # noqa: E402


def views_indexing_and_conversions(x: torch.Tensor, y: torch.Tensor, i: int):
    a = x.float() + 1; b = x.long() * 2; c = x.to(torch.float64) / 3; d = x.to(y); e = x.type_as(y)
    z = x.clone(); z[1:3] = y[0:2]; z[0] = 1.0
    m = torch.einsum("ij,jk->ik", x, y.t()); n = x[y > 0]; o = x[:, 1]; p = torch.zeros(3, 4)
    q = x.max(); r = x.size(); s = x.shape[0]; t = x // 2; u = x % 3; v = x.sum(1); w = x.norm()
    z1 = x.std(); z2 = x.var(0); z4 = torch.tensor([1, 2]); z5 = x.new_zeros([2])
    z6 = torch.full([2], 1.5); z8 = x.clamp(min=0); z9 = torch.arange(5); z10 = torch.arange(0, 5, 2)
    z11 = x.max(1)[0]; z12 = torch.max(x, y); z13 = x[i]; z14 = x[..., None]; z15 = x.contiguous(); z16 = x.view(-1)
    z17 = torch.where(x > 0, x, 0.0); z18 = x.float().mean(); z19 = x ** 2; z20 = 2 ** x; z21 = torch.round(x, decimals=2)
    z22 = x.sum(dtype=torch.float64); z23 = x.flatten(1); z24 = x.split(2); z25 = x.chunk(2, 1); z26 = torch.cat([x, y], 1)
    return (a, b, c, d, e, z, m, n, o, p, q, r, s, t, u, v, w, z1, z2, z4, z5, z6, z8, z9, z10, z11, z12, z13, z14,
            z15, z16, z17, z18, z19, z20, z21, z22, z23, z24, z25, z26)

def a_layer_and_reductions(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor):
    h = torch.nn.functional.linear(x, w, b)
    h = torch.relu(h) + torch.sigmoid(h) * torch.tanh(h) - torch.nn.functional.gelu(h)
    s = torch.softmax(h, -1); ls = torch.log_softmax(h, dim=1)
    v, idx = h.topk(2, dim=1); srt, si = torch.sort(h, dim=0, descending=True)
    g = torch.gather(h, 1, idx); k = h.argmax(1); am = h.argmin(); cs = h.cumsum(0)
    mm = h @ h.t(); bm = torch.bmm(h.unsqueeze(0), h.t().unsqueeze(0)); ad = torch.addmm(b, x, w.t())
    h2 = h.clone(); h2.add_(1.0); h2.mul_(2); h2.clamp_(max=3.0); h2.masked_fill_(h2 > 2, -1.0)
    idx2 = torch.tensor([0, 2]); sel = h.index_select(0, idx2); ip = h.clone(); ip[idx2] = 0.0
    tri = torch.tril(h); tru = h.triu(1); lse = torch.logsumexp(h, 1); pr = h.prod(); an = (h > 0).any(); al = (h > 0).all(1)
    st = torch.stack([h, h], 1); pe = h.permute(1, 0); ex = b.expand(3, 4); rp = h.repeat(2, 1); sq = h.unsqueeze(1).squeeze(1)
    dv = torch.div(h, 3, rounding_mode='floor'); tr = torch.div(h, 3, rounding_mode='trunc'); nz = torch.nonzero(h > 0)
    ones = torch.ones_like(h); fl = torch.full_like(h, 7); mx = torch.maximum(h, ones); sgn = h.sign(); rs = torch.rsqrt(h.abs() + 1)
    return (h, s, ls, v, idx, srt, si, g, k, am, cs, mm, bm, ad, h2, sel, ip, tri, tru, lse, pr, an, al, st, pe, ex, rp, sq,
            dv, tr, nz, ones, fl, mx, sgn, rs, h.dim(), h.numel(), h.size(1), torch.erf(h), torch.ops.aten.silu(h), h.log1p().exp())

def loops_inplace_and_bitwise(x: torch.Tensor, n: int):
    acc = torch.zeros_like(x)
    for k in range(n):
        acc = acc + x * k
        acc -= 1
        if bool(acc.sum() > 10):
            acc = acc / 2
    parts = torch.unbind(acc, 0)
    out: List[torch.Tensor] = []
    for p in parts:
        out.append(p.neg())
    ii = x.to(torch.int32); bb = ii & 3; oo = ii | 4; xx = ii ^ 1; lt = torch.logical_and(x > 0, x < 2)
    return torch.stack(out), acc.narrow(0, 1, 2), x.select(1, 0), x.transpose(0, 1), x.masked_fill(x > 1, 0.5), bb, oo, xx, lt, x.eq(1.0), x.ne(x), x.le(0.5)



CASES = [
    (views_indexing_and_conversions, lambda g: (torch.randn(4, 4, generator=g), torch.randn(4, 4, generator=g), 2)),
    (a_layer_and_reductions, lambda g: (torch.randn(3, 5, generator=g), torch.randn(4, 5, generator=g),
                                        torch.randn(4, generator=g))),
    (loops_inplace_and_bitwise, lambda g: (torch.randn(4, 3, generator=g), 4)),
]


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("fn,make_args", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("backend", ["Interpreter", "StaticRuntime"])
def test_scripted_function_matches_torch(fn, make_args, backend) -> None:
    scripted = torch.jit.script(fn)
    program = compiler.compile_source(str(scripted.graph), filename=f"{fn.__name__}.ir")
    runner = getattr(vm, backend)(program)
    for seed in range(3):
        args = make_args(torch.Generator().manual_seed(seed))
        expected = scripted(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
        got = runner(*to_numpy(list(args)))
        assert_matches(got, expected)
