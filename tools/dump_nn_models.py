"""Dump the nn end-to-end models: scripted and traced torch modules as irvm inputs.

    python tools/dump_nn_models.py [-o tests/nn_models] [NAME ...]

For each model below (MLP, small CNN, LSTMCell, GRUCell, nn.LSTM, nn.GRU, an embedding
classifier, nn.TransformerEncoderLayer and nn.MultiheadAttention, in eval mode), each
variant (``script``; ``trace``, traced with PyTorch's attention fast path off, so the
graph holds the decomposed ops; attention modules also ``trace_fast``, traced under
``torch.no_grad()`` so PyTorch records its fused inference kernels; two models also
``freeze``) writes four files into the output directory:

    NAME.ir             the inlined graph as PyTorch prints it (tools/export_torch.py)
    NAME.weights.npz    state_dict + buffers + plain attributes read by GetAttr + tensor
                        constants; an RNN's ``_flat_weights`` list is left out, since
                        ``vm.binding.weights.bind_self`` rebuilds it from the named parameters
    NAME.inputs.npz     sample inputs (vm/files/npz.py conventions)
    NAME.expected.npz   torch's outputs on them (vm/files/npz.py ``save_outputs``)

tests/e2e/test_nn_models.py runs each dump through irvm and compares with the expected file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
from export_torch import export, write

from vm.files.npz import save_outputs


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class SmallCNN(nn.Module):
    """conv-bn-relu-pool, a depthwise block, adaptive pool, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.Conv2d(8, 16, 1, stride=2), nn.BatchNorm2d(16), nn.ReLU6(),
        )
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.pool(self.features(x)), 1))


class Decoder(nn.Module):
    """Spatial operators: reflection pad, group/instance norm, transposed conv, nearest and
    bilinear interpolation, pixel shuffle, average pooling, assorted activations."""

    def __init__(self) -> None:
        super().__init__()
        self.pad = nn.ReflectionPad2d(1)
        self.conv = nn.Conv2d(4, 8, 3)
        self.gn = nn.GroupNorm(2, 8)
        self.act = nn.LeakyReLU(0.1)
        self.up = nn.ConvTranspose2d(8, 8, 2, stride=2)
        self.inorm = nn.InstanceNorm2d(8, affine=True)
        self.act2 = nn.Hardswish()
        self.shuffle = nn.PixelShuffle(2)
        self.pool = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.act(self.gn(self.conv(self.pad(x))))
        x = self.act2(self.inorm(self.up(x)))
        x = nn.functional.interpolate(x, scale_factor=2.0, mode="nearest")
        x = self.shuffle(x)
        x = nn.functional.interpolate(x, size=(10, 10), mode="bilinear", align_corners=False)
        x = self.pool(x)
        return nn.functional.elu(x) + nn.functional.softplus(x) * nn.functional.hardsigmoid(x)


class Conv1dNet(nn.Module):
    """Conv1d, BatchNorm1d, max/adaptive pooling over sequences, SELU and Mish."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(3, 6, 5, padding=2, dilation=1)
        self.bn = nn.BatchNorm1d(6)
        self.pool = nn.MaxPool1d(3, stride=2, ceil_mode=True)
        self.conv2 = nn.Conv1d(6, 6, 3, padding="same", groups=3)
        self.head = nn.AdaptiveAvgPool1d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(nn.functional.selu(self.bn(self.conv(x))))
        return self.head(nn.functional.mish(self.conv2(x)))


class LSTMCellStep(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.LSTMCell(8, 12)

    def forward(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.cell(x, (h, c))


class GRUCellStep(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.GRUCell(8, 12)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return self.cell(x, h)


class LSTMNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(8, 16, num_layers=2, bidirectional=True, batch_first=True)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        out, (h, c) = self.rnn(x)
        return out, h, c


class GRUNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(8, 16, num_layers=2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, h = self.rnn(x)
        return out, h


class EmbeddingClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(50, 16, padding_idx=0)
        self.norm = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 3)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.fc(self.norm(self.embed(tokens).mean(dim=1)))


class BagClassifier(nn.Module):
    """nn.EmbeddingBag (mean, padding_idx) over flat tokens with offsets, then a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(50, 16, mode="mean", padding_idx=0)
        self.fc = nn.Linear(16, 3)

    def forward(self, tokens: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.fc(self.bag(tokens, offsets))


class SelfAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 4, batch_first=True)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, Optional[torch.Tensor]]:  # noqa: UP045 (TorchScript)
        return self.attn(x, x, x)


def _encoder_layer() -> nn.Module:
    return nn.TransformerEncoderLayer(16, 4, 32, batch_first=True)


def _encoder() -> nn.Module:
    layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True, norm_first=True, activation="gelu")
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


def _tokens() -> tuple[Any, ...]:
    return (torch.randint(0, 50, (3, 7)),)


# name -> (factory, sample inputs, variants)
MODELS: dict[str, tuple[Callable[[], nn.Module], Callable[[], tuple[Any, ...]], tuple[str, ...]]] = {
    "mlp": (MLP, lambda: (torch.randn(5, 8),), ("script", "trace", "freeze")),
    "cnn": (SmallCNN, lambda: (torch.randn(2, 3, 16, 16),), ("script", "trace", "freeze")),
    "decoder": (Decoder, lambda: (torch.randn(2, 4, 6, 6),), ("script", "trace")),
    "conv1d": (Conv1dNet, lambda: (torch.randn(2, 3, 17),), ("script", "trace")),
    "lstm_cell": (LSTMCellStep, lambda: (torch.randn(3, 8), torch.randn(3, 12), torch.randn(3, 12)), ("script", "trace")),
    "gru_cell": (GRUCellStep, lambda: (torch.randn(3, 8), torch.randn(3, 12)), ("script", "trace")),
    "lstm": (LSTMNet, lambda: (torch.randn(2, 5, 8),), ("script", "trace")),
    "gru": (GRUNet, lambda: (torch.randn(6, 2, 8),), ("script", "trace")),
    "embedding": (EmbeddingClassifier, _tokens, ("script", "trace")),
    "embedding_bag": (BagClassifier, lambda: (torch.tensor([3, 0, 7, 9, 1, 0, 4, 4]), torch.tensor([0, 3, 3, 5])),
                      ("script", "trace")),
    "encoder_layer": (_encoder_layer, lambda: (torch.randn(2, 5, 16),), ("script", "trace", "trace_fast")),
    "encoder": (_encoder, lambda: (torch.randn(2, 5, 16),), ("script", "trace", "trace_fast")),
    "mha": (SelfAttention, lambda: (torch.randn(2, 5, 16),), ("script", "trace", "trace_fast")),
}


def _scripted_args(name: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Scripted encoders also take (mask, src_key_padding_mask, is_causal)."""
    return args + (None, None, False) if name in ("encoder_layer", "encoder") else args


def dump(name: str, variant: str, outdir: Path) -> Path:
    factory, inputs, _ = MODELS[name]
    torch.manual_seed(0)
    module = factory().eval()
    args = inputs()
    if variant == "script":
        args = _scripted_args(name, args)
    full = f"{name}_{variant}"
    if variant == "trace_fast":
        with torch.no_grad():
            exp = export(module, full, args, trace=True)
    else:
        # a plain trace records the decomposed attention path (linear, sdpa...): the fused
        # fast path would depend on the grad mode and fail the tracer's own re-check
        torch.backends.mha.set_fastpath_enabled(variant != "trace")
        try:
            exp = export(module, full, args, trace=variant == "trace", freeze=variant == "freeze")
        finally:
            torch.backends.mha.set_fastpath_enabled(True)
    if exp.error is not None or exp.outputs is None:
        raise RuntimeError(f"{full}: torch failed on the sample inputs: {exp.error}")
    exp.weights = {k: v for k, v in exp.weights.items() if "._flat_weights." not in k}
    paths = write(exp, outdir)
    save_outputs(outdir / f"{full}.expected.npz", exp.outputs)
    return paths["ir"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"models to dump (default all): {', '.join(MODELS)}")
    parser.add_argument("-o", "--outdir", default=str(ROOT / "tests" / "data" / "nn_models"))
    args = parser.parse_args(argv)
    outdir = Path(args.outdir)
    for name in args.names or list(MODELS):
        for variant in MODELS[name][2]:
            print(dump(name, variant, outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
