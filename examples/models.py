"""The PyTorch source of the examples; ``python tools/gen_examples.py`` exports them.

Each program ``NAME`` here has a ``NAME_inputs()`` returning its sample arguments, the
convention ``tools/export_torch.py`` reads, so any one of them can also be exported by
hand::

    python tools/export_torch.py examples/models.py mlp -o /tmp/mlp
    irvm run /tmp/mlp/mlp.ir --inputs /tmp/mlp/mlp.inputs.npz --weights /tmp/mlp/mlp.weights.npz
"""

# TorchScript programs: typing.List annotations are kept on purpose.
# ruff: noqa: UP006, UP035

from typing import List

import torch
import torch.nn.functional as F
from torch import nn


def x2(x):
    return x * 2


def x2_inputs():
    return (torch.randn(5),)


def dim_loop(x):
    for i in range(x.dim()):  # noqa: B007 (the name shows in the IR: %i)
        x = x * x
    return x


def dim_loop_inputs():
    return (torch.randn(3, 3),)


def ratio_iou(x1, y1, w1, h1, x2, y2, w2, h2):
    xi = torch.max(x1, x2)  # Intersection left
    yi = torch.max(y1, y2)  # Intersection top
    wi = torch.clamp(torch.min(x1 + w1, x2 + w2) - xi, min=0.)  # Intersection width
    hi = torch.clamp(torch.min(y1 + h1, y2 + h2) - yi, min=0.)  # Intersection height
    area_i = wi * hi  # Area Intersection
    area_u = w1 * h1 + w2 * h2 - wi * hi  # Area Union
    return area_i / torch.clamp(area_u, min=1e-5)  # Intersection over Union


def ratio_iou_inputs():
    return tuple(torch.randn(8, 10, 20).exp())


def lunif2(x, t: int = 2):
    t = 2
    xnorm = torch.norm(x, p=2, dim=1).pow(2)
    sq_pdist = xnorm[None] + xnorm[:, None] - 2 * torch.mm(x, x.t())
    exp = sq_pdist.mul(-t).exp().tril(diagonal=-1)
    N = x.size(0)
    res = exp.sum().mul(2 / (N * N - N)).log()
    return res


def lunif2_inputs():
    x = torch.randn(64, 16)
    return (x / x.norm(p=2, dim=1, keepdim=True), 2)


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


def lstm_cell_inputs():
    b, i, h = 4, 8, 16
    return (torch.randn(b, i), torch.randn(b, h), torch.randn(b, h), torch.randn(4 * h, i),
            torch.randn(4 * h, h), torch.randn(4 * h), torch.randn(4 * h))


def control_flow(x, limit: int):
    norms: List[float] = []
    steps = 0
    while bool(x.norm() > 1.0):
        if steps >= limit:
            break
        norms.append(float(x.norm()))
        x = x / 2
        steps += 1
    if steps % 2 == 0:
        y = torch.relu(x)
    else:
        y = x.abs()
    return y, steps, norms


def control_flow_inputs():
    return (torch.randn(6) * 20, 10)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return F.softmax(self.fc2(torch.relu(self.fc1(x))), dim=-1)


def mlp():
    torch.manual_seed(0)
    return MLP().eval()


def mlp_inputs():
    return (torch.randn(8, 16),)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def cnn():
    torch.manual_seed(0)
    return CNN().eval()


def cnn_inputs():
    return (torch.randn(2, 1, 28, 28),)
