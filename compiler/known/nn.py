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
"""

from __future__ import annotations

from compiler.known.text import choose, const, graph, raise_if

_NOT_NONE = "  %{n}_none_c : NoneType = prim::Constant()\n  %{n}_given_b : bool = aten::__isnot__(%{n}, %{n}_none_c)\n"


def _given(name: str) -> str:
    """Lines defining ``%<name>_given_b``: the Optional ``%name`` is not None."""
    return _NOT_NONE.format(n=name)


def _layer_norm() -> str:
    return graph(
        "%input : Tensor, %normalized_shape : int[], %weight : Tensor?, %bias : Tensor?, %eps : float",
        const("cudnn", "bool", False)
        + "  %out : Tensor = aten::layer_norm(%input, %normalized_shape, %weight, %bias, %eps, %cudnn)\n",
    )


def _group_norm() -> str:
    body = (
        "  %ndim : int = aten::dim(%input)\n"
        + const("two", "int", 2)
        + "  %small : bool = aten::lt(%ndim, %two)\n"
        + raise_if("%small", "Expected at least 2 dimensions for input tensor", "dims", "builtins.RuntimeError")
        + "  %numel : int = aten::numel(%input)\n"
        + "  %per : int = aten::floordiv(%numel, %num_groups)\n"
        + const("one", "int", 1)
        + "  %single : bool = aten::eq(%per, %one)\n"
        + raise_if("%single", "Expected more than 1 value per channel when training", "batch")
        + const("cudnn", "bool", False)
        + "  %out : Tensor = aten::group_norm(%input, %num_groups, %weight, %bias, %eps, %cudnn)\n"
    )
    return graph("%input : Tensor, %num_groups : int, %weight : Tensor?, %bias : Tensor?, %eps : float", body)


def _verify_size(flag: str, first: int, message: str) -> str:
    """Raise ``message`` when ``flag`` holds and the product of the input's sizes, leaving
    out dimension 1 (batch norm) or the first two (instance norm), is 1.  The sizes are
    read only under ``flag``, so a constant False (inference) folds the check away."""
    sizes = (
        "  %sizes : int[] = aten::size(%input)\n"
        + const("one", "int", 1)
        + const("zero_i", "int", 0)
        + "  %numel : int = aten::numel(%input)\n"
        + "  %channels : int = aten::__getitem__(%sizes, %one)\n"
        + "  %batch : int = aten::__getitem__(%sizes, %zero_i)\n"
        + "  %lead : int = aten::mul(%channels, %batch)\n"
        + ("  %rest : int = aten::floordiv(%numel, %channels)\n" if first == 0
           else "  %rest : int = aten::floordiv(%numel, %lead)\n")
        + "  %is_one : bool = aten::eq(%rest, %one)\n"
    )
    return choose("check", "bool", flag, (sizes, "%is_one"), ("", flag)) + raise_if("%check", message, "verify")


def _batch_norm() -> str:
    body = (
        _verify_size("%training", 0, "Expected more than 1 value per channel when training")
        + const("cudnn", "bool", False)
        + "  %out : Tensor = aten::batch_norm(%input, %weight, %bias, %running_mean, %running_var, %training,"
        " %momentum, %eps, %cudnn)\n"
    )
    return graph(
        "%input : Tensor, %running_mean : Tensor?, %running_var : Tensor?, %weight : Tensor?, %bias : Tensor?, "
        "%training : bool, %momentum : float, %eps : float",
        body,
    )


def _instance_norm() -> str:
    body = (
        _verify_size("%use_input_stats", 1, "Expected more than 1 spatial element when training")
        + const("cudnn", "bool", False)
        + "  %out : Tensor = aten::instance_norm(%input, %weight, %bias, %running_mean, %running_var,"
        " %use_input_stats, %momentum, %eps, %cudnn)\n"
    )
    return graph(
        "%input : Tensor, %running_mean : Tensor?, %running_var : Tensor?, %weight : Tensor?, %bias : Tensor?, "
        "%use_input_stats : bool, %momentum : float, %eps : float",
        body,
    )


def _rms_norm() -> str:
    """x * rsqrt(mean(x^2 over the last len(normalized_shape) dims) + eps) * weight; a None
    eps is the machine epsilon of the input's dtype."""
    eps_of_dtype = (
        "  %dtype : int = prim::dtype(%input)\n"
        + const("f64", "int", 7)
        + const("f16", "int", 5)
        + const("bf16", "int", 15)
        + "  %is64 : bool = aten::eq(%dtype, %f64)\n"
        + "  %is16 : bool = aten::eq(%dtype, %f16)\n"
        + "  %isbf : bool = aten::eq(%dtype, %bf16)\n"
        + choose("eps_bf", "float", "%isbf", ("", "%e_bf"), ("", "%e_32"))
        + choose("eps_16", "float", "%is16", ("", "%e_16"), ("", "%eps_bf"))
        + choose("eps_auto", "float", "%is64", ("", "%e_64"), ("", "%eps_16"))
    )
    body = (
        const("e_64", "float", 2.220446049250313e-16)
        + const("e_32", "float", 1.1920928955078125e-07)
        + const("e_16", "float", 0.0009765625)
        + const("e_bf", "float", 0.0078125)
        + const("none", "NoneType")
        + "  %no_eps : bool = aten::__is__(%eps, %none)\n"
        + choose("e", "float", "%no_eps", (eps_of_dtype, "%eps_auto"),
                 ("  %e_given : float = prim::unchecked_cast(%eps)\n", "%e_given"))
        + "  %k : int = aten::len(%normalized_shape)\n"
        + "  %dims0 : int[] = prim::ListConstruct()\n"
        + const("true", "bool", True)
        + const("minus1", "int", -1)
        + "  %dims : int[] = prim::Loop(%k, %true, %dims0)\n"
        + "    block0(%i : int, %acc : int[]):\n"
        + "      %neg_i : int = aten::neg(%i)\n"
        + "      %d : int = aten::add(%neg_i, %minus1)\n"
        + "      %d_list : int[] = prim::ListConstruct(%d)\n"
        + "      %acc2 : int[] = aten::add(%acc, %d_list)\n"
        + "      -> (%true, %acc2)\n"
        + const("two", "int", 2)
        + "  %sq : Tensor = aten::pow(%input, %two)\n"
        + "  %ms : Tensor = aten::mean(%sq, %dims, %true, %none)\n"
        + const("one", "int", 1)
        + "  %shifted : Tensor = aten::add(%ms, %e, %one)\n"
        + "  %inv : Tensor = aten::rsqrt(%shifted)\n"
        + "  %normed : Tensor = aten::mul(%input, %inv)\n"
        + "  %has_w : bool = aten::__isnot__(%weight, %none)\n"
        + choose("out", "Tensor", "%has_w",
                 ("  %w : Tensor = prim::unchecked_cast(%weight)\n  %scaled : Tensor = aten::mul(%normed, %w)\n",
                  "%scaled"),
                 ("", "%normed"))
    )
    return graph("%input : Tensor, %normalized_shape : int[], %weight : Tensor?, %eps : float?", body)


def _normalize() -> str:
    """input / max(norm_p(input, dim, keepdim), eps); with ``out`` the quotient is written
    into it."""
    body = (
        const("true", "bool", True)
        + "  %dims : int[] = prim::ListConstruct(%dim)\n"
        + "  %norms : Tensor = aten::linalg_vector_norm(%input, %p, %dims, %true, %none)\n"
        + "  %denom : Tensor = aten::clamp_min(%norms, %eps)\n"
        + "  %has_out : bool = aten::__isnot__(%out, %none)\n"
        + choose("res", "Tensor", "%has_out",
                 (("  %buffer : Tensor = prim::unchecked_cast(%out)\n"
                  "  %written : Tensor = aten::div(%input, %denom, %buffer)\n"), "%written"),
                 ("  %quotient : Tensor = aten::div(%input, %denom)\n", "%quotient"))
    )
    return graph("%input : Tensor, %p : float, %dim : int, %eps : float, %out : Tensor?",
                 const("none", "NoneType") + body, "%res")


def _local_response_norm() -> str:
    """input / (k + alpha * mean of input^2 over a window of ``size`` channels)^beta.  The
    window mean is an avg_pool2d with kernel (size, 1) over (N, 1, C, rest) after zero
    padding the channel axis by size//2 before and (size-1)//2 after."""
    body = (
        "  %ndim : int = aten::dim(%input)\n"
        + const("three", "int", 3)
        + "  %low : bool = aten::lt(%ndim, %three)\n"
        + raise_if("%low", "Expected 3D or higher dimensionality input", "dims")
        + "  %sizes : int[] = aten::size(%input)\n"
        + const("zero", "int", 0)
        + const("one", "int", 1)
        + const("two", "int", 2)
        + const("minus1", "int", -1)
        + "  %n : int = aten::__getitem__(%sizes, %zero)\n"
        + "  %c : int = aten::__getitem__(%sizes, %one)\n"
        + "  %sq : Tensor = aten::mul(%input, %input)\n"
        + "  %shape4 : int[] = prim::ListConstruct(%n, %one, %c, %minus1)\n"
        + "  %sq4 : Tensor = aten::reshape(%sq, %shape4)\n"
        + "  %before : int = aten::floordiv(%size, %two)\n"
        + "  %size_1 : int = aten::sub(%size, %one)\n"
        + "  %after : int = aten::floordiv(%size_1, %two)\n"
        + "  %widths : int[] = prim::ListConstruct(%zero, %zero, %before, %after)\n"
        + const("fill", "float", 0.0)
        + "  %padded : Tensor = aten::constant_pad_nd(%sq4, %widths, %fill)\n"
        + "  %kernel : int[] = prim::ListConstruct(%size, %one)\n"
        + "  %stride : int[] = prim::ListConstruct(%one, %one)\n"
        + "  %nopad : int[] = prim::ListConstruct(%zero, %zero)\n"
        + const("false", "bool", False)
        + const("true", "bool", True)
        + const("none", "NoneType")
        + "  %avg : Tensor = aten::avg_pool2d(%padded, %kernel, %stride, %nopad, %false, %true, %none)\n"
        + "  %div0 : Tensor = aten::reshape(%avg, %sizes)\n"
        + "  %div1 : Tensor = aten::mul(%div0, %alpha)\n"
        + "  %div2 : Tensor = aten::add(%div1, %k, %one)\n"
        + "  %div3 : Tensor = aten::pow(%div2, %beta)\n"
        + "  %out : Tensor = aten::div(%input, %div3)\n"
    )
    return graph("%input : Tensor, %size : int, %alpha : float, %beta : float, %k : float", body)


def _embedding() -> str:
    """torch.embedding after the padding_idx range check; max_norm (which renormalizes the
    weight in place) is refused; padding_idx, scale_grad_by_freq and sparse change only
    gradients."""
    body = (
        const("none", "NoneType")
        + const("zero", "int", 0)
        + "  %rows : int = aten::size(%weight, %zero)\n"
        + "  %has_pad : bool = aten::__isnot__(%padding_idx, %none)\n"
        + choose("pad_bad", "bool", "%has_pad",
                 (("  %pi : int = prim::unchecked_cast(%padding_idx)\n"
                  "  %too_big : bool = aten::ge(%pi, %rows)\n"
                  "  %neg_rows : int = aten::neg(%rows)\n"
                  "  %too_small : bool = aten::lt(%pi, %neg_rows)\n"
                  "  %either : bool = aten::__or__(%too_big, %too_small)\n"), "%either"),
                 ("", "%has_pad"))
        + raise_if("%pad_bad", "Padding_idx must be within num_embeddings", "pad", "builtins.AssertionError")
        + "  %has_max : bool = aten::__isnot__(%max_norm, %none)\n"
        + raise_if("%has_max", "irvm: F.embedding with max_norm renormalizes the weight in place, "
                   "which irvm does not do; call it with max_norm=None", "max", "builtins.RuntimeError")
        + const("minus1", "int", -1)
        + const("false", "bool", False)
        + "  %out : Tensor = aten::embedding(%weight, %input, %minus1, %false, %false)\n"
    )
    return graph("%input : Tensor, %weight : Tensor, %padding_idx : int?, %max_norm : float?, %norm_type : float, "
                 "%scale_grad_by_freq : bool, %sparse : bool", body)



def _embedding_bag() -> str:
    """torch.embedding_bag after the Python function's argument handling: the legacy
    (weight, input) order is swapped back, a 2-d input is a batch of equal bags (offsets
    every row), the mode string becomes torch's enum, and max_norm is refused as in
    ``embedding``."""
    swap = (
        "  %w_dtype : int = prim::dtype(%weight)\n"
        + const("long", "int", 4)
        + "  %w_long : bool = aten::eq(%w_dtype, %long)\n"
        + "  %i_float : bool = aten::is_floating_point(%input)\n"
        + "  %swapped : bool = aten::__and__(%w_long, %i_float)\n"
        + choose("w", "Tensor", "%swapped", ("", "%input"), ("", "%weight"))
        + choose("x", "Tensor", "%swapped", ("", "%weight"), ("", "%input"))
    )
    checks = (
        "  %has_psw : bool = aten::__isnot__(%per_sample_weights, %none)\n"
        + choose("psw_bad", "bool", "%has_psw",
                 (("  %psw0 : Tensor = prim::unchecked_cast(%per_sample_weights)\n"
                  "  %psw_size : int[] = aten::size(%psw0)\n"
                  "  %x_size : int[] = aten::size(%x)\n"
                  "  %psw_ne : bool = aten::ne(%x_size, %psw_size)\n"), "%psw_ne"),
                 ("", "%has_psw"))
        + raise_if("%psw_bad", "embedding_bag: If per_sample_weights is not None, then it must have the same "
                   "shape as the input", "psw")
        + "  %w_dim : int = aten::dim(%w)\n"
        + const("two", "int", 2)
        + const("one", "int", 1)
        + const("zero", "int", 0)
        + const("minus1", "int", -1)
        + "  %w_not2 : bool = aten::ne(%w_dim, %two)\n"
        + raise_if("%w_not2", "weight has to be a 2D Tensor", "wdim")
        + "  %x_dim : int = aten::dim(%x)\n"
        + "  %is2 : bool = aten::eq(%x_dim, %two)\n"
        + "  %is1 : bool = aten::eq(%x_dim, %one)\n"
        + "  %rank_ok : bool = aten::__or__(%is1, %is2)\n"
        + "  %rank_bad : bool = aten::__not__(%rank_ok)\n"
        + raise_if("%rank_bad", "input has to be 1D or 2D Tensor", "rank")
        + "  %has_off : bool = aten::__isnot__(%offsets, %none)\n"
        + "  %off_2d : bool = aten::__and__(%is2, %has_off)\n"
        + raise_if("%off_2d", "if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
                   "of fixed length sequences.", "off2")
        + "  %no_off : bool = aten::__not__(%has_off)\n"
        + "  %off_1d : bool = aten::__and__(%is1, %no_off)\n"
        + raise_if("%off_1d", "offsets has to be a 1D Tensor but got None", "off1")
    )
    batch = (
        "  %numel : int = aten::numel(%x)\n"
        "  %row : int = aten::size(%x, %one)\n"
        "  %x_dt : int = prim::dtype(%x)\n"
        "  %starts : Tensor = aten::arange(%zero, %numel, %row, %x_dt, %none, %none, %none)\n"
    )
    flat = "  %x_flat : Tensor = aten::reshape(%x, %flat_shape)\n"
    given = (
        "  %off_given : Tensor = prim::unchecked_cast(%offsets)\n"
        "  %off_dim : int = aten::dim(%off_given)\n"
        "  %off_not1 : bool = aten::ne(%off_dim, %one)\n"
        + raise_if("%off_not1", "offsets has to be a 1D Tensor", "offd")
    )
    shapes = (
        "  %flat_shape : int[] = prim::ListConstruct(%minus1)\n"
        + choose("offs", "Tensor", "%is2", (batch, "%starts"), (given, "%off_given"))
        + choose("indices", "Tensor", "%is2", (flat, "%x_flat"), ("", "%x"))
        + choose("last", "bool", "%is2", ("", "%false"), ("", "%include_last_offset"))
        + choose("psw", "Tensor?", "%has_psw",
                 (("  %psw1 : Tensor = prim::unchecked_cast(%per_sample_weights)\n"
                  "  %psw_flat : Tensor = aten::reshape(%psw1, %flat_shape)\n"), "%psw_flat"),
                 ("", "%none"))
    )
    modes = (
        const("m_sum", "str", "sum")
        + const("m_mean", "str", "mean")
        + const("m_max", "str", "max")
        + "  %is_sum : bool = aten::eq(%mode, %m_sum)\n"
        + "  %is_mean : bool = aten::eq(%mode, %m_mean)\n"
        + "  %is_max : bool = aten::eq(%mode, %m_max)\n"
        + "  %m_ok0 : bool = aten::__or__(%is_sum, %is_mean)\n"
        + "  %m_ok : bool = aten::__or__(%m_ok0, %is_max)\n"
        + "  %m_bad : bool = aten::__not__(%m_ok)\n"
        + raise_if("%m_bad", "mode has to be one of sum, mean or max", "mode")
        + "  %max_freq : bool = aten::__and__(%is_max, %scale_grad_by_freq)\n"
        + raise_if("%max_freq", "max mode does not support scaling the gradient by the frequency", "mfreq")
        + "  %max_sparse : bool = aten::__and__(%is_max, %sparse)\n"
        + raise_if("%max_sparse", "max mode does not support sparse weights", "msparse")
        + choose("mode_ms", "int", "%is_mean", ("", "%one"), ("", "%two"))
        + choose("mode_enum", "int", "%is_sum", ("", "%zero"), ("", "%mode_ms"))
        + "  %has_max : bool = aten::__isnot__(%max_norm, %none)\n"
        + raise_if("%has_max", "irvm: F.embedding_bag with max_norm renormalizes the weight in place, which irvm "
                   "does not do; call it with max_norm=None", "maxn", "builtins.RuntimeError")
        + "  %not_sum : bool = aten::__not__(%is_sum)\n"
        + "  %psw_mode : bool = aten::__and__(%has_psw, %not_sum)\n"
        + raise_if("%psw_mode", "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                   "supported for mode='sum'", "pswm", "builtins.NotImplementedError")
    )
    body = (
        const("none", "NoneType")
        + const("false", "bool", False)
        + swap
        + checks
        + shapes
        + modes
        + "  %out : Tensor, %o2 : Tensor, %o3 : Tensor, %o4 : Tensor = aten::embedding_bag(%w, %indices, %offs, "
        "%scale_grad_by_freq, %mode_enum, %sparse, %psw, %last, %padding_idx)\n"
    )
    return graph("%input : Tensor, %weight : Tensor, %offsets : Tensor?, %max_norm : float?, %norm_type : float, "
                 "%scale_grad_by_freq : bool, %mode : str, %sparse : bool, %per_sample_weights : Tensor?, "
                 "%include_last_offset : bool, %padding_idx : int?", body)

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


def _cdist() -> str:
    """The p-norm of x1[..., :, None, :] - x2[..., None, :, :] over the last dim (every
    compute_mode gives these values; the modes differ only in rounding)."""
    modes = ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"]
    body = ""
    conds = []
    for i, mode in enumerate(modes):
        body += const(f"mode{i}", "str", mode) + f"  %is{i} : bool = aten::eq(%compute_mode, %mode{i})\n"
        conds.append(f"%is{i}")
    body += (
        "  %ok01 : bool = aten::__or__(%is0, %is1)\n"
        "  %ok : bool = aten::__or__(%ok01, %is2)\n"
        "  %bad_mode : bool = aten::__not__(%ok)\n"
        + raise_if("%bad_mode", "compute_mode is not a valid value for compute_mode", "mode")
        + const("zero", "float", 0.0)
        + "  %neg_p : bool = aten::lt(%p, %zero)\n"
        + raise_if("%neg_p", "cdist only supports non-negative p values", "p", "builtins.RuntimeError")
        + const("m2", "int", -2)
        + const("m3", "int", -3)
        + const("m1", "int", -1)
        + const("one", "int", 1)
        + const("false", "bool", False)
        + const("none", "NoneType")
        + "  %a : Tensor = aten::unsqueeze(%x1, %m2)\n"
        + "  %b : Tensor = aten::unsqueeze(%x2, %m3)\n"
        + "  %diff : Tensor = aten::sub(%a, %b, %one)\n"
        + "  %last : int[] = prim::ListConstruct(%m1)\n"
        + "  %out : Tensor = aten::linalg_vector_norm(%diff, %p, %last, %false, %none)\n"
    )
    del conds
    return graph("%x1 : Tensor, %x2 : Tensor, %p : float, %compute_mode : str", body)


BODIES: dict[str, list[str]] = {
    "layer_norm": [_layer_norm()],
    "group_norm": [_group_norm()],
    "batch_norm": [_batch_norm()],
    "instance_norm": [_instance_norm()],
    "rms_norm": [_rms_norm()],
    "normalize": [_normalize()],
    "local_response_norm": [_local_response_norm()],
    "pad": [_op("%input : Tensor, %pad : int[], %mode : str, %value : float?",
                "aten::pad(%input, %pad, %mode, %value)")],
    "embedding": [_embedding()],
    "embedding_bag": [_embedding_bag()],
    "adaptive_avg_pool2d": [_op("%input : Tensor, %output_size : int[]",
                                "aten::adaptive_avg_pool2d(%input, %output_size)")],
    "adaptive_avg_pool3d": [_op("%input : Tensor, %output_size : int[]",
                                "aten::adaptive_avg_pool3d(%input, %output_size)")],
    "norm": [_norm("str", "int[]?"), _norm("Scalar?", "int[]?"), _norm("Scalar?", "int?"), _norm("str", "int?")],
    "cdist": [_cdist()],
}
