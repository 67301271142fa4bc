"""Known bodies of the margin and embedding losses of ``torch.nn.functional``.

Their ``aten`` operators are missing from ``vm.ops``, so each body writes the operator's
formula (torch's ATen definitions) with pointwise operators, after the Python function's
own checks and its legacy ``size_average`` / ``reduce`` handling (shared with
``compiler.known.loss``), and reduces with the same none / mean / sum rule:

- ``margin_ranking_loss``: ``max(0, -y * (x1 - x2) + margin)``;
- ``hinge_embedding_loss``: ``x`` where ``y != -1``, plus ``max(0, margin - x)`` where
  ``y != 1``;
- ``soft_margin_loss``: ``log1p(exp(-y * x))``;
- ``multilabel_soft_margin_loss``: the mean over classes of
  ``-(y * log_sigmoid(x) + (1 - y) * log_sigmoid(-x))``, weighted;
- ``cosine_embedding_loss``: ``1 - cos`` where ``y == 1``, ``max(0, cos - margin)`` where
  ``y == -1``, ``cos`` computed with torch's 1e-12 guard on the squared norms;
- ``poisson_nll_loss``: ``exp(x) - y * x`` (log input) or ``x - y * log(x + eps)``, plus
  Stirling's term where ``y > 1`` when ``full``;
- ``triplet_margin_loss``: ``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the p-norm of
  the difference plus ``eps`` over the last axis (``swap`` takes ``min(d(a, n), d(p, n))``);
- ``multi_margin_loss``: per sample, the sum over classes ``j != y`` of
  ``max(0, margin - x[y] + x[j])^p`` (times ``weight[y]``) over the class count.  The
  ``j == y`` term of the full sum is exactly ``max(0, margin)^p``, which is subtracted;
- ``multilabel_margin_loss``: the sum of ``max(0, 1 - (x[j] - x[i]))`` over the listed
  targets j (up to the first -1) and the other classes i, over the class count.
"""

from __future__ import annotations

from compiler.known.loss import (
    LEGACY,
    reduce_by_enum,
    reduction_enum,
    reduction_string,
)
from compiler.known.text import choose, const, graph, raise_if


def _reduced(elementwise: str, loss: str) -> str:
    """Legacy flags, enum, ``elementwise`` lines defining ``loss``, then ``%out``."""
    return reduction_string() + reduction_enum() + elementwise + reduce_by_enum(loss, "%e", "out")


def _margin_ranking() -> str:
    body = (
        "  %d1 : int = aten::dim(%input1)\n"
        "  %d2 : int = aten::dim(%input2)\n"
        "  %dt : int = aten::dim(%target)\n"
        "  %ne12 : bool = aten::ne(%d1, %d2)\n"
        "  %ne1t : bool = aten::ne(%d1, %dt)\n"
        "  %dims_bad : bool = aten::__or__(%ne12, %ne1t)\n"
        + raise_if("%dims_bad", "margin_ranking_loss : All input tensors should have same dimension", "dims",
                   "builtins.RuntimeError")
        + const("one", "int", 1)
        + const("zero", "int", 0)
        + "  %diff : Tensor = aten::sub(%input1, %input2, %one)\n"
        + "  %neg_t : Tensor = aten::neg(%target)\n"
        + "  %scaled : Tensor = aten::mul(%neg_t, %diff)\n"
        + "  %shifted : Tensor = aten::add(%scaled, %margin, %one)\n"
        + "  %loss : Tensor = aten::clamp_min(%shifted, %zero)\n"
    )
    return graph(f"%input1 : Tensor, %input2 : Tensor, %target : Tensor, %margin : float, {LEGACY}, "
                 "%reduction : str", _reduced(body, "%loss"))


def _hinge_embedding() -> str:
    body = (
        const("one", "int", 1)
        + const("minus1", "int", -1)
        + const("zero", "int", 0)
        + "  %zeros : Tensor = aten::zeros_like(%input)\n"
        + "  %m_minus : Tensor = aten::rsub(%input, %margin, %one)\n"
        + "  %clamped : Tensor = aten::clamp_min(%m_minus, %zero)\n"
        + "  %not_pos : Tensor = aten::ne(%target, %one)\n"
        + "  %not_neg : Tensor = aten::ne(%target, %minus1)\n"
        + "  %part_m : Tensor = aten::where(%not_pos, %clamped, %zeros)\n"
        + "  %part_x : Tensor = aten::where(%not_neg, %input, %zeros)\n"
        + "  %loss : Tensor = aten::add(%part_m, %part_x, %one)\n"
    )
    return graph(f"%input : Tensor, %target : Tensor, %margin : float, {LEGACY}, %reduction : str",
                 _reduced(body, "%loss"))


def _soft_margin() -> str:
    body = (
        "  %prod : Tensor = aten::mul(%input, %target)\n"
        "  %neg : Tensor = aten::neg(%prod)\n"
        "  %ex : Tensor = aten::exp(%neg)\n"
        "  %loss : Tensor = aten::log1p(%ex)\n"
    )
    return graph(f"%input : Tensor, %target : Tensor, {LEGACY}, %reduction : str", _reduced(body, "%loss"))


def _multilabel_soft_margin() -> str:
    body = (
        reduction_string()
        + const("one", "int", 1)
        + const("nodt", "NoneType")
        + "  %ls_pos : Tensor = aten::log_sigmoid(%input)\n"
        + "  %neg_x : Tensor = aten::neg(%input)\n"
        + "  %ls_neg : Tensor = aten::log_sigmoid(%neg_x)\n"
        + "  %a : Tensor = aten::mul(%target, %ls_pos)\n"
        + "  %one_minus : Tensor = aten::rsub(%target, %one, %one)\n"
        + "  %b : Tensor = aten::mul(%one_minus, %ls_neg)\n"
        + "  %ab : Tensor = aten::add(%a, %b, %one)\n"
        + "  %raw : Tensor = aten::neg(%ab)\n"
        + "  %has_w : bool = aten::__isnot__(%weight, %rnone)\n"
        + choose("weighted", "Tensor", "%has_w",
                 ("  %w : Tensor = prim::unchecked_cast(%weight)\n  %rw : Tensor = aten::mul(%raw, %w)\n", "%rw"),
                 ("", "%raw"))
        + "  %ndim : int = aten::dim(%input)\n"
        + "  %class_dim : int = aten::sub(%ndim, %one)\n"
        + "  %classes : int = aten::size(%input, %class_dim)\n"
        + "  %cd_list : int[] = prim::ListConstruct(%class_dim)\n"
        + const("false", "bool", False)
        + "  %per_sum : Tensor = aten::sum(%weighted, %cd_list, %false, %nodt)\n"
        + "  %per : Tensor = aten::div(%per_sum, %classes)\n"
        + "  %is_none : bool = aten::eq(%red, %s_none)\n"
        + "  %is_mean : bool = aten::eq(%red, %s_mean)\n"
        + "  %is_sum : bool = aten::eq(%red, %s_sum)\n"
        + "  %ok0 : bool = aten::__or__(%is_none, %is_mean)\n"
        + "  %ok : bool = aten::__or__(%ok0, %is_sum)\n"
        + "  %bad : bool = aten::__not__(%ok)\n"
        + const("suffix", "str", " is not valid")
        + "  %msg : str = aten::add(%red, %suffix)\n"
        + const("cls", "str", "builtins.ValueError")
        + "   = prim::If(%bad)\n    block0():\n       = prim::RaiseException(%msg, %cls)\n      -> ()\n"
        + "    block1():\n      -> ()\n"
        + "  %mean : Tensor = aten::mean(%per, %nodt)\n"
        + "  %total : Tensor = aten::sum(%per, %nodt)\n"
        + choose("reduced", "Tensor", "%is_mean", ("", "%mean"), ("", "%total"))
        + choose("out", "Tensor", "%is_none", ("", "%per"), ("", "%reduced"))
    )
    return graph(f"%input : Tensor, %target : Tensor, %weight : Tensor?, {LEGACY}, %reduction : str", body)


def _cosine_embedding() -> str:
    body = (
        "  %td : int = aten::dim(%target)\n"
        + "  %d1 : int = aten::dim(%input1)\n"
        + "  %d2 : int = aten::dim(%input2)\n"
        + const("zero", "int", 0)
        + const("one", "int", 1)
        + const("two", "int", 2)
        + "  %t_big : bool = aten::gt(%td, %one)\n"
        + raise_if("%t_big", "0D or 1D target tensor expected, multi-target not supported", "tdim",
                   "builtins.RuntimeError")
        + "  %want : int = aten::add(%td, %one)\n"
        + "  %bad1 : bool = aten::ne(%d1, %want)\n"
        + "  %bad2 : bool = aten::ne(%d2, %want)\n"
        + "  %bad : bool = aten::__or__(%bad1, %bad2)\n"
        + raise_if("%bad", "1D target tensor expects 2D input tensors, and 0D target tensor expects 1D input "
                   "tensors", "idim", "builtins.RuntimeError")
        + const("eps", "float", 1e-12)
        + const("false", "bool", False)
        + const("nodt", "NoneType")
        + "  %axis : int[] = prim::ListConstruct(%td)\n"
        + "  %p12 : Tensor = aten::mul(%input1, %input2)\n"
        + "  %dot : Tensor = aten::sum(%p12, %axis, %false, %nodt)\n"
        + "  %p11 : Tensor = aten::mul(%input1, %input1)\n"
        + "  %s11 : Tensor = aten::sum(%p11, %axis, %false, %nodt)\n"
        + "  %m1 : Tensor = aten::add(%s11, %eps, %one)\n"
        + "  %p22 : Tensor = aten::mul(%input2, %input2)\n"
        + "  %s22 : Tensor = aten::sum(%p22, %axis, %false, %nodt)\n"
        + "  %m2 : Tensor = aten::add(%s22, %eps, %one)\n"
        + "  %mm : Tensor = aten::mul(%m1, %m2)\n"
        + "  %den : Tensor = aten::sqrt(%mm)\n"
        + "  %cos : Tensor = aten::div(%dot, %den)\n"
        + "  %zeros : Tensor = aten::zeros_like(%cos)\n"
        + "  %pos : Tensor = aten::rsub(%cos, %one, %one)\n"
        + "  %shift : Tensor = aten::sub(%cos, %margin, %one)\n"
        + "  %neg : Tensor = aten::clamp_min(%shift, %zero)\n"
        + const("minus1", "int", -1)
        + "  %is_pos : Tensor = aten::eq(%target, %one)\n"
        + "  %is_neg : Tensor = aten::eq(%target, %minus1)\n"
        + "  %out_pos : Tensor = aten::where(%is_pos, %pos, %zeros)\n"
        + "  %out_neg : Tensor = aten::where(%is_neg, %neg, %zeros)\n"
        + "  %loss : Tensor = aten::add(%out_pos, %out_neg, %one)\n"
    )
    return graph(f"%input1 : Tensor, %input2 : Tensor, %target : Tensor, %margin : float, {LEGACY}, "
                 "%reduction : str", _reduced(body, "%loss"))


def _poisson_nll() -> str:
    body = (
        const("one", "int", 1)
        + choose("base", "Tensor", "%log_input",
                 (("  %ex : Tensor = aten::exp(%input)\n"
                  "  %tx : Tensor = aten::mul(%target, %input)\n"
                  "  %b_log : Tensor = aten::sub(%ex, %tx, %one)\n"), "%b_log"),
                 (("  %xe : Tensor = aten::add(%input, %eps, %one)\n"
                  "  %lg : Tensor = aten::log(%xe)\n"
                  "  %tl : Tensor = aten::mul(%target, %lg)\n"
                  "  %b_lin : Tensor = aten::sub(%input, %tl, %one)\n"), "%b_lin"))
        + choose("loss", "Tensor", "%full",
                 (("  %lt : Tensor = aten::log(%target)\n"
                  "  %tlt : Tensor = aten::mul(%target, %lt)\n"
                  "  %st0 : Tensor = aten::sub(%tlt, %target, %one)\n"
                  "  %two_pi : float = prim::Constant[value=6.283185307179586]()\n"
                  "  %tp : Tensor = aten::mul(%target, %two_pi)\n"
                  "  %ltp : Tensor = aten::log(%tp)\n"
                  "  %half : float = prim::Constant[value=0.5]()\n"
                  "  %hl : Tensor = aten::mul(%ltp, %half)\n"
                  "  %stirling : Tensor = aten::add(%st0, %hl, %one)\n"
                  "  %small : Tensor = aten::le(%target, %one)\n"
                  "  %zero_f : float = prim::Constant[value=0.]()\n"
                  "  %masked : Tensor = aten::masked_fill(%stirling, %small, %zero_f)\n"
                  "  %with_s : Tensor = aten::add(%base, %masked, %one)\n"), "%with_s"),
                 ("", "%base"))
    )
    # unlike get_enum, poisson_nll_loss refuses the old spelling "elementwise_mean" itself
    old_spelling = const("old_s", "str", "elementwise_mean") + "  %is_old : bool = aten::eq(%red, %old_s)\n"
    body = old_spelling + raise_if("%is_old", "elementwise_mean is not a valid value for reduction", "old") + body
    return graph("%input : Tensor, %target : Tensor, %log_input : bool, %full : bool, %size_average : bool?, "
                 "%eps : float, %reduce : bool?, %reduction : str", _reduced(body, "%loss"))


def _distance(a: str, b: str, out: str) -> str:
    return (
        f"  %{out}_d : Tensor = aten::sub({a}, {b}, %one)\n"
        f"  %{out}_e : Tensor = aten::add(%{out}_d, %eps, %one)\n"
        f"  %{out} : Tensor = aten::linalg_vector_norm(%{out}_e, %p, %last, %false, %nodt)\n"
    )


def _triplet_margin() -> str:
    body = (
        const("zero_m", "float", 0.0)
        + "  %m_bad : bool = aten::le(%margin, %zero_m)\n"
        + raise_if("%m_bad", "margin must be greater than 0", "margin")
        + "  %da : int = aten::dim(%anchor)\n"
        + "  %dp : int = aten::dim(%positive)\n"
        + "  %dn : int = aten::dim(%negative)\n"
        + "  %ap : bool = aten::ne(%da, %dp)\n"
        + "  %an : bool = aten::ne(%da, %dn)\n"
        + "  %dims_bad : bool = aten::__or__(%ap, %an)\n"
        + raise_if("%dims_bad", "The anchor, positive, and negative tensors are expected to have the same number "
                   "of dimensions", "dims", "builtins.RuntimeError")
        + const("one", "int", 1)
        + const("zero", "int", 0)
        + const("minus1", "int", -1)
        + const("false", "bool", False)
        + const("nodt", "NoneType")
        + "  %last : int[] = prim::ListConstruct(%minus1)\n"
        + _distance("%anchor", "%positive", "d_pos")
        + _distance("%anchor", "%negative", "d_neg0")
        + choose("d_neg", "Tensor", "%swap",
                 (_distance("%positive", "%negative", "d_swap")
                  + "  %d_min : Tensor = aten::minimum(%d_neg0, %d_swap)\n", "%d_min"),
                 ("", "%d_neg0"))
        + "  %gap0 : Tensor = aten::add(%d_pos, %margin, %one)\n"
        + "  %gap : Tensor = aten::sub(%gap0, %d_neg, %one)\n"
        + "  %loss : Tensor = aten::clamp_min(%gap, %zero)\n"
    )
    return graph(f"%anchor : Tensor, %positive : Tensor, %negative : Tensor, %margin : float, %p : float, "
                 f"%eps : float, %swap : bool, {LEGACY}, %reduction : str", _reduced(body, "%loss"))


def _multi_margin() -> str:
    body = (
        const("one", "int", 1)
        + const("two", "int", 2)
        + const("zero", "int", 0)
        + "  %p1 : bool = aten::eq(%p, %one)\n"
        + "  %p2 : bool = aten::eq(%p, %two)\n"
        + "  %p_ok : bool = aten::__or__(%p1, %p2)\n"
        + "  %p_bad : bool = aten::__not__(%p_ok)\n"
        + raise_if("%p_bad", "only p == 1 and p == 2 supported", "p")
        + "  %has_w : bool = aten::__isnot__(%weight, %rnone_w)\n"
        + choose("w_bad", "bool", "%has_w",
                 (("  %w_c : Tensor = prim::unchecked_cast(%weight)\n"
                  "  %w_dim : int = aten::dim(%w_c)\n"
                  "  %w_not1 : bool = aten::ne(%w_dim, %one)\n"), "%w_not1"),
                 ("", "%has_w"))
        + raise_if("%w_bad", "weight must be one-dimensional", "wdim")
        + "  %ndim : int = aten::dim(%input)\n"
        + "  %is2 : bool = aten::eq(%ndim, %two)\n"
        + choose("x2", "Tensor", "%is2", ("", "%input"),
                 ("  %x_u : Tensor = aten::unsqueeze(%input, %zero)\n", "%x_u"))
        + const("minus1", "int", -1)
        + "  %flat_shape : int[] = prim::ListConstruct(%minus1, %one)\n"
        + "  %t2 : Tensor = aten::reshape(%target, %flat_shape)\n"
        + const("false", "bool", False)
        + "  %x_y : Tensor = aten::gather(%x2, %one, %t2, %false)\n"
        + "  %gap0 : Tensor = aten::sub(%x2, %x_y, %one)\n"
        + "  %gap : Tensor = aten::add(%gap0, %margin, %one)\n"
        + "  %hinge : Tensor = aten::clamp_min(%gap, %zero)\n"
        + "  %powered : Tensor = aten::pow(%hinge, %p)\n"
        + const("zero_f", "float", 0.0)
        + "  %self_term0 : float = prim::max(%margin, %zero_f)\n"
        + "  %self_term : float = aten::pow(%self_term0, %p)\n"
        + choose("terms", "Tensor", "%has_w",
                 (("  %w : Tensor = prim::unchecked_cast(%weight)\n"
                  "  %t_flat : Tensor = aten::reshape(%target, %minus1_list)\n"
                  "  %w_y0 : Tensor = aten::index_select(%w, %zero, %t_flat)\n"
                  "  %w_y : Tensor = aten::unsqueeze(%w_y0, %one)\n"
                  "  %weighted : Tensor = aten::mul(%powered, %w_y)\n"), "%weighted"),
                 ("", "%powered"))
        + "  %axis : int[] = prim::ListConstruct(%one)\n"
        + "  %row : Tensor = aten::sum(%terms, %axis, %false, %nodt)\n"
        + choose("row_ex", "Tensor", "%has_w",
                 (("  %w2 : Tensor = prim::unchecked_cast(%weight)\n"
                  "  %t_flat2 : Tensor = aten::reshape(%target, %minus1_list)\n"
                  "  %w_y2 : Tensor = aten::index_select(%w2, %zero, %t_flat2)\n"
                  "  %sw : Tensor = aten::mul(%w_y2, %self_term)\n"
                  "  %row_w : Tensor = aten::sub(%row, %sw, %one)\n"), "%row_w"),
                 ("  %row_s : Tensor = aten::sub(%row, %self_term, %one)\n", "%row_s"))
        + "  %classes : int = aten::size(%x2, %one)\n"
        + "  %per0 : Tensor = aten::div(%row_ex, %classes)\n"
        + "  %t_shape_list : int[] = aten::size(%target)\n"
        + "  %loss : Tensor = aten::reshape(%per0, %t_shape_list)\n"
    )
    body = (
        const("rnone_w", "NoneType")
        + const("nodt", "NoneType")
        + "  %minus1_list : int[] = prim::ListConstruct(%minus1_c)\n"
        + body
    )
    body = const("minus1_c", "int", -1) + body
    return graph(f"%input : Tensor, %target : Tensor, %p : int, %margin : float, %weight : Tensor?, {LEGACY}, "
                 "%reduction : str", _reduced(body, "%loss"))



def _multilabel_margin() -> str:
    """Per sample, the targets are the classes listed before the first -1; the loss sums
    ``max(0, 1 - (x[j] - x[i]))`` over targets j and non-targets i, over the class
    count.  The targets' membership is a scatter of the valid entries; the pairs are one
    broadcast (N, K, C) hinge, masked."""
    body = (
        const("zero", "int", 0)
        + const("one", "int", 1)
        + const("two", "int", 2)
        + const("false", "bool", False)
        + const("nodt", "NoneType")
        + const("long", "int", 4)
        + "  %ndim : int = aten::dim(%input)\n"
        + "  %batched : bool = aten::eq(%ndim, %two)\n"
        + choose("x2", "Tensor", "%batched", ("", "%input"),
                 ("  %x_u : Tensor = aten::unsqueeze(%input, %zero)\n", "%x_u"))
        + choose("t2", "Tensor", "%batched", ("", "%target"),
                 ("  %t_u : Tensor = aten::unsqueeze(%target, %zero)\n", "%t_u"))
        + "  %listed0 : Tensor = aten::ge(%t2, %zero)\n"
        + "  %listed1 : Tensor = aten::to(%listed0, %long, %false, %false, %nodt)\n"
        + "  %listed2 : Tensor = aten::cumprod(%listed1, %one, %nodt)\n"
        + "  %listed : Tensor = aten::gt(%listed2, %zero)\n"
        + "  %safe : Tensor = aten::where(%listed, %t2, %zero)\n"
        + "  %x_dt : int = prim::dtype(%x2)\n"
        + "  %marks : Tensor = aten::to(%listed, %x_dt, %false, %false, %nodt)\n"
        + "  %blank : Tensor = aten::zeros_like(%x2, %nodt, %nodt, %nodt, %nodt, %nodt)\n"
        + "  %hits : Tensor = aten::scatter_add(%blank, %one, %safe, %marks)\n"
        + "  %is_target : Tensor = aten::gt(%hits, %zero)\n"
        + "  %other : Tensor = aten::logical_not(%is_target)\n"
        + "  %x_j : Tensor = aten::gather(%x2, %one, %safe, %false)\n"
        + "  %x_j3 : Tensor = aten::unsqueeze(%x_j, %two)\n"
        + "  %x_i3 : Tensor = aten::unsqueeze(%x2, %one)\n"
        + "  %gap : Tensor = aten::sub(%x_j3, %x_i3, %one)\n"
        + "  %margin : Tensor = aten::rsub(%gap, %one, %one)\n"
        + "  %hinge : Tensor = aten::clamp_min(%margin, %zero)\n"
        + "  %row_ok : Tensor = aten::unsqueeze(%listed, %two)\n"
        + "  %col_ok : Tensor = aten::unsqueeze(%other, %one)\n"
        + "  %pair_ok : Tensor = aten::logical_and(%row_ok, %col_ok)\n"
        + const("zero_f", "float", 0.0)
        + "  %kept : Tensor = aten::where(%pair_ok, %hinge, %zero_f)\n"
        + "  %axes : int[] = prim::ListConstruct(%one, %two)\n"
        + "  %summed : Tensor = aten::sum(%kept, %axes, %false, %nodt)\n"
        + "  %classes : int = aten::size(%x2, %one)\n"
        + "  %per : Tensor = aten::div(%summed, %classes)\n"
        + choose("loss", "Tensor", "%batched", ("", "%per"),
                 ("  %per_u : Tensor = aten::squeeze(%per, %zero)\n", "%per_u"))
    )
    return graph(f"%input : Tensor, %target : Tensor, {LEGACY}, %reduction : str", _reduced(body, "%loss"))

BODIES: dict[str, list[str]] = {
    "margin_ranking_loss": [_margin_ranking()],
    "hinge_embedding_loss": [_hinge_embedding()],
    "soft_margin_loss": [_soft_margin()],
    "multilabel_soft_margin_loss": [_multilabel_soft_margin()],
    "cosine_embedding_loss": [_cosine_embedding()],
    "poisson_nll_loss": [_poisson_nll()],
    "triplet_margin_loss": [_triplet_margin()],
    "multi_margin_loss": [_multi_margin()],
    "multilabel_margin_loss": [_multilabel_margin()],
}
