"""Known bodies of ``torch.nn.functional`` normalizations, padding, embedding and adaptive
average pooling, and of ``torch.functional.norm`` / ``cdist``.

Each body has the parameter list TorchScript passes for the torch 2.13 Python function
(see ``compiler.known.functions``) and lowers to one ``aten`` operator where one exists,
after the argument checks and argument rewriting the Python function does (``group_norm``
on a 1-d input, ``embedding``'s ``padding_idx`` range, ``embedding_bag``'s 2-d input as
equal bags and its mode string).  Where ``vm.ops`` lacks the operator the body is
composed: ``rms_norm`` from ``pow``/``mean``/``rsqrt``, ``local_response_norm`` from an
``avg_pool2d`` over the channel axis (also for 4-d and larger inputs, whose spatial axes
are flattened into one), ``cdist`` as the vector norm of
the broadcast difference.

``torch.norm`` is overloaded: ``p`` is a string (``"fro"``, ``"nuc"``) or a number, and
``dim`` an int or a list; four bodies, as TorchScript's four overloads.  Numbers go to
``aten::linalg_vector_norm`` (the same values as ``aten::norm`` for real tensors; a None
``p`` is 2); ``"fro"`` over at most two dims (or all of them) is the vector 2-norm, as
torch 2.13 computes it for strided tensors; other strings would be matrix norms, and the
nuclear norm needs singular values, which ``vm.ops`` lacks: it raises.

This module holds the templates of the family; the bodies whose text is fixed
(layer_norm, group_norm, batch_norm, instance_norm, rms_norm, normalize,
local_response_norm, embedding, embedding_bag and cdist) are IR in
``compiler/known/bodies/functions/nn.ir``.
"""

from __future__ import annotations

from compiler.known.text import choose, const, graph, raise_if


def _op(params: str, call: str) -> str:
    return graph(params, f"  %out : Tensor = {call}\n")


def _norm(p_type: str, dim_type: str) -> str:
    """torch.norm; ``p_type`` "str" or "Scalar?", ``dim_type`` "int[]?" or "int?"."""
    dims = const("none", "NoneType")
    if dim_type == "int?":  # an int dim is a one-element list
        dims += "  %dim_given : bool = aten::__isnot__(%dim, %none)\n" + choose(
            "dims", "int[]?", "%dim_given",
            ("  %dim_int : int = prim::unchecked_cast(%dim)\n  %dim_list : int[] = prim::ListConstruct(%dim_int)\n",
             "%dim_list"),
            ("", "%none"))
    dims_ref = "%dims" if dim_type == "int?" else "%dim"
    body = (
        dims
        + "  %has_out : bool = aten::__isnot__(%out, %none)\n"
        + raise_if("%has_out", "irvm: torch.norm with out= is not supported", "out", "builtins.RuntimeError")
    )
    if p_type == "str":
        # torch 2.13 on strided tensors: "fro" over at most two dims is the vector 2-norm
        # (dtype allowed); any other string goes to linalg.matrix_norm
        body += (
            const("fro", "str", "fro")
            + const("nuc", "str", "nuc")
            + const("two", "int", 2)
            + "  %is_fro : bool = aten::eq(%p, %fro)\n"
            + "  %is_nuc : bool = aten::eq(%p, %nuc)\n"
            + raise_if("%is_nuc", "irvm: torch.norm(p='nuc') needs singular values, which irvm does not compute",
                       "nucl", "builtins.RuntimeError")
            + "  %dims_given : bool = aten::__isnot__(" + dims_ref + ", %none)\n"
            + choose("dims_long", "bool", "%dims_given",
                     ("  %dims_l : int[] = prim::unchecked_cast(" + dims_ref + ")\n"
                      "  %dims_n : int = aten::len(%dims_l)\n"
                      "  %dims_gt2 : bool = aten::gt(%dims_n, %two)\n", "%dims_gt2"),
                     ("", "%dims_given"))
            + "  %fro_long : bool = aten::__and__(%is_fro, %dims_long)\n"
            + raise_if("%fro_long", "linalg.matrix_norm: dim must be a 2-tuple", "fro2", "builtins.RuntimeError")
            + "  %not_fro : bool = aten::__not__(%is_fro)\n"
            + raise_if("%not_fro", "linalg.matrix_norm: Order not supported (only valid string values are "
                       "'fro' and 'nuc')", "pstr", "builtins.RuntimeError")
            + f"  %res : Tensor = aten::linalg_vector_norm(%input, %two, {dims_ref}, %keepdim, %dtype)\n"
        )
    else:
        body += (
            const("two", "float", 2.0)
            + "  %p_none : bool = aten::__is__(%p, %none)\n"
            + choose("ord", "Scalar", "%p_none", ("", "%two"),
                     ("  %p_given : Scalar = prim::unchecked_cast(%p)\n", "%p_given"))
            + f"  %res : Tensor = aten::linalg_vector_norm(%input, %ord, {dims_ref}, %keepdim, %dtype)\n"
        )
    return graph(f"%input : Tensor, %p : {p_type}, %dim : {dim_type}, %keepdim : bool, %out : Tensor?, "
                 "%dtype : int?", body, "%res")


BODIES: dict[str, list[str]] = {
    "pad": [_op("%input : Tensor, %pad : int[], %mode : str, %value : float?",
                "aten::pad(%input, %pad, %mode, %value)")],
    "adaptive_avg_pool2d": [_op("%input : Tensor, %output_size : int[]",
                                "aten::adaptive_avg_pool2d(%input, %output_size)")],
    "adaptive_avg_pool3d": [_op("%input : Tensor, %output_size : int[]",
                                "aten::adaptive_avg_pool3d(%input, %output_size)")],
    "norm": [_norm("str", "int[]?"), _norm("Scalar?", "int[]?"), _norm("Scalar?", "int?"), _norm("str", "int?")],
}
