"""Regenerate the runnable examples in ``examples/`` from ``examples/models.py``.

    python tools/gen_examples.py

Each program of ``examples/models.py`` is exported with ``tools/export_torch.py`` (the
same path a user takes), and its ``.ir`` gets a header comment saying what it shows and
the one command that runs it.  ``examples/fib.ir`` is written by hand (torch never prints
a multi-graph module); for it we write only inputs and expected outputs, computed by a
Python reference implementation.  torch's (or the reference's) outputs go to
``NAME.expected.npz``, which ``tests/project/test_examples.py`` compares against.  ``cnn.pt`` is
the CNN saved by ``torch.jit.save``, which irvm runs with its own weights.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from export_torch import Export, export, load_file, sample_inputs, write

from vm.files.npz import flatten_outputs, save_values

HEADERS = {
    "x2": "The smallest program: one tensor times an int constant (`x * 2`), scripted.",
    "dim_loop": "A loop whose trip count comes from the tensor (`for i in range(x.dim()): x = x * x`):\n"
                "prim::Loop carrying a tensor, as scripting keeps it (tracing would unroll it).",
    "ratio_iou": "Intersection over union of boxes: a chain of pointwise ops with broadcasting and\n"
                 "clamp(min=...), the textbook candidate for fusion.",
    "lunif2": "The uniformity loss: norm/pow, broadcasting with x[None] and x[:, None], mm, tril,\n"
              "reductions and int arithmetic on x.size(0).",
    "lstm_cell": "An LSTM cell written with tensor ops: mm, t, chunk into four gates (a ListUnpack),\n"
                 "sigmoid/tanh, returning a tuple (hy, cy).",
    "control_flow": "Control flow over tensors and scalars: a while loop on a tensor condition with\n"
                    "break, a list of floats built by append, an if/else on an int, a tuple result.",
    "mlp": "A scripted nn.Module: %self with prim::GetAttr chains reading fc1/fc2 weights, which\n"
           "come from mlp.weights.npz (the module's state_dict, dotted keys).",
    "cnn": "A small CNN as a scripted nn.Module: conv2d, relu, max_pool2d, flatten, linear, with\n"
           "its weights in cnn.weights.npz.",
}


def header(name: str, paths: dict[str, Path]) -> str:
    lines = [f"# {line}" for line in HEADERS[name].splitlines()]
    command = ["irvm run", f"examples/{name}.ir", "--inputs", f"examples/{name}.inputs.npz"]
    if "weights" in paths:
        command += ["--weights", f"examples/{name}.weights.npz"]
    lines.append(f"#   {' '.join(command)}")
    return "\n".join(lines) + "\n"


def export_example(source: object, name: str) -> None:
    torch.manual_seed(0)
    args = sample_inputs(source, name, None)
    exp: Export = export(getattr(source, name), name, args, source_dir=EXAMPLES, base=ROOT)
    paths = write(exp, EXAMPLES)
    paths["ir"].write_text(header(name, paths) + paths["ir"].read_text())
    assert exp.outputs is not None, f"{name} raised: {exp.error}"
    np.savez(EXAMPLES / f"{name}.expected.npz", **flatten_outputs(exp.outputs))


def write_archive(source: object) -> None:
    """``cnn.pt``: the same CNN, with the same weights, saved by ``torch.jit.save`` after
    ``torch.jit.script``, the file a TorchScript user holds; it shares ``cnn.inputs.npz``
    and ``cnn.expected.npz`` with ``cnn.ir``."""
    torch.jit.save(torch.jit.script(source.cnn()), str(EXAMPLES / "cnn.pt"))


def fib_reference(n: int) -> int:
    return n if n < 2 else fib_reference(n - 1) + fib_reference(n - 2)


def write_fib() -> None:
    n, x = 12, np.arange(4, dtype=np.float32)
    save_values(EXAMPLES / "fib.inputs.npz", {"n.1": n, "x.1": x})
    f = fib_reference(n)
    np.savez(EXAMPLES / "fib.expected.npz", **flatten_outputs([(f, x * f + x)]))


def main() -> int:
    os.chdir(ROOT)
    source = load_file(EXAMPLES / "models.py")
    for name in HEADERS:
        export_example(source, name)
        print(f"examples/{name}.ir")
    write_archive(source)
    print("examples/cnn.pt (torch.jit.save of the scripted CNN)")
    write_fib()
    print("examples/fib.ir (hand-written; inputs and expected outputs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
