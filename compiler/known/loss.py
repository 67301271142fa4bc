"""Known bodies of the ``torch.nn.functional`` losses.

Every loss takes its reduction as a string (``"none"``, ``"mean"``, ``"sum"``), and most
also the deprecated ``size_average`` / ``reduce`` flags, which override the string when
either is given (both default to True: ``mean``; ``reduce=False``: ``none``;
``size_average=False``: ``sum``).  The bodies work that out as torch 2.13's Python does,
then map the string to the enum the ``aten`` loss operators take (0 none, 1 mean, 2 sum;
``elementwise_mean`` is an old spelling of mean), raising torch's error for any other
string: the bodies call torch's own helpers for the two steps, ``legacy_get_string``
and ``get_enum``, which are known functions themselves (fixed IR, with every loss body
but the ``mse_loss`` / ``l1_loss`` template, in ``compiler/known/bodies/functions/loss.ir``;
the margin losses are in ``margin.ir``).  The weighted ``mse_loss`` / ``l1_loss`` /
``huber_loss`` paths reduce by hand, as torch does (a weighted mean divides by the sum of
the weights for the first two).

Two operators ``vm.ops`` lacks are composed: ``binary_cross_entropy_with_logits`` is
``(1 - t) * x - w_pos * log_sigmoid(x)`` with ``w_pos = 1 + (pos_weight - 1) * t``, and
``kl_div`` is ``xlogy(t, t) - t * x`` (``exp(t) * (t - x)`` for a log target), with the
``batchmean`` reduction dividing the sum by the batch size.
"""

from __future__ import annotations

from compiler.known.text import call, choose, const, graph, raise_if

LEGACY = "%size_average : bool?, %reduce : bool?"


def reduction_string() -> str:
    """``%red``: the reduction string after the legacy flags (torch's
    ``legacy_get_string``, called when either flag is given), and the constants
    ``%rnone``, ``%s_none``, ``%s_mean``, ``%s_sum`` the bodies use besides."""
    return (
        const("rnone", "NoneType")
        + const("s_none", "str", "none")
        + const("s_mean", "str", "mean")
        + const("s_sum", "str", "sum")
        + "  %sa_none : bool = aten::__is__(%size_average, %rnone)\n"
        + "  %rd_none : bool = aten::__is__(%reduce, %rnone)\n"
        + "  %plain : bool = aten::__and__(%sa_none, %rd_none)\n"
        + choose("red", "str", "%plain", ("", "%reduction"), (call("red_legacy", "str", "legacy_get_string",
                 "%size_average, %reduce, %t", const("t", "bool", True)), "%red_legacy"))
    )


def reduction_enum(red: str = "%red", tag: str = "e") -> str:
    """``%<tag>``: the reduction enum of the string ``red`` (torch's ``get_enum``: other
    strings raise)."""
    return call(tag, "int", "get_enum", red)


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


BODIES: dict[str, list[str]] = {
    "mse_loss": [_pointwise_loss("aten::mse_loss", _DIFF_CONSTS + _SQUARED)],
    "l1_loss": [_pointwise_loss("aten::l1_loss", _DIFF_CONSTS + _ABSOLUTE)],
}
