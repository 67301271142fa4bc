"""Known bodies of ``torch.nn.functional`` activations, softmax family and dropout.

Each body has the parameter list TorchScript passes for the torch 2.13 Python function
(see ``compiler.known.functions``).  An ``inplace`` flag chooses between the operator and
its in-place variant (``aten::relu_`` mutates and returns its input, as torch's does).
Dropout calls ``aten::dropout`` and its kin, which are the identity when ``training`` is
False and draw a mask from the runtime's generator when it is True (``vm.ops.random``).
``softmax(dim=None)`` picks the dimension as torch's legacy rule does (0 for 0-, 1- and
3-d inputs, else 1).  The bodies of the other activations (rrelu, hardtanh, glu,
softsign, tanhshrink, sigmoid, tanh) are fixed text, in
``compiler/known/bodies/functions/activation.ir``.
"""

from __future__ import annotations

from compiler.known.text import choose, const, graph, raise_if

_FLOAT_PARAMS = {"alpha": "float", "negative_slope": "float", "min_val": "float", "max_val": "float",
                 "threshold": "float", "value": "float"}


def _inplace(op: str, params: list[str], inplace_op: str | None = None) -> str:
    """``op(input, *params)``, or ``inplace_op`` (default ``op_``) when ``inplace``."""
    decl = ", ".join(["%input : Tensor", *(f"%{p} : {_FLOAT_PARAMS[p]}" for p in params), "%inplace : bool"])
    args = ", ".join(["%input", *(f"%{p}" for p in params)])
    body = choose(
        "out",
        "Tensor",
        "%inplace",
        (f"  %out_a : Tensor = {inplace_op or op + '_'}({args})\n", "%out_a"),
        (f"  %out_b : Tensor = {op}({args})\n", "%out_b"),
    )
    return graph(decl, body)


def _softmax(op: str, negate: bool = False) -> str:
    """softmax / log_softmax / softmin: ``dim`` None takes torch's legacy default."""
    pre = "  %neg : Tensor = aten::neg(%input)\n" if negate else ""
    src = "%neg" if negate else "%input"
    legacy = (
        "  %ndim : int = aten::dim(%input)\n"
        + const("zero", "int", 0)
        + const("one", "int", 1)
        + const("three", "int", 3)
        + "  %is0 : bool = aten::eq(%ndim, %zero)\n"
        + "  %is1 : bool = aten::eq(%ndim, %one)\n"
        + "  %is3 : bool = aten::eq(%ndim, %three)\n"
        + "  %is01 : bool = aten::__or__(%is0, %is1)\n"
        + "  %first : bool = aten::__or__(%is01, %is3)\n"
        + choose("d_legacy", "int", "%first", ("", "%zero"), ("", "%one"))
    )
    body = (
        pre
        + const("none", "NoneType")
        + "  %no_dim : bool = aten::__is__(%dim, %none)\n"
        + choose("d", "int", "%no_dim", (legacy, "%d_legacy"),
                 ("  %d_given : int = prim::unchecked_cast(%dim)\n", "%d_given"))
        + f"  %out : Tensor = {op}({src}, %d, %dtype)\n"
    )
    return graph("%input : Tensor, %dim : int?, %_stacklevel : int, %dtype : int?", body)


def _p_check() -> str:
    return (
        const("p0", "float", 0.0)
        + const("p1", "float", 1.0)
        + "  %p_low : bool = aten::lt(%p, %p0)\n"
        + "  %p_high : bool = aten::gt(%p, %p1)\n"
        + "  %p_bad : bool = aten::__or__(%p_low, %p_high)\n"
        + "  %p_text : str = aten::str(%p)\n"
        + const("p_msg", "str", "dropout probability has to be between 0 and 1, but got ")
        + "  %p_full : str = aten::add(%p_msg, %p_text)\n"
        + const("p_cls", "str", "builtins.ValueError")
        + "   = prim::If(%p_bad)\n"
        + "    block0():\n"
        + "       = prim::RaiseException(%p_full, %p_cls)\n"
        + "      -> ()\n"
        + "    block1():\n"
        + "      -> ()\n"
    )


def _dropout(name: str, op: str, dims: tuple[int, ...] = (), unbatched: int | None = None) -> str:
    """Check ``p`` (and the rank, for ``dropout1d``), then ``aten::<op>`` or, with
    ``inplace``, ``aten::<op>_``: the identity when not training, a random mask drawn from
    the runtime's generator when training.  An input of rank ``unbatched`` gets a batch
    dimension for the call, as ``dropout1d``/``dropout3d`` add one."""
    check = _p_check()
    if dims:
        check += "  %ndim : int = aten::dim(%input)\n"
        conds = []
        for d in dims:
            check += const(f"d{d}", "int", d) + f"  %is{d} : bool = aten::eq(%ndim, %d{d})\n"
            conds.append(f"%is{d}")
        check += f"  %dims_ok : bool = aten::__or__({conds[0]}, {conds[1]})\n"
        check += "  %dims_bad : bool = aten::__not__(%dims_ok)\n"
        check += raise_if("%dims_bad", f"{name}: Expected 2D or 3D input", "dims", "builtins.RuntimeError")
    call = choose(
        "dropped", "Tensor", "%inplace",
        (f"  %dropped_a : Tensor = aten::{op}_(%batched, %p, %training)\n", "%dropped_a"),
        (f"  %dropped_b : Tensor = aten::{op}(%batched, %p, %training)\n", "%dropped_b"),
    )
    if unbatched is None:
        return graph(
            "%input : Tensor, %p : float, %training : bool, %inplace : bool",
            check + call.replace("%batched", "%input").replace("%dropped", "%out"),
        )
    check += (
        const("zero", "int", 0)
        + const("rank_unbatched", "int", unbatched)
        + "  %rank : int = aten::dim(%input)\n"
        + "  %is_unbatched : bool = aten::eq(%rank, %rank_unbatched)\n"
        + choose("batched", "Tensor", "%is_unbatched",
                 ("  %with_batch : Tensor = aten::unsqueeze(%input, %zero)\n", "%with_batch"), ("", "%input"))
        + call
        + choose("out", "Tensor", "%is_unbatched",
                 ("  %without_batch : Tensor = aten::squeeze(%dropped, %zero)\n", "%without_batch"),
                 ("", "%dropped"))
    )
    return graph("%input : Tensor, %p : float, %training : bool, %inplace : bool", check)


BODIES: dict[str, list[str]] = {
    "relu": [_inplace("aten::relu", [])],
    "relu6": [_inplace("aten::relu6", [])],
    "leaky_relu": [_inplace("aten::leaky_relu", ["negative_slope"])],
    "elu": [_inplace("aten::elu", ["alpha"])],
    "selu": [_inplace("aten::selu", [])],
    "celu": [_inplace("aten::celu", ["alpha"])],
    "silu": [_inplace("aten::silu", [])],
    "mish": [_inplace("aten::mish", [])],
    "hardswish": [_inplace("aten::hardswish", [])],
    "hardsigmoid": [_inplace("aten::hardsigmoid", [])],
    "_threshold": [_inplace("aten::threshold", ["threshold", "value"])],
    "softmax": [_softmax("aten::softmax")],
    "log_softmax": [_softmax("aten::log_softmax")],
    "softmin": [_softmax("aten::softmax", negate=True)],
    "dropout": [_dropout("dropout", "dropout")],
    "dropout1d": [_dropout("dropout1d", "feature_dropout", (2, 3), unbatched=2)],
    "dropout2d": [_dropout("dropout2d", "feature_dropout")],
    "dropout3d": [_dropout("dropout3d", "feature_dropout", unbatched=4)],
    "alpha_dropout": [_dropout("alpha_dropout", "alpha_dropout")],
    "feature_alpha_dropout": [_dropout("feature_alpha_dropout", "feature_alpha_dropout")],
}
