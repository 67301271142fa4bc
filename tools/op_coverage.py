"""Which `aten::`/`prim::` operators of real graphs the registry cannot resolve.

    python tools/op_coverage.py DUMPS...                  # .ir files or directories of them
    python tools/op_coverage.py --models hf,tv,timm       # build model samples with torch
    python tools/op_coverage.py --models bert,resnet18 --mode trace --dump-dir DIR
    python tools/op_coverage.py --models hf --run         # also run both backends vs torch

For every graph the tool parses the IR, gives calls of standard ``torch.nn`` modules
irvm's bodies and inlines every call (``add_known_methods`` + ``inline_calls``, as the
compiler does first), then asks ``vm.ir.resolve`` for each node, nested blocks
included.  Nothing is constant-folded, so an operator inside a branch that is never
taken in eval mode (``bernoulli_`` under ``if self.training``) still counts: the
compiler would stop on it unless propagation removed the branch.

The report lists each unresolved node kind with the input types it was called with
(``aten::diff(Tensor, int, int, Tensor?, Tensor?)``, which is what picks an overload),
how many nodes use it and which models.  Graphs built in-process also name the overload
PyTorch itself bound (``node.schema()``), so the report says exactly which schema to
register.  Dumps that do not parse are listed with their error: that is not an operator
gap, but it hides one.

Models are built from small configurations in code (random weights, no downloads): Hugging
Face BERT, DistilBERT, RoBERTa, GPT-2, T5, ViT and Whisper's encoder (``torchscript=True``,
``return_dict=False``, with the SDPA and the eager attention), one model per torchvision
classification family plus the segmentation models, and a sample of timm families
(``timm``; ``timm-families`` takes one small model from each of timm's ~100 model modules).
Each is scripted and traced (``--mode``); what torch itself cannot script or trace is
reported as such.  ``--run`` also compiles each graph, runs it on the interpreter and the
static runtime with the module's weights (``tools/export_torch.module_weights``) and
compares every output with torch's (dtype, shape, relative error), so a kernel that
resolves but computes something else shows up too.
"""

from __future__ import annotations

import argparse
import sys
import traceback
import types
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from compiler.diagnostics import CompileError, IRError
from vm.ir.graph import Graph, Module, Node
from vm.ir.resolve import constant_value, normalize, resolve
from vm.ops.facts import CONTROL_KINDS


@dataclass
class Gap:
    """One unresolved (kind, input types) pair over every graph seen."""

    kind: str
    signature: str
    reason: str  # "unknown operator" | "no overload" | "bad constant"
    count: int = 0
    models: set[str] = field(default_factory=set)


@dataclass
class Report:
    gaps: dict[tuple[str, str], Gap] = field(default_factory=dict)
    torch_schemas: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    failures: dict[str, str] = field(default_factory=dict)  # model -> why it has no graph
    graphs: list[str] = field(default_factory=list)
    runs: dict[str, str] = field(default_factory=dict)  # model -> "match" or what went wrong

    def add_graph(self, label: str, text: str, filename: str | None = None) -> None:
        """Parse ``text``, inline it as the compiler does, and record every unresolved node."""
        from compiler.parser import parse
        from compiler.pipeline import optimize

        try:
            module, _ = optimize(parse(text, filename), ["add_known_methods", "inline_calls"], fusion=False)
        except IRError as err:
            self.failures[label] = "irvm: " + str(err).strip().splitlines()[0]
            return
        self.graphs.append(label)
        for node in _nodes(module):
            gap = _unresolved(node)
            if gap is None:
                continue
            key = (gap.kind, gap.signature)
            entry = self.gaps.setdefault(key, gap)
            entry.count += 1
            entry.models.add(label)

    def kinds(self) -> set[str]:
        return {g.kind for g in self.gaps.values()}

    def markdown(self) -> str:
        lines = [f"{len(self.graphs)} graphs analysed, {len(self.gaps)} unresolved (kind, input types).", ""]
        if self.gaps:
            lines += ["| operator (input types) | why | nodes | torch overloads | models |", "|---|---|---|---|---|"]
            for gap in sorted(self.gaps.values(), key=lambda g: (-len(g.models), g.kind, g.signature)):
                schemas = ", ".join(sorted(self.torch_schemas.get(gap.kind, ()))) or "-"
                models = ", ".join(sorted(gap.models))
                lines.append(f"| `{gap.signature}` | {gap.reason} | {gap.count} | {schemas} | {models} |")
        if self.runs:
            matched = sum(r.startswith("match") for r in self.runs.values())
            lines += ["", f"{matched} of {len(self.runs)} runs match torch on both backends.", "",
                      "| model | run on both backends |", "|---|---|"]
            for label, what in sorted(self.runs.items()):
                lines.append(f"| {label} | {what.replace('|', '/')[:300]} |")
        if self.failures:
            lines += ["", "| model | no graph to analyse |", "|---|---|"]
            for label, why in sorted(self.failures.items()):
                lines.append(f"| {label} | {why.replace('|', '/')[:200]} |")
        return "\n".join(lines) + "\n"


def _nodes(module: Module) -> Iterator[Node]:
    graphs: list[Graph] = [module.main, *module.functions.values()]
    while graphs:
        graph = graphs.pop()
        for node in graph.walk():
            sub = node.attrs.get("Subgraph")
            if isinstance(sub, Graph):
                graphs.append(sub)
            yield node


def _unresolved(node: Node) -> Gap | None:
    signature = f"{node.kind}({', '.join(str(normalize(v.type)) for v in node.inputs)})"
    try:
        if node.kind == "prim::Constant":
            constant_value(node)
        elif node.kind not in CONTROL_KINDS:
            resolve(node)
        return None
    except CompileError as err:
        text = str(err)
        reason = "unknown operator" if "unknown operator" in text else "no overload"
        if node.kind == "prim::Constant":
            reason, signature = "bad constant", f"prim::Constant -> {node.outputs[0].type}"
        return Gap(node.kind, signature, reason)


def ir_files(paths: Iterable[str]) -> Iterator[Path]:
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from sorted(path.rglob("*.ir"))
        else:
            yield path


# ---------------------------------------------------------------------------------------
# Models built in-process (torch, torchvision, transformers, timm)


def import_torchvision() -> Any:
    """torchvision without its compiled extension (which does not load with this torch)."""
    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
    import torchvision

    return torchvision


Builder = Callable[[], tuple[Any, tuple[Any, ...]]]


def _hf(config_name: str, model_name: str, inputs: Callable[[], tuple[Any, ...]], attn: str, **config: Any) -> Builder:
    def build() -> tuple[Any, tuple[Any, ...]]:
        import_torchvision()
        import transformers

        cfg = getattr(transformers, config_name)(torchscript=True, return_dict=False, use_cache=False, **config)
        cfg._attn_implementation = attn
        model = getattr(transformers, model_name)(cfg)
        if model_name == "WhisperModel":
            model = model.get_encoder()
        return model.eval(), inputs()

    return build


def _ids(mask: bool, n: int = 8, vocab: int = 99) -> Callable[[], tuple[Any, ...]]:
    def make() -> tuple[Any, ...]:
        import torch

        torch.manual_seed(0)
        ids = torch.randint(0, vocab, (1, n))
        if not mask:  # without a mask, decoders take other paths (packed-sequence detection)
            return ({"input_ids": ids},)
        padding = torch.ones(1, n, dtype=torch.long)
        padding[0, : n // 4] = 0  # some padding, so masks are not all-ones constants
        return ({"input_ids": ids, "attention_mask": padding},)

    return make


def _pixels(shape: tuple[int, ...]) -> Callable[[], tuple[Any, ...]]:
    def make() -> tuple[Any, ...]:
        import torch

        torch.manual_seed(0)
        return (torch.randn(*shape),)

    return make


def _features(shape: tuple[int, ...], key: str) -> Callable[[], tuple[Any, ...]]:
    def make() -> tuple[Any, ...]:
        import torch

        torch.manual_seed(0)
        return ({key: torch.randn(*shape)},)

    return make


_TEXT = {"vocab_size": 99, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37}


def hf_builders() -> dict[str, Builder]:
    out: dict[str, Builder] = {}
    for attn in ("sdpa", "eager"):
        for masked, suffix in ((True, ""), (False, "-nomask")):
            ids = _ids(masked)
            out[f"bert-{attn}{suffix}"] = _hf("BertConfig", "BertModel", ids, attn, **_TEXT)
            out[f"roberta-{attn}{suffix}"] = _hf("RobertaConfig", "RobertaModel", ids, attn, **_TEXT)
            out[f"distilbert-{attn}{suffix}"] = _hf(
                "DistilBertConfig", "DistilBertModel", ids, attn, vocab_size=99, dim=32, n_layers=2, n_heads=4,
                hidden_dim=37,
            )
            out[f"gpt2-{attn}{suffix}"] = _hf(
                "GPT2Config", "GPT2Model", ids, attn, vocab_size=99, n_embd=32, n_layer=2, n_head=4
            )
            out[f"t5-{attn}{suffix}"] = _hf(
                "T5Config", "T5EncoderModel", ids, attn, vocab_size=99, d_model=32, d_kv=8, d_ff=37, num_layers=2,
                num_heads=4,
            )
        out[f"vit-{attn}"] = _hf(
            "ViTConfig", "ViTModel", _features((1, 3, 32, 32), "pixel_values"), attn, image_size=32, patch_size=8, hidden_size=32,
            num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
        )
        out[f"whisper-{attn}"] = _hf(
            "WhisperConfig", "WhisperModel", _features((1, 16, 64), "input_features"), attn, num_mel_bins=16,
            d_model=32, encoder_layers=2, encoder_attention_heads=4, decoder_layers=1, decoder_attention_heads=4,
            encoder_ffn_dim=37, decoder_ffn_dim=37, max_source_positions=32,
        )
    return out


TORCHVISION_CLASSIFIERS = [
    "alexnet", "convnext_tiny", "densenet121", "efficientnet_b0", "efficientnet_v2_s", "googlenet",
    "inception_v3", "maxvit_t", "mnasnet0_5", "mobilenet_v2", "mobilenet_v3_small", "regnet_x_400mf",
    "regnet_y_400mf", "resnet18", "resnext50_32x4d", "shufflenet_v2_x0_5", "squeezenet1_1", "swin_t",
    "swin_v2_t", "vgg11_bn", "vit_b_16", "wide_resnet50_2",
]
TORCHVISION_SEGMENTATION = ["fcn_resnet50", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"]


def _tv(name: str, segmentation: bool) -> Builder:
    def build() -> tuple[Any, tuple[Any, ...]]:
        tv = import_torchvision()
        kwargs: dict[str, Any] = {"weights": None}
        if segmentation:
            kwargs["weights_backbone"] = None
            kwargs["num_classes"] = 5
        if name in ("googlenet", "inception_v3"):
            kwargs["aux_logits"] = False
            kwargs["init_weights"] = False
        family = tv.models.segmentation if segmentation else tv.models
        model = getattr(family, name)(**kwargs)
        size = 299 if name == "inception_v3" else 224 if name.startswith(("vit", "maxvit", "swin")) else 96
        return model.eval(), _pixels((1, 3, size, size))()

    return build


def torchvision_builders() -> dict[str, Builder]:
    out = {f"tv-{n}": _tv(n, False) for n in TORCHVISION_CLASSIFIERS}
    out.update({f"tv-{n}": _tv(n, True) for n in TORCHVISION_SEGMENTATION})
    return out


TIMM_MODELS = [
    "resnet18", "efficientnet_b0", "mobilenetv3_small_050", "convnext_atto", "vit_tiny_patch16_224",
    "deit_tiny_patch16_224", "swin_tiny_patch4_window7_224", "regnetx_002", "levit_128s", "mixer_s16_224",
    "poolformer_s12", "mobilevit_xxs", "ghostnet_100", "rexnet_100", "dla34", "cait_xxs24_224", "beit_base_patch16_224",
    "edgenext_xx_small", "efficientformer_l1", "coat_tiny", "xcit_nano_12_p16_224", "resnest14d", "hrnet_w18_small",
    "densenet121", "inception_v3", "repvgg_a0", "convmixer_768_32", "gernet_s",
]


def _timm(name: str) -> Builder:
    def build() -> tuple[Any, tuple[Any, ...]]:
        import_torchvision()
        import timm

        model = timm.create_model(name, pretrained=False, num_classes=10)
        size = model.pretrained_cfg.get("input_size", (3, 224, 224))
        return model.eval(), _pixels((1, *size))()

    return build


def timm_builders() -> dict[str, Builder]:
    return {f"timm-{n}": _timm(n) for n in TIMM_MODELS}


# too large to build and run here in reasonable time (hundreds of millions of weights, or
# 1024-pixel inputs); their families' operators are the same as their smaller siblings'
_TIMM_TOO_LARGE = ("nasnetalarge", "pnasnet5large", "legacy_senet154", "deepseek_vit", "gemma4_vit", "qwen3_vit",
                   "samvit", "naflexvit", "mobilenetv5", "inception_resnet_v2")
_SMALL_WORDS = ("pico", "femto", "atto", "nano", "xxs", "tiny", "xs", "mini", "small", "_s", "b0", "18", "050", "_t",
                "lite", "base")


def timm_family_builders() -> dict[str, Builder]:
    """One small model from every timm model module (its family), by name."""
    import_torchvision()
    import timm

    def smallness(name: str) -> tuple[int, int]:
        return next((i for i, w in enumerate(_SMALL_WORDS) if w in name), 99), len(name)

    out: dict[str, Builder] = {}
    for module in timm.list_modules():
        names = [n for n in timm.list_models(module=module) if not any(t in n for t in ("384", "448", "512"))]
        names = [n for n in names if not n.startswith(_TIMM_TOO_LARGE)]
        if names:
            name = min(names, key=smallness)
            out[f"timm-{name}"] = _timm(name)
    return out


def all_builders() -> dict[str, Builder]:
    return {**hf_builders(), **torchvision_builders(), **timm_builders()}


def select(spec: str) -> dict[str, Builder]:
    """``hf``, ``tv``, ``timm``, ``timm-families`` (one model per timm module), ``all`` or
    model names (``bert-sdpa``, ``tv-resnet18``), comma-separated."""
    everything = all_builders()
    groups = {"hf": hf_builders(), "tv": torchvision_builders(), "timm": timm_builders(), "all": everything}
    if "timm-families" in spec.split(","):
        groups["timm-families"] = timm_family_builders()
    chosen: dict[str, Builder] = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        if item in groups:
            chosen.update(groups[item])
        elif item in everything:
            chosen[item] = everything[item]
        else:
            matches = {k: v for k, v in everything.items() if item in k}
            if not matches:
                raise SystemExit(f"op_coverage: no model matches {item!r}")
            chosen.update(matches)
    return chosen


def dump_graphs(model: Any, inputs: tuple[Any, ...], mode: str) -> Any:
    """The scripted or traced module (its ``inlined_graph`` is what irvm reads)."""
    import torch

    if mode == "script":
        return torch.jit.script(model)
    with torch.no_grad():
        if len(inputs) == 1 and isinstance(inputs[0], dict):  # keyword inputs (Hugging Face)
            return torch.jit.trace(model, example_kwarg_inputs=inputs[0], check_trace=False, strict=False)
        return torch.jit.trace(model, inputs, check_trace=False, strict=False)


def torch_schemas(graph: Any, into: dict[str, set[str]]) -> None:
    """Record the overload PyTorch bound for every node of ``graph`` (nested blocks too)."""
    for node in graph.nodes():
        for block in node.blocks():
            torch_schemas(block, into)
        try:
            schema = node.schema()
        except RuntimeError:
            continue
        if schema != "(no schema)":
            name = schema.split("(", 1)[0]
            into[node.kind()].add(name.split("::", 1)[1])


def _flat(value: Any) -> list[Any]:
    import torch

    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _flat(v)]
    if isinstance(value, torch.Tensor):
        return [value.detach().numpy()]
    return [value]


def run_both(jit: Any, graph: Any, text: str, inputs: tuple[Any, ...]) -> str:
    """Compile ``text``, run it on both backends with the module's weights, compare with torch."""
    import numpy as np
    import torch
    from export_torch import module_weights

    import compiler
    import vm

    args = tuple(inputs[0].values()) if len(inputs) == 1 and isinstance(inputs[0], dict) else inputs
    with torch.no_grad():
        want = _flat(jit(*args))
    try:
        program = compiler.compile_source(text)
    except IRError as err:
        return "compile: " + str(err).strip().splitlines()[0]
    weights = module_weights(jit, graph)
    numpy_args = [a.numpy() if isinstance(a, torch.Tensor) else a for a in args]
    worst = 0.0
    for backend in ("Interpreter", "StaticRuntime"):
        try:
            got = _flat(getattr(vm, backend)(program, weights)(*numpy_args))
        except Exception as err:  # noqa: BLE001  (reported, not raised: the sweep goes on)
            return f"{backend}: {type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"
        if len(got) != len(want):
            return f"{backend}: {len(got)} outputs, torch {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            if isinstance(w, np.ndarray):
                g = np.asarray(g)
                if g.shape != w.shape or g.dtype != w.dtype:
                    return f"{backend}: output {i} is {g.dtype}{list(g.shape)}, torch {w.dtype}{list(w.shape)}"
                if w.size and w.dtype.kind == "f":
                    err = float(np.max(np.abs(g - w) / (1e-3 + np.abs(w))))
                    worst = max(worst, err)
                elif not np.array_equal(g, w):
                    return f"{backend}: output {i} differs"
            elif g != w:
                return f"{backend}: output {i} is {g!r}, torch {w!r}"
    return f"match (max rel. error {worst:.1e})" if worst < 1e-2 else f"MISMATCH: max rel. error {worst:.1e}"


def sweep(
    builders: dict[str, Builder], modes: list[str], report: Report, dump_dir: Path | None, run: bool = False
) -> None:
    import warnings

    warnings.filterwarnings("ignore")
    for name, build in builders.items():
        try:
            model, inputs = build()
        except Exception as err:  # noqa: BLE001  (a model torch cannot build is reported)
            report.failures[name] = f"build: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
            continue
        for mode in modes:
            label = f"{name}:{mode}"
            try:
                jit = dump_graphs(model, inputs, mode)
                graph = jit.inlined_graph if hasattr(jit, "inlined_graph") else jit.graph
                text = str(graph)
            except Exception as err:  # noqa: BLE001
                first = str(err).strip().splitlines()[0] if str(err).strip() else ""
                report.failures[label] = f"torch {mode}: {type(err).__name__}: {first}"
                continue
            torch_schemas(graph, report.torch_schemas)
            if dump_dir is not None:
                dump_dir.mkdir(parents=True, exist_ok=True)
                (dump_dir / f"{name}.{mode}.ir").write_text(text)
            report.add_graph(label, text)
            ran = ""
            if run and label in report.graphs:
                ran = report.runs[label] = run_both(jit, graph, text, inputs)
            print(f"  {label}: {len(text.splitlines())} lines {ran}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", help=".ir files or directories searched for *.ir")
    ap.add_argument("--models", default="", help="hf, tv, timm, timm-families, all, or model names (comma-separated); needs torch")
    ap.add_argument("--mode", default="script,trace", help="script, trace or both (default)")
    ap.add_argument("--dump-dir", type=Path, help="also write each built model's IR here (NAME.MODE.ir)")
    ap.add_argument("--run", action="store_true", help="also run each built model on both backends against torch")
    ap.add_argument("--list-models", action="store_true", help="print the model names --models accepts")
    ap.add_argument("-o", "--output", type=Path, help="write the markdown report here instead of stdout")
    args = ap.parse_args(argv)
    if args.list_models:
        print("\n".join(all_builders()))
        return 0
    report = Report()
    for path in ir_files(args.paths):
        try:
            text = path.read_text()
        except OSError as err:
            report.failures[str(path)] = f"unreadable: {err}"
            continue
        report.add_graph(path.stem, text, str(path))
    if args.models:
        modes = [m.strip() for m in args.mode.split(",") if m.strip()]
        try:
            sweep(select(args.models), modes, report, args.dump_dir, args.run)
        except KeyboardInterrupt:
            traceback.print_exc()
    text = report.markdown()
    if args.output:
        args.output.write_text(text)
    else:
        print(text, end="")
    return 1 if report.gaps else 0


if __name__ == "__main__":
    sys.exit(main())
