"""`irvm info` on a traced ``torch.jit.save`` archive prints each input's dtype and rank,
from the example inputs the trace ran on (``traced_inputs.pkl``), as ONNX Runtime lists
a model's inputs, and the example's sizes beside them."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tests.cli.test_cli import irvm  # noqa: E402


def test_info_on_a_traced_pt_prints_dtypes_and_shapes(tmp_path: Path) -> None:
    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = torch.nn.Embedding(10, 4)
            self.fc = torch.nn.Linear(4, 2)

        def forward(self, ids: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
            return self.fc(self.emb(ids)) * scale

    pt = tmp_path / "net.pt"
    torch.jit.save(torch.jit.trace(Net().eval(), (torch.zeros(3, 5, dtype=torch.long), torch.ones(3, 5, 1))), str(pt))
    proc = irvm("info", str(pt))
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[1]: line.split() for line in proc.stdout.splitlines()[1:] if line.startswith("input")}
    assert rows["ids"][2:] == ["Tensor", "int64", "[?,", "?]"]  # the trace fixes dtypes and ranks
    assert rows["scale"][2:] == ["Tensor", "float32", "[?,", "?,", "?]"]
    assert "ids int64 [3, 5], scale float32 [3, 5, 1]" in proc.stdout  # and shows the example
