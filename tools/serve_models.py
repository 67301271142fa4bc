"""The models ``irvm serve``'s tests and ``tools/load_test.py`` serve, made with torch and kept
in a cache (``~/.cache/irvm/serve/`` unless ``IRVM_SERVE_CACHE`` says otherwise):

    resnet18.pt     torchvision's resnet18 (the zoo's random weights), ``torch.jit.script``ed
                    and ``torch.jit.save``d: a model none of irvm's own tests wrote
    resnet18.onnx   the same module exported to ONNX (ONNX Runtime's column of the load test)

``images(n, seed)`` are the inputs the tests send (float32, 1x3x64x64 each), and
``torch_outputs(x)`` torch's answers for them.  Each file is written once and reused.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

IMAGE = (1, 3, 64, 64)


def cache_dir() -> Path:
    d = Path(os.environ.get("IRVM_SERVE_CACHE", Path.home() / ".cache" / "irvm" / "serve"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _module() -> Any:
    from zoo_models import ZOO

    module, _ = ZOO["resnet18"].build()
    return module


def resnet18_pt() -> Path:
    """The scripted resnet18 archive (written on first use)."""
    out = cache_dir() / "resnet18.pt"
    if not out.exists():
        import torch

        tmp = out.with_suffix(".pt.tmp")
        torch.jit.save(torch.jit.script(_module()), str(tmp))
        tmp.replace(out)
    return out


def resnet18_onnx() -> Path:
    """The same resnet18 exported to ONNX, with a dynamic batch axis (written on first use)."""
    out = cache_dir() / "resnet18.onnx"
    if not out.exists():
        import torch

        tmp = out.with_suffix(".onnx.tmp")
        torch.onnx.export(_module(), (torch.zeros(IMAGE),), str(tmp), input_names=["x"], output_names=["out0"],
                          dynamic_axes={"x": {0: "batch"}, "out0": {0: "batch"}}, dynamo=False)
        tmp.replace(out)
    return out


def images(n: int, seed: int = 0) -> list[np.ndarray]:
    """``n`` float32 images of shape IMAGE."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(IMAGE, dtype=np.float32) for _ in range(n)]


def torch_outputs(xs: list[np.ndarray]) -> list[np.ndarray]:
    """torch's resnet18 logits for each image (the archive itself, loaded by torch)."""
    import torch

    module = torch.jit.load(str(resnet18_pt()))
    with torch.no_grad():
        return [module(torch.from_numpy(x)).numpy() for x in xs]


__all__ = ["IMAGE", "cache_dir", "images", "resnet18_onnx", "resnet18_pt", "torch_outputs"]
