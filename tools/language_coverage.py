"""The TorchScript language's builtins, from torch itself, against irvm's operator library.

    python tools/language_coverage.py [-o docs/language.md]

torch lists every operator TorchScript can call (``torch._C._jit_get_all_schemas()``, the
table behind ``torch.jit.supported_ops()``).  Each schema falls in one section:

- *language builtins*: no tensor among its arguments or returns (``str``, ``list``,
  ``dict``, ``int``, ``float``, ``bool`` operations: ``aten::len.t``, ``aten::format``...);
- *prim ops*: the ``prim::`` namespace (containers, control, tensor properties...);
- *tensor operators and methods*: every other ``aten::`` schema.

A schema is *implemented* when irvm's registry (``vm.ops.registry``, which both the
interpreter and the static runtime run) holds its exact overload, or the node kind is one
the compiler lowers itself (``prim::If``, ``prim::CallMethod``...) or builds from its
attributes (``prim_factory``).  Any other is refused at compile time ("unknown operator"),
and the table gives the reason class read off its name: autograd (``_backward``, ``grad``),
devices irvm has no (CUDA, cuDNN, MKL-DNN, MPS, XPU, Vulkan...), sparse, quantized, nested
or distributed tensors, in-place out= forms of missing operators, or simply not yet written.
``complex`` schemas are left out, as the issue scopes them.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# node kinds the compiler lowers itself (control flow, calls, constants, attributes, containers)
LOWERED = {
    "prim::If", "prim::Loop", "prim::CallFunction", "prim::CallMethod", "prim::Constant", "prim::GetAttr",
    "prim::SetAttr", "prim::ListConstruct", "prim::ListUnpack", "prim::TupleConstruct", "prim::TupleUnpack",
    "prim::TupleIndex", "prim::DictConstruct", "prim::RaiseException", "prim::Uninitialized", "prim::Print",
    "prim::unchecked_cast", "prim::FusionGroup", "prim::Drop", "prim::Enter", "prim::Exit",
}
REASONS = [
    ("autograd", re.compile(r"_backward|backward|grad|autograd|requires_grad_|retain_grad|_fw_primal|_make_dual|_unpack_dual|detach_")),
    ("another device", re.compile(r"cuda|cudnn|miopen|mkldnn|mps|xpu|vulkan|metal|ipu|hip|_nnpack|fbgemm|xnnpack|onednn|mkl_")),
    ("sparse tensors", re.compile(r"sparse|coalesce|_indices|_values|crow_|col_indices|ccol|row_indices|to_dense|_nnz")),
    ("quantized tensors", re.compile(r"quantiz|q_scale|q_zero|q_per_channel|int_repr|qscheme|_fake_quant|dequant")),
    ("nested tensors", re.compile(r"nested")),
    ("distributed / rpc / futures", re.compile(r"rpc|dist|_c10d|wait|fork|awaitable|Future|_collective")),
    ("storage and memory", re.compile(r"storage|set_\b|_set_|pin_memory|share_memory|record_stream|_version|data_ptr")),
    ("profiling and tracing", re.compile(r"profiler|record_function|_assert_|_debug|_print|_log_|trace")),
    ("private torch internals", re.compile(r"::_")),
]


def _has_tensor(schema: object) -> bool:
    types = [str(a.type) for a in schema.arguments] + [str(r.type) for r in schema.returns]  # type: ignore[attr-defined]
    return any("Tensor" in t for t in types)


def _is_complex(schema: object) -> bool:
    types = [str(a.type) for a in schema.arguments] + [str(r.type) for r in schema.returns]  # type: ignore[attr-defined]
    return any("complex" in t for t in types) or "complex" in schema.overload_name  # type: ignore[attr-defined]


def _section(schema: object) -> str:
    name = schema.name  # type: ignore[attr-defined]
    if name.startswith("prim::"):
        return "prim ops"
    if not _has_tensor(schema):
        return "language builtins"
    return "tensor operators and methods"


def _reason(qualified: str) -> str:
    for reason, pattern in REASONS:
        if pattern.search(qualified):
            return reason
    if qualified.split(".", 1)[-1] == "out" or qualified.endswith("_out"):
        return "out= form of a missing operator"
    return "not yet written"


def survey() -> dict[str, list[tuple[str, str, str]]]:
    """section -> [(qualified name, status, reason)] for every schema torch registers."""
    import torch

    import vm.ops  # noqa: F401  (registers every kernel)
    from vm.ops import registry

    sections: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    seen: set[str] = set()
    for schema in torch._C._jit_get_all_schemas():
        if _is_complex(schema):
            continue
        qualified = schema.name + (f".{schema.overload_name}" if schema.overload_name else "")
        if qualified in seen:
            continue
        seen.add(qualified)
        implemented = (
            qualified in registry._REGISTRY  # noqa: SLF001  (the exact overload)
            or schema.name in LOWERED
            or registry.has_factory(schema.name)
        )
        status = "implemented" if implemented else "refused"
        sections[_section(schema)].append((qualified, status, "" if implemented else _reason(qualified)))
    return sections


def render(sections: dict[str, list[tuple[str, str, str]]], torch_version: str) -> str:
    lines = [
        "# The TorchScript language in irvm",
        "",
        f"Generated by `python tools/language_coverage.py` from torch {torch_version}'s operator table",
        "(`torch._C._jit_get_all_schemas()`, what `torch.jit.supported_ops()` lists); do not edit by hand.",
        "An *implemented* schema runs on both backends (the interpreter and the static runtime call",
        "the same kernels); any other is refused at compile time (\"unknown operator\"), for the reason",
        "given.  `complex` overloads are out of scope.",
        "",
        "| section | schemas | implemented | refused |",
        "|---|---:|---:|---:|",
    ]
    for section in ("language builtins", "prim ops", "tensor operators and methods"):
        rows = sections.get(section, [])
        done = sum(1 for _, status, _ in rows if status == "implemented")
        lines.append(f"| {section} | {len(rows)} | {done} | {len(rows) - done} |")
    for section in ("language builtins", "prim ops"):
        lines += ["", f"## {section}", "", "| schema | status | reason |", "|---|---|---|"]
        for qualified, status, reason in sorted(sections.get(section, [])):
            lines.append(f"| `{qualified}` | {status} | {reason} |")
    rows = sections.get("tensor operators and methods", [])
    lines += ["", "## tensor operators and methods: refused, by reason", ""]
    by_reason: dict[str, list[str]] = defaultdict(list)
    for qualified, status, reason in rows:
        if status != "implemented":
            by_reason[reason].append(qualified)
    counts = Counter({r: len(v) for r, v in by_reason.items()})
    for reason, n in counts.most_common():
        names = sorted({q.split(".")[0] for q in by_reason[reason]})
        lines += [f"### {reason} ({n} schemas, {len(names)} operators)", "", ", ".join(f"`{q}`" for q in names), ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default=str(ROOT / "docs" / "language.md"))
    args = parser.parse_args(argv)
    import torch

    sections = survey()
    Path(args.output).write_text(render(sections, torch.__version__))
    for section, rows in sorted(sections.items()):
        done = sum(1 for _, status, _ in rows if status == "implemented")
        print(f"{section}: {done}/{len(rows)} implemented")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
