"""Corpus programs, part two: tensor operators, nn.Modules, and semantic traps.

Part one, and the list of cases that uses both, is ``tools/corpus_programs.py``.
"""

# These are TorchScript programs: typing annotations, d.keys() and the like are kept on
# purpose (each becomes a node of the dump).
# ruff: noqa: UP006, UP035, UP045, PLR0124

import math
from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

# -- tensor ops ---------------------------------------------------------------------------


def pointwise_broadcast(a, b, c):
    u = a + b * 2
    v = torch.sub(a, b, alpha=3)
    w = (a - b) / (c.abs() + 1)
    z = torch.where(a > b, a, b).pow(2) + torch.exp(-c.abs())
    q = torch.sigmoid(a) * torch.tanh(b) - torch.relu(c) + torch.clamp(a, -0.5, 0.5)
    return u, v, w, z, q, torch.neg(a).sqrt().nan_to_num(0.0)


def type_promotion(i, j, f, d, b):
    return (i + 2.5, i / j, i * j, i + f, f + d, b + i, b & (i > 0), i.to(torch.float32) * 2,
            i // 3, f.double() + 1, i.float().mean(), (i > 1).sum(), i * True)


def int_tensor_ops(i, j):
    return (torch.floor_divide(i, j), torch.remainder(i, j), torch.fmod(i, j), i % 3, i // -3,
            i & j, i | j, i ^ j, i << 1, torch.abs(i), torch.max(i, j), i == j, i.sum(), i.cumsum(0))


def reductions(x):
    vals, idx = x.max(dim=1)
    return (x.sum(), x.sum(dim=0), x.mean(dim=1, keepdim=True), vals, idx, x.argmax(), x.argmin(dim=0),
            x.prod(dim=1), x.amax(dim=(0, 2)), x.min(), x.std(dim=1), x.var(), x.logsumexp(dim=2),
            x.cumsum(dim=2), (x > 0).any(), (x > -5).all(dim=0), x.norm(), x.abs().sum(dim=[0, 1]))


def shape_view(x):
    a = x.view(6, 4)
    b = x.reshape(-1, 2)
    c = x.permute(2, 0, 1)
    d = x.transpose(0, 1).contiguous()
    e = x.unsqueeze(0).squeeze(0).unsqueeze(-1)
    f = x.flatten(1)
    g = x[:, :1].expand(2, 3, 4)
    h = x.size()
    return a, b, c, d, e.shape, f, g, h, x.shape[1], a.t(), x.dim(), x.numel()


def indexing_slicing(x, idx, mask):
    return (x[1:3], x[:, 0], x[..., ::2], x[None].shape, x.select(1, 2), x[idx], x[-1, -2:],
            x[mask], x[1], x[:, 1:-1], x[idx, 0], torch.index_select(x, 0, idx), x.gather(1, idx.unsqueeze(0).expand(4, 3)))


def index_assign(x, y):
    z = x.clone()
    z[1:3] = y
    z[0] = 0.0
    z[:, -1] = torch.arange(4).float()
    w = x.clone()
    w[w > 0] = 1.0
    v = x.clone()
    v[0, 1] += 5.0
    return z, w, v


def matmul_family(a, b, c, bias):
    return (torch.mm(a, b), torch.matmul(c, b), torch.bmm(c, b.expand(2, 4, 5)),
            torch.einsum("bij,jk->bik", c, b), torch.addmm(bias, a, b), F.linear(a, b.t(), bias),
            a[0] @ b[:, 0], torch.outer(a[0], b[:, 1]), torch.matmul(a[0], b))


def cat_stack_split(x, y):
    s = torch.split(x, 2, dim=0)
    t = torch.split(x, [1, 4], dim=0)
    ch = y.chunk(3, dim=1)
    u = torch.unbind(y, 1)
    return torch.cat([x, x * 2], dim=1), torch.stack([x, x], dim=2), s, t, ch, u, len(u), torch.hstack([y, y])


def creation_ops(x, n: int):
    return (torch.zeros(2, n), torch.ones(n, dtype=torch.int64), torch.full((2, 2), 7.5), torch.arange(n),
            torch.arange(1, 10, 3), torch.arange(0.0, 1.0, 0.25), torch.eye(3), torch.zeros_like(x),
            torch.ones_like(x, dtype=torch.int32), torch.linspace(0, 1, 5), torch.full_like(x, 2),
            x.new_zeros([n]), torch.empty(0).numel(), torch.tensor([1, 2, 3]) * n)


def nn_functional(x, w, g, b):
    return (F.softmax(x, dim=-1), F.log_softmax(x, dim=1), F.layer_norm(x, [4], g, b), F.gelu(x),
            F.silu(x), F.leaky_relu(x, 0.1), F.elu(x), F.hardtanh(x), F.normalize(x, dim=1),
            F.softplus(x), F.conv1d(x.unsqueeze(0), w), F.pad(x, [1, 2]), F.mse_loss(x, x * 0.5))


def inplace_ops(x):
    y = x.clone()
    y.add_(1.0)
    y.mul_(2.0)
    v = y.view(-1)
    v.sub_(0.5)  # writes through the view into y
    z = y[0]
    z.zero_()
    w = x.clone().relu_().clamp_(max=0.5)
    return y, w, v.sum()


def math_unary(x):
    return (x.sin(), x.cos(), torch.atan2(x, x + 2), x.floor(), x.ceil(), x.round(), x.trunc(), x.frac(),
            x.sign(), x.reciprocal(), torch.rsqrt(x.abs() + 1), torch.log1p(x.abs()), torch.expm1(x),
            torch.erf(x), x.clamp(min=0.0).log2(), torch.isnan(x.log()), torch.logical_not(x > 0))


def sort_topk(x):
    vals, idx = torch.sort(x, dim=1, descending=True)
    tv, ti = torch.topk(x, 2, dim=1)
    return vals, idx, tv, ti, torch.argsort(x[0]), torch.flip(x, [0]), torch.tril(x), torch.triu(x, 1)


# -- modules ------------------------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def mlp():
    torch.manual_seed(1)
    return MLP().eval()


def mlp_sequential():
    torch.manual_seed(2)
    return nn.Sequential(nn.Linear(1, 10), nn.ReLU(), nn.Linear(10, 1)).eval()


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, 3, stride=2)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 1 * 1, 5)

    def forward(self, x):
        x = F.relu(self.bn(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        return F.log_softmax(self.fc(x), dim=1)


def cnn():
    torch.manual_seed(3)
    m = CNN()
    with torch.no_grad():  # give the batch norm non-trivial statistics
        m.bn.running_mean.uniform_(-0.5, 0.5)
        m.bn.running_var.uniform_(0.5, 1.5)
    return m.eval()


class Gated(nn.Module):
    """Plain attributes (int, float, bool) read by GetAttr, a buffer, and training mode."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.steps = 3
        self.eps = 1e-3
        self.use_gate = True
        self.register_buffer("scale", torch.tensor([0.5, 1.0, 1.5, 2.0]))
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        for _ in range(self.steps):
            h = self.proj(x)
            if self.use_gate:
                h = h * torch.sigmoid(h)
            x = x + self.drop(h) * self.scale
        if self.training:
            x = x * 0.0
        return x / (x.norm() + self.eps)


def gated():
    torch.manual_seed(4)
    return Gated().eval()


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(6, 6) for _ in range(3)])
        self.norm = nn.LayerNorm(6)
        self.emb = nn.Embedding(10, 6)

    def forward(self, tokens):
        x = self.emb(tokens)
        for layer in self.layers:
            x = x + torch.tanh(layer(x))
        return self.norm(x).mean(dim=1)


def stack():
    torch.manual_seed(5)
    return Stack().eval()


def lstm_cell_module():
    torch.manual_seed(6)
    return nn.LSTMCell(4, 5).eval()


def traced_loop(x):
    for i in range(x.dim()):  # noqa: B007 (TorchScript source: the name shows in the IR)
        x = x * x
    return x


def traced_branches(x, y):
    if x.sum() > 0:  # decided once, at trace time
        z = x + y
    else:
        z = x - y
    return z.relu(), torch.cat([z, y], 0)


# -- semantic traps (appended here so earlier dumps keep their source lines) ---------------


def promotion_edges(f32, i64, i32, u8, b):
    zero_d64 = torch.tensor(2.5, dtype=torch.float64)
    return (f32 + zero_d64, i64 + zero_d64, i32 + i32, i32 * 2.5, i32 + i64, u8 + 250, u8 - 3,
            b + b, b * 1.5, i64 / 2, i64 // 2, torch.div(i64, 3, rounding_mode="floor"),
            torch.div(i64, 3, rounding_mode="trunc"), i64.float() ** 2, i64 ** 2, 2 ** i64.abs())


def float_semantics(x):
    nan = torch.tensor([float("nan"), 1.0, -1.0])
    return (torch.remainder(x, 2.0), torch.fmod(x, 2.0), torch.round(x), torch.max(nan), torch.maximum(nan, x[:3]),
            nan.clamp(min=0.0), torch.sign(torch.tensor([-0.0, 0.0, -2.0])), x.floor_divide(2.0),
            torch.isnan(nan).any(), (nan == nan), x.sum(dim=0, keepdim=True), torch.zeros(0).sum(),
            torch.ones(2, 0).sum(dim=1), torch.cat([x, torch.zeros(0)]))


def scalar_traps(f: float, i: int):
    return (int(f), round(f), math.floor(f), math.ceil(f), float("inf") > f, math.isnan(f), f // 1.0, f % 1.0,
            i // 4, i % 4, float(i) / 4, abs(f), max(f, float(i)), i << 2, i >> 1, i & 6, i | 1, -i ^ 3)


def tensor_from_lists(xs: List[float], ns: List[int], x):
    a = torch.tensor(xs)
    b = torch.tensor(ns)
    c = torch.tensor([[1, 2], [3, 4]], dtype=torch.float64)
    d = torch.tensor(3)
    e = torch.tensor([True, False])
    v = x.sum().item()
    nested: List[List[float]] = x.tolist()
    return a, b, c, d, e, v, nested, a.dtype, b.dtype, float(x[0, 1])


def string_more(s: str, sub: str):
    return (s[1:4], s[-2:], sub in s, s.replace(sub, "_"), "  pad  ".strip(), s.lower(), s.find(sub),
            s.split(), len(s), s == "Hello World", s < "Z", s.startswith("He") and s.endswith("ld"),
            "-".join(s.split(" ")), s.isdigit(), ord(s[0]), chr(65))


def _stats(x) -> Tuple[torch.Tensor, torch.Tensor]:
    return x.mean(dim=0), x.std(dim=0)


def _maybe_scale(x, s: Optional[float]):
    if s is None:
        return x
    return x * s


def _count_above(x, t: float) -> int:
    n = 0
    for i in range(x.size(0)):
        if bool(x[i] > t):
            n += 1
    return n


def calls_mixed(x, s: Optional[float]):
    m, sd = _stats(x)
    return _maybe_scale(m, s), _maybe_scale(sd, None), _count_above(m, 0.0) + _count_above(sd, 1.0)


class Attrs(nn.Module):
    """Non-tensor attributes of every kind: list, tuple, str, an Optional left None."""

    maybe: Optional[float]

    def __init__(self):
        super().__init__()
        self.sizes: List[int] = [2, 3]
        self.pair = (1.5, 2)
        self.label = "attrs"
        self.maybe = None
        self.lin = nn.Linear(6, 2)

    def forward(self, x):
        y = x.reshape(self.sizes[0], self.sizes[1])
        y = y * self.pair[0] + self.pair[1]
        m = self.maybe
        if m is not None:
            y = y * m
        return self.lin(y.reshape(1, 6)), self.label + ":" + str(len(self.sizes))


def attrs_module():
    torch.manual_seed(7)
    return Attrs().eval()


def gru_cell_module():
    torch.manual_seed(8)
    return nn.GRUCell(4, 5).eval()
