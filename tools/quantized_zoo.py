"""The quantized zoo: quantized TorchScript models made with torch, for the tests and benchmarks.

    python tools/quantized_zoo.py [--only NAME[,NAME...]] [--out DIR]

writes into ``~/.cache/irvm/quantized/`` (or ``--out``), for every model and mode, the
archive ``NAME.MODE.pt`` (``torch.jit.save``), the printed graph ``NAME.MODE.ir`` (the
inlined graph of ``forward``), the example inputs ``NAME.inputs.npz`` and torch's outputs
``NAME.MODE.expected.npz`` (its run on those inputs, one thread).

Static models (post-training quantization, ``torch.ao.quantization`` eager mode) come in
both engines, ``fbgemm`` and ``qnnpack`` (``NAME`` ends in ``_fbgemm`` / ``_qnnpack``):
torchvision's quantizable resnet18, mobilenet_v2, mobilenet_v3_large, shufflenet_v2 and
googlenet, and a small CNN, each with random weights (nothing is downloaded), BatchNorm
statistics redrawn, fused, prepared with the engine's default qconfig, calibrated on a few
random batches and converted.  Dynamic models (``quantize_dynamic``, qint8 weights): an LSTM
tagger, a GRU, a stack of Linear layers, a transformer encoder and a Hugging Face BertModel
from a small config.  Modes: ``script``, ``trace``, ``freeze`` (the scripted module frozen);
the encoder and BERT, which torch cannot script once quantized, ``trace`` and ``freeze_trace``.

``ZOO`` maps a name to a ``QModel`` (``build()`` -> module, example inputs); ``CI_SUBSET``
names the models tests/quantized runs on every push.
"""

from __future__ import annotations

import argparse
import os
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from zoo_models import import_torchvision  # noqa: E402

CACHE = Path(os.path.expanduser("~/.cache/irvm/quantized"))
MODES = ("script", "trace", "freeze")


@dataclass(frozen=True)
class QModel:
    name: str
    kind: str  # static | dynamic
    engine: str  # fbgemm | qnnpack
    make: Callable[[], tuple[torch.nn.Module, tuple[Any, ...]]]
    modes: tuple[str, ...] = MODES

    def build(self) -> tuple[torch.nn.Module, tuple[Any, ...]]:
        torch.backends.quantized.engine = self.engine
        torch.manual_seed(zlib.crc32(self.name.encode()))
        return self.make()

    def build_float(self) -> tuple[torch.nn.Module, tuple[Any, ...]]:
        """The same model with the same weights before quantization (QuantStubs are identities)."""
        global FLOAT_ONLY
        FLOAT_ONLY = True
        try:
            return self.build()
        finally:
            FLOAT_ONLY = False


def _redraw_batchnorm(model: torch.nn.Module) -> None:
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.running_mean.normal_(0.0, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            if m.weight is not None:
                m.weight.data.normal_(1.0, 0.1)
                m.bias.data.normal_(0.0, 0.1)


def _static(model: torch.nn.Module, engine: str, shape: tuple[int, ...], fuse: Callable[[], None]) -> Any:
    """``model`` (QuantStub ... DeQuantStub) fused, prepared, calibrated, converted."""
    import torch.ao.quantization as tq

    model.eval()
    _redraw_batchnorm(model)
    if FLOAT_ONLY:
        return model, (torch.randn(*shape),)
    fuse()
    model.qconfig = tq.get_default_qconfig(engine)
    tq.prepare(model, inplace=True)
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(*shape))
    tq.convert(model, inplace=True)
    return model, (torch.randn(*shape),)


def _torchvision(arch: str, engine: str, size: int = 64) -> Callable[[], Any]:
    def make() -> Any:
        import_torchvision()
        import torchvision.models.quantization as qm

        kwargs: dict[str, Any] = {"weights": None, "quantize": False}
        if arch == "googlenet":
            kwargs.update(aux_logits=False, init_weights=True)
        model = getattr(qm, arch)(**kwargs)
        model.eval()
        return _static(model, engine, (1, 3, size, size), lambda: model.fuse_model(is_qat=False))

    return make


class SmallCNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        import torch.ao.quantization as tq

        self.quant = tq.QuantStub()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.relu1 = torch.nn.ReLU()
        self.pool = torch.nn.MaxPool2d(2)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2)
        self.relu2 = torch.nn.ReLU()
        self.skip = torch.nn.Conv2d(8, 16, 1, stride=2)
        self.add = torch.nn.quantized.FloatFunctional()
        self.gap = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(16, 10)
        self.dequant = tq.DeQuantStub()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.quant(x)
        x = self.pool(self.relu1(self.bn1(self.conv1(x))))
        y = self.relu2(self.conv2(x))
        x = self.add.add_relu(y, self.skip(x))
        x = torch.flatten(self.gap(x), 1)
        return self.dequant(self.fc(x))


def _small_cnn(engine: str) -> Callable[[], Any]:
    def make() -> Any:
        import torch.ao.quantization as tq

        model = SmallCNN().eval()
        return _static(
            model, engine, (2, 3, 16, 16),
            lambda: tq.fuse_modules(model, [["conv1", "bn1", "relu1"], ["conv2", "relu2"]], inplace=True),
        )

    return make


class LSTMTagger(torch.nn.Module):
    def __init__(self, vocab: int = 50, dim: int = 16, hidden: int = 24, tags: int = 7) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.lstm = torch.nn.LSTM(dim, hidden, num_layers=2, batch_first=True)
        self.out = torch.nn.Linear(hidden, tags)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(self.embed(tokens))
        return torch.log_softmax(self.out(h), dim=-1)


class GRUNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gru = torch.nn.GRU(12, 20, batch_first=True)
        self.out = torch.nn.Linear(20, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, _ = self.gru(x)
        return self.out(h)


FLOAT_ONLY = False  # build_float: the models before quantization, for the benchmarks


def _dynamic(model: torch.nn.Module, inputs: tuple[Any, ...], types: set[type]) -> Any:
    model.eval()
    if FLOAT_ONLY:
        return model, inputs
    q = torch.ao.quantization.quantize_dynamic(model, types, dtype=torch.qint8)
    return q, inputs


def _lstm() -> Any:
    return _dynamic(LSTMTagger(), (torch.randint(0, 50, (2, 9)),), {torch.nn.LSTM, torch.nn.Linear})


def _gru() -> Any:
    return _dynamic(GRUNet(), (torch.randn(2, 6, 12),), {torch.nn.GRU, torch.nn.Linear})


def _mlp() -> Any:
    layers = [torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)]
    return _dynamic(torch.nn.Sequential(*layers), (torch.randn(4, 32),), {torch.nn.Linear})


def _encoder() -> Any:
    layer = torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True, dropout=0.0)
    model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    return _dynamic(model, (torch.randn(2, 7, 32),), {torch.nn.Linear})


def _bert() -> Any:
    import_torchvision()
    import transformers

    config = transformers.BertConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=32, torchscript=True, return_dict=False,
    )
    model = transformers.BertModel(config)
    return _dynamic(model, (torch.randint(0, 100, (1, 12)),), {torch.nn.Linear})


def _zoo() -> dict[str, QModel]:
    zoo: dict[str, QModel] = {}
    for engine in ("fbgemm", "qnnpack"):
        zoo[f"small_cnn_{engine}"] = QModel(f"small_cnn_{engine}", "static", engine, _small_cnn(engine))
        for arch in ("resnet18", "mobilenet_v2", "mobilenet_v3_large", "shufflenet_v2_x1_0", "googlenet"):
            name = f"{arch}_{engine}"
            zoo[name] = QModel(name, "static", engine, _torchvision(arch, engine))
    for name, make in (("lstm_tagger", _lstm), ("gru", _gru), ("linear_stack", _mlp), ("encoder", _encoder),
                       ("bert", _bert)):
        # torch cannot script a dynamically quantized TransformerEncoderLayer (its fast path
        # reads linear1.weight, a method there) nor BertModel: traced, and the trace frozen
        modes = ("trace", "freeze_trace") if name in ("encoder", "bert") else MODES
        zoo[name] = QModel(name, "dynamic", "fbgemm", make, modes)
    return zoo


ZOO = _zoo()
CI_SUBSET = ("small_cnn_fbgemm", "small_cnn_qnnpack", "linear_stack", "lstm_tagger")


def compile_mode(model: torch.nn.Module, inputs: tuple[Any, ...], mode: str) -> torch.jit.ScriptModule:
    if mode in ("trace", "freeze_trace"):
        with torch.no_grad():
            traced = torch.jit.trace(model, inputs, check_trace=False)
        return torch.jit.freeze(traced.eval()) if mode == "freeze_trace" else traced
    scripted = torch.jit.script(model)
    if mode == "freeze":
        return torch.jit.freeze(scripted.eval())
    return scripted


def _as_numpy(value: Any) -> dict[str, np.ndarray]:
    """torch's outputs, flattened: ``out`` or ``out.0``, ``out.1``... (quantized: dequantized)."""
    flat: dict[str, np.ndarray] = {}

    def walk(v: Any, key: str) -> None:
        if isinstance(v, torch.Tensor):
            flat[key] = (v.dequantize() if v.is_quantized else v).detach().numpy()
        elif isinstance(v, (tuple, list)):
            for i, item in enumerate(v):
                walk(item, f"{key}.{i}")

    walk(value, "out")
    return flat


def generate(name: str, out: Path) -> list[Path]:
    """Write every mode of zoo model ``name`` into ``out``; the paths written."""
    spec = ZOO[name]
    torch.set_num_threads(1)
    # the fast path of nn.TransformerEncoderLayer reads linear1.weight, a method once quantized
    torch.backends.mha.set_fastpath_enabled(False)
    model, inputs = spec.build()
    out.mkdir(parents=True, exist_ok=True)
    written = [out / f"{name}.inputs.npz"]
    np.savez(written[0], **{f"arg{i}": t.numpy() for i, t in enumerate(inputs)})
    for mode in spec.modes:
        torch.backends.quantized.engine = spec.engine
        jit = compile_mode(model, inputs, mode)
        with torch.no_grad():
            expected = jit(*inputs)
        pt, ir, exp = (out / f"{name}.{mode}.{ext}" for ext in ("pt", "ir", "expected.npz"))
        torch.jit.save(jit, str(pt))
        graph = jit.graph if mode == "trace" else jit.forward.graph
        torch._C._jit_pass_inline(graph)
        ir.write_text(str(graph))
        np.savez(exp, **_as_numpy(expected))
        written += [pt, ir, exp]
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated model names (default: all)")
    parser.add_argument("--out", type=Path, default=CACHE)
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(ZOO)
    for name in names:
        if name not in ZOO:
            parser.error(f"unknown model {name!r}; known: {', '.join(ZOO)}")
        print(name, len(generate(name, args.out)), "files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
