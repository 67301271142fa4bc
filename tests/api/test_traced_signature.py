"""A traced archive's signature: the example fixes dtypes and ranks, not sizes, and tuple
outputs are flattened into named, typed outputs, for vm.Model.run and the server alike."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import vm  # noqa: E402
from vm.serve.protocol import spec_from_node_arg  # noqa: E402


class Encoder(torch.nn.Module):
    """Token ids in, (hidden states, pooled) out, as a traced Hugging Face encoder."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(50, 8)
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.tanh(self.proj(self.embed(ids)))
        return h, h.mean(dim=1)


class Conv(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x).mean(dim=(2, 3))


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("traced") / "encoder.pt"
    torch.jit.save(torch.jit.trace(Encoder().eval(), torch.randint(0, 50, (2, 16))), str(path))
    return path


@pytest.mark.parametrize("backend", ["static", "interp"])
def test_a_traced_model_takes_other_batch_sizes_and_lengths(traced: Path, backend: str) -> None:
    model = vm.load(traced, backend=backend)
    (arg,) = model.inputs
    assert arg.dtype == np.dtype("int64") and arg.shape == [None, None]
    assert spec_from_node_arg(arg).metadata()["shape"] == [-1, -1]
    theirs = torch.jit.load(str(traced))
    for shape in [(1, 16), (3, 7), (2, 16)]:
        ids = torch.randint(0, 50, shape)
        got = model.run(None, {arg.name: ids.numpy()})
        want = theirs(ids)
        assert len(got) == 2
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.detach().numpy(), atol=1e-6)


def test_tuple_outputs_are_named_before_the_first_call(traced: Path) -> None:
    """``out0.0``, ``out0.1`` (the keys irvm run writes), each one output of ``run``; their
    dtypes are what the graph's types say (a traced archive's code says Tensor)."""
    model = vm.load(traced)
    assert [o.name for o in model.outputs] == ["out0.0", "out0.1"]
    assert all(o.type.startswith("tensor(") for o in model.outputs)
    ids = np.zeros((1, 5), np.int64)
    pooled = model.run(["out0.1"], {model.inputs[0].name: ids})
    assert len(pooled) == 1 and pooled[0].shape == (1, 8)


def test_the_weights_still_fix_a_convolutions_channels(tmp_path: Path) -> None:
    path = tmp_path / "conv.pt"
    torch.jit.save(torch.jit.trace(Conv().eval(), torch.randn(2, 3, 32, 32)), str(path))
    (arg,) = vm.load(path).inputs
    assert arg.dtype == np.dtype("float32") and arg.shape == [None, 3, None, None]
