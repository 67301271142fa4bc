"""Known modules: the ``forward`` bodies of standard ``torch.nn`` modules, as IR.

``print(torch.jit.script(model).graph)`` shows only the model's own method: each
submodule is a ``prim::GetAttr`` typed by its class (``__torch__.torch.nn.modules.
linear.Linear``) and a ``prim::CallMethod[name="forward"]`` on it, whose body is not in
the dump.  The inliner (``compiler.passes.inline_calls``) replaces such a call by the
graph stored in ``Module.functions`` under ``"<class qualname>.forward"``; this module
supplies that graph for the classes it knows (``method_body``), and the pipeline's first
step, ``compiler.passes.add_known_methods``, stores it there.  The
bodies themselves are IR files, ``compiler/known/bodies/modules/*.ir``, where their text
is fixed, and templates for the families written from one pattern (convolutions, norms,
activations, pools...) in ``compiler.known.layers`` and ``compiler.known.sequence``
(recurrent layers).

The bodies are ours, written after PyTorch's documented semantics of each module's
``forward`` in eval mode; they are not copies of what TorchScript prints (which bakes the
module's ``__constants__``, such as a convolution's stride, into ``prim::Constant``
nodes).  Every setting the forward depends on is therefore read from ``%self`` with a
``prim::GetAttr``: tensors (``weight``, ``bias``, ``running_mean``) come from the
state_dict; the plain attributes (``stride``, ``eps``, ``negative_slope``, ``inplace``,
``padding_mode``...) are in no state_dict, so the weights file must carry them (as
``tools/export_torch.py`` writes them: ``conv.stride`` = ``array([2, 2])``).  Nothing is
defaulted: ``vm.binding.weights.bind_self`` lists every attribute a run lacks before it starts.
One reading rule follows the state_dict: an absent ``Tensor?`` (a bias or running
statistic the module does not have) is None.  A non-tensor Optional the forward depends
on (``Embedding.max_norm``, ``Softmax.dim``) is read with ``required=1``: it must be in
the weights, a None value written as the string ``"None"``.

Eval mode only, and only when the weights say so: the modules whose forward depends on
``training`` (dropout, BatchNorm, InstanceNorm) read it with ``required=1``, so the
``bind_self`` rule that an absent ``training`` is False does not apply to them; True
raises at run time (dropout is random, batch norm would update running statistics),
except where PyTorch's training forward is the same computation (an InstanceNorm without
running statistics).  In eval mode a dropout returns its input itself.  Settings irvm
does not implement raise at run time with the reason (``ConvTranspose`` with an
``output_size`` argument; an ``Embedding`` with ``max_norm``; a ``MultiheadAttention``
with ``kdim``/``vdim``, ``add_bias_kv`` or ``add_zero_attn``); a convolution's string
padding is converted by ``export_torch`` (``"valid"``, a symmetric ``"same"``) and is a
type error in a weights file.  Arguments that change only gradients
(``Embedding.padding_idx``, ``sparse``) are not read.

Covered: linear layers, convolutions (1-3d, transposed 1-2d, every padding mode), the
norms (Batch/Instance 1-3d, Layer, Group), embedding, dropouts, ~25 activations, softmax
family, pools (max/avg 1-2d, adaptive avg/max 1-2d), padding layers, flatten/unflatten,
pixel shuffles, ``MultiheadAttention`` (F.multi_head_attention_forward's math: bool or
float masks, per-head masks, either layout, weights averaged or not), and ``LSTM``,
``GRU``, ``RNN`` through TorchScript's ``forward__0`` (their tensor overload), and
``TransformerEncoderLayer`` (relu or gelu), whose body calls its children's forwards in
turn.  ``TransformerEncoder`` is not covered: in eval mode with a padding mask PyTorch
may run it on nested tensors, zeroing padded positions.

Containers: ``ModuleList`` and ``ModuleDict`` have no forward; scripting unrolls their
loops into the caller, whose dump shows each child's class, so those calls resolve.
``Sequential.forward`` calls its children from its own (unprinted) body: the dump does
not say what they are, and a call of it is a ``CompileError`` naming the ways out.
"""

from __future__ import annotations

import re
from functools import cache

from compiler import types as T
from compiler.diagnostics import CompileError
from compiler.known.layers import CONTAINERS, LAYERS
from compiler.known.library import fixed_bodies
from compiler.known.sequence import METHODS, SEQUENCE
from compiler.known.text import SELF
from vm.ir.graph import Graph, Node

# unmangled class qualname -> (builder of its forward's IR text, rank of its int[] settings);
# the classes whose body is fixed text (bodies/modules/*.ir) have no int[] settings: rank 0
TEMPLATES = {**LAYERS, **SEQUENCE}

_MANGLE = re.compile(r"\.___torch_mangle_\d+(?=\.)")

_HINT = (
    "print `module.inlined_graph` (or torch.jit.freeze the module) instead of `.graph`, "
    "or torch.jit.save the module and run the .pt (`irvm run model.pt`)"
)


def base_qualname(qualname: str) -> str:
    """``qualname`` without TorchScript's per-instance ``___torch_mangle_N`` segment."""
    return _MANGLE.sub("", qualname)


@cache
def known_classes() -> dict[str, str]:
    """Unmangled class qualname -> the text of its forward, ``%self`` typed by that name:
    the fixed bodies (``compiler/known/bodies/modules/*.ir``), then the templates."""
    table = {name: texts[0] for name, texts in fixed_bodies("modules").items()}
    for name, (builder, _) in TEMPLATES.items():
        table[name] = builder().replace(SELF, name)
    return table


def is_known_class(qualname: str) -> bool:
    return base_qualname(qualname) in known_classes()


@cache
def known_forward(qualname: str) -> Graph:
    """The forward graph of the known class ``qualname`` (mangled or not), its ``%self``
    typed ``qualname``.  The caller must not mutate it (``method_body`` clones)."""
    from compiler.parser import parse

    base = base_qualname(qualname)
    text = known_classes()[base].replace(f"graph(%self : {base},", f"graph(%self : {qualname},", 1)
    short = base.rsplit(".", 1)[-1]
    return parse(text, f"<irvm known body of torch.nn.{short}.forward>").main


def attributes_read(qualname: str) -> list[tuple[str, T.Type]]:
    """The attributes the known forward of ``qualname`` reads from ``%self``, with their
    types, in reading order (what a weights file must provide beside the state_dict)."""
    graph = known_forward(qualname)
    seen: dict[str, T.Type] = {}
    for node in graph.walk():
        if node.kind == "prim::GetAttr" and node.inputs[0] is graph.inputs[0]:
            seen.setdefault(str(node.attrs["name"]), node.outputs[0].type or T.TENSOR)
    return list(seen.items())


def list_rank(qualname: str) -> int:
    """How many elements the ``int[]`` settings of ``qualname`` have (2 for Conv2d)."""
    return TEMPLATES.get(base_qualname(qualname), (None, 0))[1]


def method_body(call: Node) -> Graph | None:
    """A fresh copy of irvm's body for the method ``call`` (a ``prim::CallMethod``)
    calls, or None when its class is not known.  Raises ``CompileError`` at the call for
    a ``Sequential`` (its body calls children the dump does not show) and for a call whose
    arguments or results the body does not have."""
    self_type = call.inputs[0].type
    if not isinstance(self_type, T.ClassType):
        return None
    base = base_qualname(self_type.qualname)
    method = call.attrs.get("name")
    if base in CONTAINERS:
        raise CompileError(
            f"prim::CallMethod {base.rsplit('.', 1)[-1]}.{method}: its body calls the container's children, "
            f"whose classes `.graph` does not show; {_HINT} (--no-inline keeps the calls and adds the "
            "container's own body)",
            call.span,
        )
    if base not in known_classes() or method != METHODS.get(base, "forward"):
        return None
    body = known_forward(self_type.qualname)
    _check_signature(call, body, base)
    return body.clone()


def _check_signature(call: Node, body: Graph, base: str) -> None:
    short = base.rsplit(".", 1)[-1]
    if len(call.inputs) != len(body.inputs):
        raise CompileError(
            f"{short}.forward takes {len(body.inputs) - 1} argument(s) in irvm's known body, the call passes "
            f"{len(call.inputs) - 1}; {_HINT}",
            call.span,
        )
    got = [v.type or T.TENSOR for v in call.outputs]
    want = [v.type or T.TENSOR for v in body.outputs]
    if len(got) != len(want) or not all(_fits(g, w) for g, w in zip(got, want)):
        raise CompileError(
            f"{short}.forward returns ({', '.join(map(str, got))}) here, irvm's known body returns "
            f"({', '.join(map(str, want))}) "
            f"(settings such as return_indices=True are not supported); {_HINT}",
            call.span,
        )


def _fits(got: T.Type, want: T.Type) -> bool:
    """The call's declared result ``got`` is what the body returns (a tensor type refined
    with a dtype or shape is still a tensor)."""
    return got == want or (isinstance(got, T.TensorType) and isinstance(want, T.TensorType))


__all__ = [
    "TEMPLATES",
    "attributes_read",
    "base_qualname",
    "is_known_class",
    "known_classes",
    "known_forward",
    "list_rank",
    "method_body",
]
