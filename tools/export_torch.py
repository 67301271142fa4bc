"""Export a PyTorch function or module to irvm: graph IR text, weights, sample inputs.

    python tools/export_torch.py FILE.py NAME [--trace] [--freeze] [--no-inline] [--inputs SPEC] -o OUTDIR
    python tools/export_torch.py MODEL.pt [NAME] [--freeze] [--inputs SPEC] -o OUTDIR

NAME names, in FILE.py, a function, an ``nn.Module`` instance or class, or a zero-argument
factory returning a module.  The tool scripts it (``torch.jit.script``; ``--trace`` traces
it on the sample inputs instead; ``--freeze`` also runs ``torch.jit.freeze`` on a module)
and writes into OUTDIR:

    NAME.ir            the inlined graph, exactly as PyTorch prints it (``--no-inline``: the
                       function's own graph with its prim::CallFunction nodes, then each
                       callee's graph as a ``with NAME = graph(...)`` section; for a module,
                       its ``.graph`` with prim::CallMethod nodes, then the methods of
                       classes irvm has no body for as ``with <class>.<method> = ...``)
    NAME.weights.npz   for a module: its state_dict (buffers included) under dotted keys,
                       the other attributes the graph reads with prim::GetAttr (``training``,
                       ``eps``, strings, None, lists, tuples, dicts) flattened as program
                       inputs are (0-d arrays; ``sizes.0``, ``sizes.1``; ``return_layers.KEY``)
                       and described by path in the ``__spec__`` entry, and every tensor constant PyTorch prints
                       as ``<Tensor>`` or rounded (frozen parameters) under its value name;
                       and a ``__keys__`` record of all those keys (the model's own,
                       what strict weights are checked against: vm/binding/strict.py);
                       with ``--no-inline``, also the settings (``conv.stride``,
                       ``norm.eps``...) that irvm's bodies of standard submodules read
                       (``compiler.known``; ``known_module_settings`` gives them
                       for a ``.graph`` dumped by hand)
    NAME.inputs.npz    sample inputs, in the conventions of ``vm/files/npz.py``

An existing file of those names is replaced only when this tool wrote it (the ``.ir`` ends
with ``# written by tools/export_torch.py``, the ``.npz`` files hold ``__irvm__ = "export"``),
or with ``--force``.

Sample inputs come from, in this order: ``--inputs SPEC``; a callable ``NAME_inputs`` in
the file; a callable ``example_inputs`` in the file.  The callable takes no arguments and
returns a tuple of positional arguments (or one tensor).  SPEC is a ``;``-separated list,
one item per argument: ``f32[2,3]`` (random normal; dtypes f16 f32 f64 i32 i64 u8 bool),
or a Python literal (``3``, ``2.5``, ``True``, ``None``, ``[1, 2]``).

A TorchScript archive (what ``torch.jit.save`` writes, ``MODEL.pt``) is loaded with
``torch.jit.load`` and written the same way, NAME defaulting to the file's stem; without
``--inputs`` there are no sample inputs and no NAME.inputs.npz.

The tool then prints the ``irvm run`` command that runs the export.  Source locations in
the dump are made relative: the exported file's directory becomes the working directory's
relative path and ``.../site-packages/`` is dropped, so dumps do not depend on the machine.
"""

from __future__ import annotations

import argparse
import ast
import enum
import importlib.util
import inspect
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from torch_quantized import encode_all, is_quantized_object  # noqa: E402
from torch_quantized import to_irvm as quantized_to_irvm  # noqa: E402

from vm.core.quantized import PACKED_TYPES
from vm.files.npz import flatten_values, kind_of

DTYPES = {
    "f16": torch.float16, "f32": torch.float32, "f64": torch.float64, "i32": torch.int32,
    "i64": torch.int64, "u8": torch.uint8, "bool": torch.bool,
}


class ExportError(Exception):
    """The target cannot be exported as asked (no inputs, wrong arity...)."""


class TorchCompileError(ExportError):
    """torch itself cannot script, trace or freeze the target (not an irvm failure)."""


@dataclass
class Export:
    """What one export produces: graph text, weights, inputs and torch's own result."""

    name: str
    ir: str
    inputs: dict[str, Any]
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    outputs: list[Any] | None = None  # one entry per graph output (numpy trees)
    error: str | None = None  # torch's message, when running the inputs raises
    is_module: bool = False


# -- loading ------------------------------------------------------------------------------


def load_file(path: str | Path) -> Any:
    """Import a Python file as a module (its directory goes on sys.path for its imports)."""
    path = Path(path).resolve()
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def resolve_target(obj: Any) -> Any:
    """A function stays a function; a module class or factory becomes a module instance."""
    if isinstance(obj, torch.nn.Module):
        return obj
    if inspect.isclass(obj) and issubclass(obj, torch.nn.Module):
        return obj()
    if callable(obj) and not isinstance(obj, torch.jit.ScriptFunction) and not _parameters(obj):
        made = obj()
        if isinstance(made, torch.nn.Module):
            return made
    return obj


def _parameters(fn: Callable[..., Any]) -> list[str]:
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return ["?"]


def sample_inputs(source: Any, name: str, spec: str | None, seed: int = 0) -> tuple[Any, ...]:
    """Sample arguments: ``--inputs SPEC``, else ``NAME_inputs()``, else ``example_inputs()``."""
    torch.manual_seed(seed)
    if spec is not None:
        return tuple(_parse_spec_item(item.strip()) for item in spec.split(";") if item.strip())
    for attr in (f"{name}_inputs", "example_inputs"):
        maker = getattr(source, attr, None)
        if callable(maker):
            made = maker()
            return made if isinstance(made, tuple) else (made,)
    raise ExportError(f"no sample inputs: pass --inputs or define {name}_inputs() or example_inputs()")


def _parse_spec_item(item: str) -> Any:
    match = re.fullmatch(r"(\w+)\[([\d,\s]*)\]", item)
    if match and match.group(1) in DTYPES:
        shape = [int(s) for s in match.group(2).split(",") if s.strip()]
        dtype = DTYPES[match.group(1)]
        if dtype.is_floating_point:
            return torch.randn(shape, dtype=dtype)
        if dtype == torch.bool:
            return torch.rand(shape) < 0.5
        return torch.randint(-5, 6, shape, dtype=dtype) if dtype != torch.uint8 else torch.randint(0, 11, shape, dtype=dtype)
    return ast.literal_eval(item)


# -- converting ---------------------------------------------------------------------------


def to_numpy(value: Any) -> Any:
    """A torch value tree as irvm's runtime values (numpy arrays, Python scalars...)."""
    if is_quantized_object(value):
        return quantized_to_irvm(value)  # a QTensor or packed parameters (tools/torch_quantized.py)
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy().copy()
    if isinstance(value, tuple):
        return tuple(to_numpy(v) for v in value)
    if isinstance(value, list):
        return [to_numpy(v) for v in value]
    if isinstance(value, dict):
        return {k: to_numpy(v) for k, v in value.items()}
    if isinstance(value, torch.dtype):
        return _DTYPE_CODES[value]
    if isinstance(value, torch.device):
        return str(value)
    if isinstance(value, enum.Enum):  # vm.binding.weights reads an Enum<...> attribute from NAME or NAME=VALUE
        known = isinstance(value.value, (int, float, str)) and not isinstance(value.value, bool)
        return f"{value.name}={json.dumps(value.value)}" if known else value.name
    return value


_DTYPE_CODES = {
    torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4,
    torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.bool: 11,
}


def _clone_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Fresh copies, so an in-place program cannot change the saved sample inputs."""
    def clone(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return v.clone()
        if isinstance(v, (list, tuple)):
            return type(v)(clone(x) for x in v)
        if isinstance(v, dict):
            return {k: clone(x) for k, x in v.items()}
        return v
    return tuple(clone(a) for a in args)


# -- scripting and dumping ----------------------------------------------------------------


def compile_target(target: Any, args: tuple[Any, ...], *, trace: bool, freeze: bool, strict: bool = True) -> Any:
    """The ScriptFunction or ScriptModule for ``target`` (``strict=False``: a traced
    module may return a dict or a list)."""
    if trace:
        compiled = torch.jit.trace(target, args, strict=strict)
    else:
        compiled = torch.jit.script(target)
    if freeze:
        if not isinstance(compiled, torch.jit.ScriptModule):
            raise ExportError("--freeze needs an nn.Module")
        compiled = torch.jit.freeze(compiled.eval())
    return compiled


def graph_text(compiled: Any, source_dir: Path | None, base: Path | None = None) -> str:
    """The inlined graph as PyTorch prints it, with machine-independent source paths."""
    graph = compiled.inlined_graph if hasattr(compiled, "inlined_graph") else compiled.graph
    return normalize_paths(str(graph), source_dir, base)


def module_text(target: Any, compiled: Any) -> str:
    """A multi-graph module: ``compiled``'s graph with its calls kept, then one
    ``with NAME = graph(...)`` per function it calls (transitively), each as torch prints
    that function's own graph.  Callees are found by name in ``target``'s globals."""
    sections = [str(compiled.graph)]
    seen: set[str] = set()
    pending = _called_names(compiled.graph)
    namespace = getattr(target, "__globals__", {})
    while pending:
        name = pending.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if name not in namespace:
            raise ExportError(f"cannot find the called function {name!r} in {target.__module__}")
        graph = torch.jit.script(namespace[name]).graph
        sections.append(f"with {name} = {graph}")
        pending.extend(_called_names(graph))
    return "".join(s if s.endswith("\n") else s + "\n" for s in sections)


def module_method_text(compiled: Any) -> str:
    """A scripted module as ``.graph`` shows it (each submodule call a ``prim::CallMethod``),
    then one ``with <class>.<method> = graph(...)`` per method it calls (transitively) on a
    class that ``compiler.known`` does not know (``Sequential``, the model's own
    submodules), so the dump runs without inlining: known classes get irvm's bodies, and
    their settings are in the weights (``known_module_settings``)."""
    from compiler.known import is_known_class

    by_type = {_class_qualname(sub): sub for _, sub in compiled.named_modules()}
    sections = [str(compiled.graph)]
    pending, seen = _called_methods(compiled.graph), set()
    while pending:
        qualname, method = pending.pop(0)
        if (qualname, method) in seen or (is_known_class(qualname) and method == "forward"):
            continue
        seen.add((qualname, method))
        if qualname not in by_type:
            raise ExportError(f"cannot find the submodule of class {qualname} to dump its {method}()")
        graph = getattr(by_type[qualname], method).graph
        sections.append(f"with {qualname}.{method} = {graph}")
        pending.extend(_called_methods(graph))
    return "".join(s if s.endswith("\n") else s + "\n" for s in sections)


def _called_methods(graph: Any) -> list[tuple[str, str]]:
    return [(str(next(iter(n.inputs())).type()), n.s("name")) for n in _all_nodes(graph) if n.kind() == "prim::CallMethod"]


def _called_names(graph: Any) -> list[str]:
    return [n.s("name") for n in _all_nodes(graph)
            if n.kind() == "prim::Constant" and n.output().type().kind() == "FunctionType"]


def normalize_paths(text: str, source_dir: Path | None, base: Path | None = None) -> str:
    """``source_dir/`` becomes its path relative to ``base`` (default: the working directory),
    or nothing when it lies outside ``base``; ``.../site-packages/`` is dropped."""
    if source_dir is not None:
        rel = os.path.relpath(source_dir, base or Path.cwd())
        if rel.startswith(".."):  # outside the working tree: the bare file name
            rel = "."
        text = text.replace(str(source_dir) + os.sep, "" if rel == "." else rel + "/")
    return re.sub(r"(# )\S*?/site-packages/", r"\1", text)


def module_weights(compiled: Any, graph: Any) -> dict[str, np.ndarray]:
    """state_dict + buffers + plain attributes read by GetAttr + printed-away tensor constants."""
    weights: dict[str, np.ndarray] = {}
    for key, value in compiled.state_dict(keep_vars=False).items():
        if isinstance(value, tuple):
            continue  # a quantized Linear's (weight, bias): the graph reads the packed object
        weights[key] = to_numpy(value)
    for key, value in compiled.named_buffers():
        weights.setdefault(key, to_numpy(value))
    weights.update(getattr_values(compiled, graph, weights))
    weights.update(tensor_constants(graph))
    return encode_all(weights)


def with_keys_record(weights: dict[str, Any]) -> dict[str, Any]:
    """``weights`` (a module's whole flattened state, quantized entries encoded) with its
    ``__keys__`` record: the model's own keys, which strict weights are checked against
    (``vm.binding.strict``), so that a key of the module the optimized program does not read
    is never refused."""
    from vm.binding.strict import KEYS, model_keys_of
    from vm.files.quantized import decode

    keys = model_keys_of(decode({k: v for k, v in weights.items() if k != KEYS}))
    return {**weights, KEYS: np.array(json.dumps(keys, sort_keys=True))}


def known_module_settings(model: Any) -> dict[str, np.ndarray]:
    """The plain settings (stride, eps, inplace...) that irvm's known ``forward`` bodies
    (``compiler.known``) read from each standard submodule of ``model``, under
    dotted keys (``conv.stride``), so that a dump of ``.graph`` (calls kept) runs.

    An int setting of a list attribute is repeated to the module's rank (``kernel_size=3``
    of a Conv2d is ``[3, 3]``); ``padding="valid"`` is zeros and ``"same"`` the symmetric
    padding it means (an ``ExportError`` when the total is odd); a None is the string
    ``"None"``.  Tensors are left to the state_dict."""
    from compiler import types as T
    from compiler.known import attributes_read, is_known_class, list_rank

    found: dict[str, np.ndarray] = {}
    for path, sub in model.named_modules():
        qualname = _class_qualname(sub)
        if not is_known_class(qualname):
            continue
        for name, type_ in attributes_read(qualname):
            plain = type_.elem if isinstance(type_, T.OptionalType) else type_
            if isinstance(plain, (T.TensorType, T.ClassType)) or (
                isinstance(plain, T.ListType) and plain.elem == T.TENSOR
            ):
                continue  # the state_dict has them (an RNN's _flat_weights: its named parameters)
            key = f"{path}.{name}" if path else name
            value = _lookup(sub, name)
            if name == "padding" and isinstance(value, str):
                value = _string_padding(sub, value, key)
            found[key] = _setting(value, plain, list_rank(qualname), key)
    return found


def _class_qualname(sub: Any) -> str:
    if isinstance(sub, torch.jit.ScriptModule):
        return sub._c._type().qualified_name()
    return f"__torch__.{type(sub).__module__}.{type(sub).__qualname__}"


def _string_padding(sub: Any, padding: str, key: str) -> list[int]:
    kernel, dilation = list(sub.kernel_size), list(sub.dilation)
    if padding == "valid":
        return [0] * len(kernel)
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    if padding != "same" or any(t % 2 for t in totals):
        raise ExportError(f"{key}={padding!r} pads asymmetrically; irvm's known Conv body takes int padding")
    return [t // 2 for t in totals]


def _setting(value: Any, type_: Any, rank: int, key: str) -> np.ndarray:
    from compiler import types as T

    if value is None:
        return np.array("None")
    if isinstance(type_, T.ListType):
        items = [value] * rank if isinstance(value, int) else list(value)
        if any(not isinstance(v, int) for v in items):
            raise ExportError(f"{key}={value!r}: irvm's known body takes a list of ints here")
        return np.array(items, dtype=np.int64)
    kinds = {"bool": np.bool_, "int": np.int64, "float": np.float64}
    return np.array(value, dtype=kinds[str(type_)]) if str(type_) in kinds else np.array(str(value))


def getattr_values(compiled: Any, graph: Any, known: dict[str, Any]) -> dict[str, np.ndarray]:
    """The attributes outside the state_dict that the graph reads via prim::GetAttr chains
    from ``%self`` (``training``, ints, strings, None, lists, tuples, dicts, tensors kept
    in lists...), flattened as ``vm.files.npz`` flattens values, with a ``__spec__`` entry naming
    each one's kind by its dotted path, so that strings, None and dict keys round-trip."""
    paths: dict[Any, str] = {}
    inputs = list(graph.inputs())
    if inputs:
        paths[inputs[0].debugName()] = ""
    values: dict[str, Any] = {}
    for node in _all_nodes(graph):
        if node.kind() != "prim::GetAttr":
            continue
        base = paths.get(node.input().debugName())
        if base is None:
            continue
        path = f"{base}.{node.s('name')}" if base else node.s("name")
        paths[node.output().debugName()] = path
        packed = str(node.output().type()).startswith("__torch__.torch.classes.")
        if path in known or path in values or (node.output().type().kind() == "ClassType" and not packed):
            continue
        value = _lookup(compiled, path)
        if isinstance(value, torch.nn.Module):
            continue
        values[path] = to_numpy(value)
    packed_values = {k: v for k, v in values.items() if isinstance(v, PACKED_TYPES)}
    plain = {k: v for k, v in values.items() if k not in packed_values}
    return {**(flatten_values(plain) if plain else {}), **encode_all(packed_values)}


def _lookup(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def expand_tensor_lists(text: str, graph: Any) -> tuple[str, dict[str, np.ndarray]]:
    """``text`` with each tensor-list constant (a frozen RNN's ``_flat_weights``, printed
    ``prim::Constant[value=[<Tensors>]]()``, which no parser can read back) written as one
    ``<Tensor>`` constant per element, ``%NAME.i``, and a ``prim::ListConstruct`` of them
    under the old name; returns the new text and the elements' arrays, keyed ``NAME.i``
    as every frozen constant is keyed by its value name."""
    weights: dict[str, np.ndarray] = {}
    for node in _all_nodes(graph):
        out = node.output() if node.kind() == "prim::Constant" and node.outputsSize() == 1 else None
        if out is None or str(out.type()) not in ("Tensor[]", "List[Tensor]"):
            continue
        name, items = out.debugName(), out.toIValue()
        line = re.compile(rf"^( *)%{re.escape(name)} : Tensor\[\] = prim::Constant\[value=\[<Tensors>\]\]\(\)(.*)$", re.MULTILINE)
        match = line.search(text)
        if match is None:
            raise ExportError(f"cannot find the tensor-list constant %{name} in the dump")
        indent, tail = match.group(1), match.group(2)
        lines = []
        for i, item in enumerate(items):
            weights[f"{name}.{i}"] = to_numpy(item)
            lines.append(f"{indent}%{name}.{i} : Tensor = prim::Constant[value=<Tensor>](){tail}")
        elems = ", ".join(f"%{name}.{i}" for i in range(len(items)))
        lines.append(f"{indent}%{name} : Tensor[] = prim::ListConstruct({elems}){tail}")
        text = text[: match.start()] + "\n".join(lines) + text[match.end() :]
    if "<Tensors>" in text:
        raise ExportError("the dump holds a constant of several tensors ([<Tensors>]) irvm cannot bind; "
                          "export without --freeze")
    return text, weights


def tensor_constants(graph: Any) -> dict[str, np.ndarray]:
    """Tensor constants whose values the dump does not print exactly (``<Tensor>``, rounded)."""
    found: dict[str, np.ndarray] = {}
    for node in _all_nodes(graph):
        if node.kind() == "prim::Constant" and node.output().type().kind() == "TensorType":
            value = node.output().toIValue()
            if isinstance(value, torch.Tensor) and (value.dim() > 0 or value.is_quantized):
                found[node.output().debugName()] = to_numpy(value)
        elif node.kind() == "prim::Constant" and str(node.output().type()).startswith("__torch__.torch.classes."):
            found[node.output().debugName()] = to_numpy(node.output().toIValue())  # object(0x...)
    return found


def _all_nodes(graph_or_block: Any) -> list[Any]:
    nodes = []
    for node in graph_or_block.nodes():
        nodes.append(node)
        for block in node.blocks():
            nodes.extend(_all_nodes(block))
    return nodes


def input_names(graph: Any, is_module: bool) -> list[str]:
    names = [v.debugName() for v in graph.inputs()]
    return names[1:] if is_module else names


def export(
    target: Any, name: str, args: tuple[Any, ...], *, trace: bool = False, freeze: bool = False,
    source_dir: Path | None = None, base: Path | None = None, inline: bool = True, strict: bool = True,
) -> Export:
    """Script or trace ``target``, dump it, and run it on ``args`` for the expected result.

    ``inline=False`` (scripted functions only) keeps the calls: the dump is a module of
    several graphs (see ``module_text``) instead of one inlined graph.  ``strict=False``
    traces with ``strict=False`` (dict outputs).  When torch cannot script, trace or
    freeze the target, a ``TorchCompileError`` carries torch's message.
    """
    target = resolve_target(target)
    is_module = isinstance(target, torch.nn.Module)
    try:
        compiled = compile_target(target, _clone_args(args), trace=trace, freeze=freeze, strict=strict)
    except ExportError:
        raise
    except Exception as err:  # whatever torch's frontend raises is its refusal
        how = "trace" if trace else "script"
        raise TorchCompileError(f"torch cannot {how}{' and freeze' if freeze else ''} {name}: "
                                f"{type(err).__name__}: {_first_line(err)}") from err
    graph = compiled.inlined_graph if hasattr(compiled, "inlined_graph") else compiled.graph
    if inline:
        text = graph_text(compiled, source_dir, base)
        text, list_constants = expand_tensor_lists(text, graph)
    elif trace or freeze:
        raise ExportError("--no-inline needs a scripted function or a scripted, unfrozen module")
    elif is_module:
        text = normalize_paths(module_method_text(compiled), source_dir, base)
    else:
        text = normalize_paths(module_text(target, compiled), source_dir, base)
    result = Export(name, text, {}, is_module=is_module)
    names = input_names(graph, is_module)
    if trace:  # a traced graph takes only tensors: the flattened tensor arguments
        args = tuple(a for a in _flat_tensors(args))
    if len(names) != len(args):
        raise ExportError(f"{name}: the graph takes {len(names)} inputs, the sample has {len(args)}")
    result.inputs = {n: to_numpy(a) for n, a in zip(names, args)}
    if is_module:
        result.weights = module_weights(compiled, graph)
        if not inline:  # the dump calls submodules: irvm's known bodies read their settings
            for key, value in known_module_settings(target).items():
                result.weights.setdefault(key, value)
    else:
        result.weights = tensor_constants(graph)
    if inline:
        result.weights.update(list_constants)
    try:
        with torch.no_grad():
            out = compiled(*_clone_args(args))
        result.outputs = [to_numpy(out)]
        kind_of(result.outputs[0])  # fail here, not later, on a value npz cannot hold
    except (RuntimeError, torch.jit.Error) as err:
        result.error = script_error_message(err)
    return result


def _flat_tensors(value: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flat_tensors(v)]
    return []


def _first_line(err: Exception) -> str:
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def script_error_message(err: Exception) -> str:
    """The last line of a TorchScript error: ``builtins.ValueError: the message``."""
    lines = [line for line in str(err).strip().splitlines() if line.strip()]
    return lines[-1] if lines else str(err)


# -- writing ------------------------------------------------------------------------------


EXPORT_MARK = "# written by tools/export_torch.py"  # the last line of an exported .ir
NPZ_ROLE = "export"  # the __irvm__ role of an exported .npz (vm/files/kinds.py)


def write(exp: Export, outdir: Path, inputs: bool = True, mark: bool = False) -> dict[str, Path]:
    """Write NAME.ir, NAME.inputs.npz (unless not ``inputs``), NAME.weights.npz (when there
    are weights).  ``mark`` (the command line) ends the .ir with ``EXPORT_MARK`` and puts
    the ``export`` role into the .npz files, so a later export knows them as its own."""
    from vm.files.npz import save_marked

    outdir.mkdir(parents=True, exist_ok=True)
    paths = targets(exp, outdir, inputs)
    text = exp.ir if exp.ir.endswith("\n") else exp.ir + "\n"
    paths["ir"].write_text(text + EXPORT_MARK + "\n" if mark else text)
    weights = with_keys_record(exp.weights) if exp.is_module else exp.weights
    for key, flat in (("inputs", flatten_values(exp.inputs)), ("weights", weights)):
        if key in paths and (key != "inputs" or inputs):
            if mark:
                save_marked(paths[key], flat, NPZ_ROLE)
            else:
                np.savez(paths[key], **flat)
    return paths


def targets(exp: Export, outdir: Path, inputs: bool = True) -> dict[str, Path]:
    """The files ``write`` writes."""
    paths = {"ir": outdir / f"{exp.name}.ir", "inputs": outdir / f"{exp.name}.inputs.npz"}
    if exp.weights or exp.is_module:
        paths["weights"] = outdir / f"{exp.name}.weights.npz"
    return paths


def check_targets(exp: Export, outdir: Path, inputs: bool, given: Path, force: bool) -> None:
    """Refuse to replace a file this tool did not write (unless ``force``), or the input."""
    from vm.files.kinds import npz_mark

    for key, path in targets(exp, outdir, inputs).items():
        if key == "inputs" and not inputs or not path.exists():
            continue
        if path.resolve() == given.resolve():
            raise ExportError(f"refusing to write {path}: it is the file being exported")
        if force:
            continue
        if key == "ir":
            lines = path.read_text(errors="replace").rstrip("\n").splitlines()
            ours = bool(lines) and lines[-1] == EXPORT_MARK
        else:
            ours = npz_mark(path) == NPZ_ROLE
        if not ours:
            raise ExportError(f"refusing to overwrite {path}: it exists and export_torch did not write it (use --force)")


def run_command(paths: dict[str, Path], output: str | None = None) -> str:
    parts = ["irvm", "run", str(paths["ir"]), "--inputs", str(paths["inputs"])]
    if "weights" in paths:
        parts += ["--weights", str(paths["weights"])]
    if output:
        parts += ["--output", output]
    return " ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", help="a Python file, or a TorchScript archive (torch.jit.save)")
    parser.add_argument("name", nargs="?", help="what to export from FILE.py (for an archive: the output name)")
    parser.add_argument("--trace", action="store_true", help="trace on the sample inputs instead of scripting")
    parser.add_argument("--freeze", action="store_true", help="torch.jit.freeze the module (eval mode)")
    parser.add_argument("--no-inline", action="store_true",
                        help="keep calls: one graph per scripted function, as `with NAME = graph(...)` sections")
    parser.add_argument("--inputs", metavar="SPEC", help="sample inputs, e.g. 'f32[2,3];i64[4];3'")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--outdir", required=True)
    parser.add_argument("--force", action="store_true", help="overwrite files in OUTDIR this tool did not write")
    args = parser.parse_args(argv)
    try:
        return _export_file(args)
    except ExportError as err:
        print(f"export_torch: {err}", file=sys.stderr)
        return 2


def _export_file(args: argparse.Namespace) -> int:
    from vm.files.kinds import FileKind, sniff

    if sniff(args.file) is FileKind.TORCHSCRIPT:
        return _export_archive(args)
    if args.name is None:
        raise ExportError("give the NAME of the function or module to export from the file")
    source = load_file(args.file)
    target = getattr(source, args.name, None)
    if target is None:
        raise ExportError(f"{args.file} defines no {args.name!r}")
    sample = sample_inputs(source, args.name, args.inputs, args.seed)
    exp = export(target, args.name, sample, trace=args.trace, freeze=args.freeze,
                 source_dir=Path(args.file).resolve().parent, inline=not args.no_inline)
    check_targets(exp, Path(args.outdir), True, Path(args.file), args.force)
    paths = write(exp, Path(args.outdir), mark=True)
    print(run_command(paths, str(Path(args.outdir) / f"{args.name}.out.npz")))
    return 0


def _export_archive(args: argparse.Namespace) -> int:
    """A torch.jit.save archive: its inlined graph, its weights, and sample inputs when
    ``--inputs`` gives them."""
    if args.trace or args.no_inline:
        raise ExportError("an archive is already compiled: --trace and --no-inline do not apply")
    name = args.name or Path(args.file).stem
    compiled = torch.jit.load(args.file, map_location="cpu")
    if args.freeze:
        compiled = torch.jit.freeze(compiled.eval())
    graph = compiled.inlined_graph
    text, list_constants = expand_tensor_lists(graph_text(compiled, None), graph)
    exp = Export(name, text, {}, is_module=True)
    exp.weights = {**module_weights(compiled, graph), **list_constants}
    if args.inputs:
        sample = sample_inputs(None, name, args.inputs, args.seed)
        names = input_names(graph, True)
        if len(names) != len(sample):
            raise ExportError(f"{name}: the graph takes {len(names)} inputs, --inputs gives {len(sample)}")
        exp.inputs = {n: to_numpy(a) for n, a in zip(names, sample)}
    outdir = Path(args.outdir)
    check_targets(exp, outdir, bool(args.inputs), Path(args.file), args.force)
    paths = write(exp, outdir, inputs=bool(args.inputs), mark=True)
    if args.inputs:
        print(run_command(paths, str(outdir / f"{name}.out.npz")))
    else:
        print(" ".join(["irvm", "run", str(paths["ir"]), "--inputs", "IN.npz", "--weights", str(paths["weights"])]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
