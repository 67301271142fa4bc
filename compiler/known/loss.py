"""Known bodies of the ``torch.nn.functional`` losses.

Every loss takes its reduction as a string (``"none"``, ``"mean"``, ``"sum"``), and most
also the deprecated ``size_average`` / ``reduce`` flags, which override the string when
either is given (both default to True: ``mean``; ``reduce=False``: ``none``;
``size_average=False``: ``sum``).  The bodies work that out as torch 2.13's Python does,
then map the string to the enum the ``aten`` loss operators take (0 none, 1 mean, 2 sum;
``elementwise_mean`` is an old spelling of mean), raising torch's error for any other
string.  The weighted ``mse_loss`` / ``l1_loss`` / ``huber_loss`` paths reduce by hand,
as torch does (a weighted mean divides by the sum of the weights for the first two).

Two operators ``vm.ops`` lacks are composed: ``binary_cross_entropy_with_logits`` is
``(1 - t) * x - w_pos * log_sigmoid(x)`` with ``w_pos = 1 + (pos_weight - 1) * t``, and
``kl_div`` is ``xlogy(t, t) - t * x`` (``exp(t) * (t - x)`` for a log target), with the
``batchmean`` reduction dividing the sum by the batch size.
"""

from __future__ import annotations

from compiler.known.text import choose, const, graph, raise_if

LEGACY = "%size_average : bool?, %reduce : bool?"


def reduction_string() -> str:
    """``%red``: the reduction string after the legacy flags."""
    legacy = (
        const("t", "bool", True)
        + choose("sa", "bool", "%sa_none", ("", "%t"),
                 ("  %sa_given : bool = prim::unchecked_cast(%size_average)\n", "%sa_given"))
        + choose("rd", "bool", "%rd_none", ("", "%t"),
                 ("  %rd_given : bool = prim::unchecked_cast(%reduce)\n", "%rd_given"))
        + "  %both : bool = aten::__and__(%sa, %rd)\n"
        + choose("red_sum", "str", "%rd", ("", "%s_sum"), ("", "%s_none"))
        + choose("red_legacy", "str", "%both", ("", "%s_mean"), ("", "%red_sum"))
    )
    return (
        const("rnone", "NoneType")
        + const("s_none", "str", "none")
        + const("s_mean", "str", "mean")
        + const("s_sum", "str", "sum")
        + "  %sa_none : bool = aten::__is__(%size_average, %rnone)\n"
        + "  %rd_none : bool = aten::__is__(%reduce, %rnone)\n"
        + "  %plain : bool = aten::__and__(%sa_none, %rd_none)\n"
        + choose("red", "str", "%plain", ("", "%reduction"), (legacy, "%red_legacy"))
    )


def reduction_enum(red: str = "%red", tag: str = "e") -> str:
    """``%<tag>``: the reduction enum of the string ``red``; other strings raise."""
    return (
        const(f"{tag}_none_s", "str", "none")
        + const(f"{tag}_mean_s", "str", "mean")
        + const(f"{tag}_old_s", "str", "elementwise_mean")
        + const(f"{tag}_sum_s", "str", "sum")
        + f"  %{tag}_is_none : bool = aten::eq({red}, %{tag}_none_s)\n"
        + f"  %{tag}_is_mean0 : bool = aten::eq({red}, %{tag}_mean_s)\n"
        + f"  %{tag}_is_old : bool = aten::eq({red}, %{tag}_old_s)\n"
        + f"  %{tag}_is_sum : bool = aten::eq({red}, %{tag}_sum_s)\n"
        + f"  %{tag}_is_mean : bool = aten::__or__(%{tag}_is_mean0, %{tag}_is_old)\n"
        + f"  %{tag}_ok0 : bool = aten::__or__(%{tag}_is_none, %{tag}_is_mean)\n"
        + f"  %{tag}_ok : bool = aten::__or__(%{tag}_ok0, %{tag}_is_sum)\n"
        + f"  %{tag}_bad : bool = aten::__not__(%{tag}_ok)\n"
        + const(f"{tag}_suffix", "str", " is not a valid value for reduction")
        + f"  %{tag}_msg : str = aten::add({red}, %{tag}_suffix)\n"
        + const(f"{tag}_cls", "str", "builtins.ValueError")
        + f"   = prim::If(%{tag}_bad)\n"
        + "    block0():\n"
        + f"       = prim::RaiseException(%{tag}_msg, %{tag}_cls)\n"
        + "      -> ()\n"
        + "    block1():\n"
        + "      -> ()\n"
        + const(f"{tag}_0", "int", 0)
        + const(f"{tag}_1", "int", 1)
        + const(f"{tag}_2", "int", 2)
        + choose(f"{tag}_ms", "int", f"%{tag}_is_mean", ("", f"%{tag}_1"), ("", f"%{tag}_2"))
        + choose(tag, "int", f"%{tag}_is_none", ("", f"%{tag}_0"), ("", f"%{tag}_ms"))
    )


def reduce_by_enum(loss: str, enum: str, out: str) -> str:
    """``%out``: ``loss`` as is (enum 0), its mean (1) or its sum (2)."""
    return (
        const(f"{out}_nodt", "NoneType")
        + const(f"{out}_zero", "int", 0)
        + const(f"{out}_one", "int", 1)
        + f"  %{out}_keep : bool = aten::eq({enum}, %{out}_zero)\n"
        + f"  %{out}_avg : bool = aten::eq({enum}, %{out}_one)\n"
        + choose(f"{out}_r", "Tensor", f"%{out}_avg",
                 (f"  %{out}_m : Tensor = aten::mean({loss}, %{out}_nodt)\n", f"%{out}_m"),
                 (f"  %{out}_s : Tensor = aten::sum({loss}, %{out}_nodt)\n", f"%{out}_s"))
        + choose(out, "Tensor", f"%{out}_keep", ("", loss), ("", f"%{out}_r"))
    )


def _broadcast() -> str:
    return (
        "  %pair : Tensor[] = prim::ListConstruct(%input, %target)\n"
        "  %expanded : Tensor[] = aten::broadcast_tensors(%pair)\n"
        "  %ei : Tensor, %et : Tensor = prim::ListUnpack(%expanded)\n"
    )


def _weighted(elementwise: str, divide_by_weight: bool, red: str = "%red") -> str:
    """The hand-reduced weighted path: ``%wl = elementwise * weight`` then none / sum /
    mean (sum over the weights' sum, or a plain mean); other strings raise."""
    w_mean = (
        ("  %wl_s : Tensor = aten::sum(%wl, %wnone)\n"
         "  %w_s : Tensor = aten::sum(%w, %wnone)\n"
         "  %wl_m : Tensor = aten::div(%wl_s, %w_s)\n")
        if divide_by_weight else "  %wl_m : Tensor = aten::mean(%wl, %wnone)\n"
    )
    return (
        "  %w : Tensor = prim::unchecked_cast(%weight)\n"
        "  %w_size : int[] = aten::size(%w)\n"
        "  %in_size : int[] = aten::size(%input)\n"
        "  %w_bad : bool = aten::ne(%w_size, %in_size)\n"
        + raise_if("%w_bad", "Weights and input must have the same size.", "wsize")
        + elementwise
        + "  %wl : Tensor = aten::mul(%unweighted, %w)\n"
        + const("wnone", "NoneType")
        + const("ws_none", "str", "none")
        + const("ws_sum", "str", "sum")
        + const("ws_mean", "str", "mean")
        + f"  %w_is_none : bool = aten::eq({red}, %ws_none)\n"
        + f"  %w_is_sum : bool = aten::eq({red}, %ws_sum)\n"
        + f"  %w_is_mean : bool = aten::eq({red}, %ws_mean)\n"
        + "  %w_ok0 : bool = aten::__or__(%w_is_none, %w_is_sum)\n"
        + "  %w_ok : bool = aten::__or__(%w_ok0, %w_is_mean)\n"
        + "  %w_bad_mode : bool = aten::__not__(%w_ok)\n"
        + raise_if("%w_bad_mode", "Invalid reduction mode. Expected one of 'none', 'mean', 'sum'.", "wmode")
        + w_mean
        + "  %wl_sum : Tensor = aten::sum(%wl, %wnone)\n"
        + choose("wl_r", "Tensor", "%w_is_sum", ("", "%wl_sum"), ("", "%wl_m"))
        + choose("wout", "Tensor", "%w_is_none", ("", "%wl"), ("", "%wl_r"))
    )


def _pointwise_loss(op: str, elementwise: str) -> str:
    """mse_loss / l1_loss: the aten operator unweighted, the manual path weighted."""
    body = (
        reduction_string()
        + _broadcast()
        + "  %has_weight : bool = aten::__isnot__(%weight, %rnone)\n"
        + choose("out", "Tensor", "%has_weight",
                 (_weighted(elementwise, True), "%wout"),
                 (reduction_enum() + f"  %plain_loss : Tensor = {op}(%ei, %et, %e)\n", "%plain_loss"))
    )
    return graph(f"%input : Tensor, %target : Tensor, {LEGACY}, %reduction : str, %weight : Tensor?", body)


_SQUARED = ("  %diff : Tensor = aten::sub(%ei, %et, %one_d)\n"
            "  %unweighted : Tensor = aten::pow(%diff, %two_d)\n")
_ABSOLUTE = ("  %diff : Tensor = aten::sub(%ei, %et, %one_d)\n"
             "  %unweighted : Tensor = aten::abs(%diff)\n")
_DIFF_CONSTS = const("one_d", "int", 1) + const("two_d", "int", 2)


def _smooth_l1() -> str:
    body = (
        reduction_string()
        + _broadcast()
        + reduction_enum()
        + const("zero_beta", "float", 0.0)
        + "  %is_l1 : bool = aten::eq(%beta, %zero_beta)\n"
        + choose("out", "Tensor", "%is_l1",
                 ("  %l1 : Tensor = aten::l1_loss(%ei, %et, %e)\n", "%l1"),
                 ("  %sl1 : Tensor = aten::smooth_l1_loss(%ei, %et, %e, %beta)\n", "%sl1"))
    )
    return graph(f"%input : Tensor, %target : Tensor, {LEGACY}, %reduction : str, %beta : float", body)


def _huber() -> str:
    elementwise = const("h_none", "int", 0) + "  %unweighted : Tensor = aten::huber_loss(%ei, %et, %h_none, %delta)\n"
    body = (
        const("rnone", "NoneType")
        + _broadcast()
        + "  %has_weight : bool = aten::__isnot__(%weight, %rnone)\n"
        + choose("out", "Tensor", "%has_weight",
                 (_weighted(elementwise, False, "%reduction"), "%wout"),
                 (reduction_enum("%reduction") + "  %plain_loss : Tensor = aten::huber_loss(%ei, %et, %e, %delta)\n", "%plain_loss"))
    )
    return graph("%input : Tensor, %target : Tensor, %reduction : str, %delta : float, %weight : Tensor?", body)


def _cross_entropy() -> str:
    body = reduction_string() + reduction_enum() + (
        "  %out : Tensor = aten::cross_entropy_loss(%input, %target, %weight, %e, %ignore_index, %label_smoothing)\n"
    )
    return graph("%input : Tensor, %target : Tensor, %weight : Tensor?, %size_average : bool?, %ignore_index : int, "
                 "%reduce : bool?, %reduction : str, %label_smoothing : float", body)


def _nll() -> str:
    body = reduction_string() + reduction_enum() + (
        "  %out : Tensor = aten::nll_loss_nd(%input, %target, %weight, %e, %ignore_index)\n"
    )
    return graph("%input : Tensor, %target : Tensor, %weight : Tensor?, %size_average : bool?, %ignore_index : int, "
                 "%reduce : bool?, %reduction : str", body)


def _same_size_check() -> str:
    return (
        "  %t_size : int[] = aten::size(%target)\n"
        "  %i_size : int[] = aten::size(%input)\n"
        "  %size_bad : bool = aten::ne(%t_size, %i_size)\n"
        + raise_if("%size_bad", "Using a target size that is different to the input size is deprecated. "
                   "Please ensure they have the same size.", "tsize")
    )


def _bce() -> str:
    body = (
        reduction_string()
        + reduction_enum()
        + _same_size_check()
        + "  %has_weight : bool = aten::__isnot__(%weight, %rnone)\n"
        + choose("w", "Tensor?", "%has_weight",
                 (("  %w_given : Tensor = prim::unchecked_cast(%weight)\n"
                  "  %tw : Tensor[] = prim::ListConstruct(%target, %w_given)\n"
                  "  %tw_b : Tensor[] = aten::broadcast_tensors(%tw)\n"
                  "  %idx1 : int = prim::Constant[value=1]()\n"
                  "  %w_b : Tensor = aten::__getitem__(%tw_b, %idx1)\n"), "%w_b"),
                 ("", "%rnone"))
        + "  %out : Tensor = aten::binary_cross_entropy(%input, %target, %w, %e)\n"
    )
    return graph(f"%input : Tensor, %target : Tensor, %weight : Tensor?, {LEGACY}, %reduction : str", body)


def _bce_with_logits() -> str:
    body = (
        reduction_string()
        + reduction_enum()
        + _same_size_check()
        + const("one", "int", 1)
        + "  %ls : Tensor = aten::log_sigmoid(%input)\n"
        + "  %one_minus_t : Tensor = aten::rsub(%target, %one, %one)\n"
        + "  %lin : Tensor = aten::mul(%one_minus_t, %input)\n"
        + "  %has_pos : bool = aten::__isnot__(%pos_weight, %rnone)\n"
        + choose("weighted_ls", "Tensor", "%has_pos",
                 (("  %pw : Tensor = prim::unchecked_cast(%pos_weight)\n"
                  "  %pw1 : Tensor = aten::sub(%pw, %one, %one)\n"
                  "  %pwt : Tensor = aten::mul(%pw1, %target)\n"
                  "  %log_w : Tensor = aten::add(%pwt, %one, %one)\n"
                  "  %lw_ls : Tensor = aten::mul(%log_w, %ls)\n"), "%lw_ls"),
                 ("", "%ls"))
        + "  %raw : Tensor = aten::sub(%lin, %weighted_ls, %one)\n"
        + "  %has_weight : bool = aten::__isnot__(%weight, %rnone)\n"
        + choose("loss", "Tensor", "%has_weight",
                 ("  %w : Tensor = prim::unchecked_cast(%weight)\n  %raw_w : Tensor = aten::mul(%raw, %w)\n", "%raw_w"),
                 ("", "%raw"))
        + reduce_by_enum("%loss", "%e", "out")
    )
    return graph(f"%input : Tensor, %target : Tensor, %weight : Tensor?, {LEGACY}, %reduction : str, "
                 "%pos_weight : Tensor?", body)


def _kl_div() -> str:
    body = (
        reduction_string()
        + const("batchmean", "str", "batchmean")
        + "  %is_bm : bool = aten::eq(%reduction, %batchmean)\n"
        + "  %bm_plain : bool = aten::__and__(%is_bm, %plain)\n"
        + choose("red_kl", "str", "%bm_plain", ("", "%s_sum"), ("", "%red"))
        + reduction_enum("%red_kl")
        + const("one", "int", 1)
        + choose("pointwise", "Tensor", "%log_target",
                 (("  %et : Tensor = aten::exp(%target)\n"
                  "  %d : Tensor = aten::sub(%target, %input, %one)\n"
                  "  %lt_loss : Tensor = aten::mul(%et, %d)\n"), "%lt_loss"),
                 (("  %xl : Tensor = aten::xlogy(%target, %target)\n"
                  "  %tx : Tensor = aten::mul(%target, %input)\n"
                  "  %p_loss : Tensor = aten::sub(%xl, %tx, %one)\n"), "%p_loss"))
        + reduce_by_enum("%pointwise", "%e", "reduced")
        + "  %ndim : int = aten::dim(%input)\n"
        + const("zero", "int", 0)
        + "  %has_batch : bool = aten::ne(%ndim, %zero)\n"
        + "  %divide : bool = aten::__and__(%is_bm, %has_batch)\n"
        + choose("out", "Tensor", "%divide",
                 ("  %n : int = aten::size(%input, %zero)\n  %per : Tensor = aten::div(%reduced, %n)\n", "%per"),
                 ("", "%reduced"))
    )
    return graph(f"%input : Tensor, %target : Tensor, {LEGACY}, %reduction : str, %log_target : bool", body)


BODIES: dict[str, list[str]] = {
    "mse_loss": [_pointwise_loss("aten::mse_loss", _DIFF_CONSTS + _SQUARED)],
    "l1_loss": [_pointwise_loss("aten::l1_loss", _DIFF_CONSTS + _ABSOLUTE)],
    "smooth_l1_loss": [_smooth_l1()],
    "huber_loss": [_huber()],
    "cross_entropy": [_cross_entropy()],
    "nll_loss": [_nll()],
    "binary_cross_entropy": [_bce()],
    "binary_cross_entropy_with_logits": [_bce_with_logits()],
    "kl_div": [_kl_div()],
}
