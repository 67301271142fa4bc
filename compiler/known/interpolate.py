"""Known bodies of ``F.interpolate`` (four TorchScript overloads) and ``torch.tensordot``.

``interpolate``: ``size`` is an int or a list of ints and ``scale_factor`` a float or a
list of floats, one overload per combination; each body first turns its two arguments
into ``%out_size : int[]?`` and ``%scales : float[]?`` (a single number repeated for
each spatial dimension, a list checked against the input's rank), then runs the same
checks and choices as torch 2.13's Python: ``align_corners`` only with the interpolating
modes (else False), exactly one of size and scale, ``recompute_scale_factor`` (forced for
``area`` given a scale) turning scales into ``floor(in_size * scale)`` sizes, antialias
only for 4-d bilinear / bicubic / lanczos.  The operator follows from the mode and the
input's rank (``upsample_nearest2d.vec``, ``adaptive_avg_pool2d`` for ``area``...), and
the pairs torch refuses raise torch's message.

``tensordot``: ``dims`` an int (the last ``dims`` axes of ``a`` against the first of
``b``), or two lists of axes.  The body moves the contracted axes of ``a`` to its end and
those of ``b`` to its front (``movedim``), flattens each side into a matrix, multiplies,
and reshapes to ``a``'s free sizes followed by ``b``'s.
"""

from __future__ import annotations

from compiler.known.text import choose, const, graph, raise_if

_MODES = ("nearest", "area", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "lanczos")
_SIZE_LEN = ("Input and output must have the same number of spatial dimensions. Please provide input tensor in "
             "(N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
_SCALE_LEN = ("Input and scale_factor must have the same number of spatial dimensions. Please provide input tensor in "
              "(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.")


def _as_list(name: str, param: str, elem: str, is_list: bool, message: str) -> str:
    """``%name : elem[]?``: ``param`` (an ``elem?`` or ``elem[]?``) as an optional list with
    one entry per spatial dimension."""
    if is_list:
        given = (
            f"  %{name}_l : {elem}[] = prim::unchecked_cast(%{param})\n"
            f"  %{name}_n : int = aten::len(%{name}_l)\n"
            f"  %{name}_bad : bool = aten::ne(%{name}_n, %dim)\n"
            + raise_if(f"%{name}_bad", message, f"{name}_len")
        )
    else:
        given = (
            f"  %{name}_v : {elem} = prim::unchecked_cast(%{param})\n"
            f"  %{name}_one : {elem}[] = prim::ListConstruct(%{name}_v)\n"
            f"  %{name}_l : {elem}[] = aten::mul(%{name}_one, %dim)\n"
        )
    return (
        f"  %{name}_given : bool = aten::__isnot__(%{param}, %none)\n"
        + choose(name, f"{elem}[]?", f"%{name}_given", (given, f"%{name}_l"), ("", "%none"))
    )


def _checks() -> str:
    modes = "".join(
        const(f"m_{i}", "str", m) + f"  %is_{m.replace('-', '_')} : bool = aten::eq(%mode, %m_{i})\n"
        for i, m in enumerate(_MODES)
    )
    return (
        modes
        + "  %near0 : bool = aten::__or__(%is_nearest, %is_area)\n"
        + "  %no_corners : bool = aten::__or__(%near0, %is_nearest_exact)\n"
        + "  %ac_given : bool = aten::__isnot__(%align_corners, %none)\n"
        + "  %ac_bad : bool = aten::__and__(%no_corners, %ac_given)\n"
        + raise_if("%ac_bad", "align_corners option can only be set with the interpolating modes: "
                   "linear | bilinear | bicubic | trilinear", "ac")
        + choose("ac", "bool", "%ac_given",
                 ("  %ac_v : bool = prim::unchecked_cast(%align_corners)\n", "%ac_v"), ("", "%false"))
        + "  %size_given : bool = aten::__isnot__(%out_size0, %none)\n"
        + "  %scale_given : bool = aten::__isnot__(%scales0, %none)\n"
        + "  %both : bool = aten::__and__(%size_given, %scale_given)\n"
        + raise_if("%both", "only one of size or scale_factor should be defined", "both")
        + "  %some : bool = aten::__or__(%size_given, %scale_given)\n"
        + "  %neither : bool = aten::__not__(%some)\n"
        + raise_if("%neither", "either size or scale_factor should be defined", "neither")
        + "  %rc_given : bool = aten::__isnot__(%recompute_scale_factor, %none)\n"
        + choose("rc", "bool", "%rc_given",
                 ("  %rc_v : bool = prim::unchecked_cast(%recompute_scale_factor)\n", "%rc_v"), ("", "%false"))
        + "  %rc_bad : bool = aten::__and__(%rc, %size_given)\n"
        + raise_if("%rc_bad", "recompute_scale_factor is not meaningful with an explicit size.", "rc")
        + "  %area_scale : bool = aten::__and__(%is_area, %scale_given)\n"
        + "  %recompute : bool = aten::__or__(%rc, %area_scale)\n"
    )


def _recompute() -> str:
    """``%out_size`` / ``%scales`` after ``recompute_scale_factor``."""
    loop = (
        "  %sc : float[] = prim::unchecked_cast(%scales0)\n"
        "  %in_sizes : int[] = aten::size(%input)\n"
        "  %os0 : int[] = prim::ListConstruct()\n"
        "  %os : int[] = prim::Loop(%dim, %true, %os0)\n"
        "    block0(%i : int, %acc : int[]):\n"
        "      %i2 : int = aten::add(%i, %two)\n"
        "      %s_i : int = aten::__getitem__(%in_sizes, %i2)\n"
        "      %f_i : float = aten::Float(%s_i)\n"
        "      %k_i : float = aten::__getitem__(%sc, %i)\n"
        "      %p_i : float = aten::mul(%f_i, %k_i)\n"
        "      %o_i : int = aten::floor(%p_i)\n"
        "      %o_l : int[] = prim::ListConstruct(%o_i)\n"
        "      %acc2 : int[] = aten::add(%acc, %o_l)\n"
        "      -> (%true, %acc2)\n"
    )
    return (
        choose("out_size", "int[]?", "%recompute", (loop, "%os"), ("", "%out_size0"))
        + choose("scales", "float[]?", "%recompute", ("", "%none"), ("", "%scales0"))
    )


def _dispatch() -> str:
    """``%out``: the operator for (mode, rank), as nested ifs, mode outside (a dump passes
    a constant mode, so constant propagation keeps one mode's rank choice); the pairs
    torch refuses raise."""
    vec = "%input, %out_size, %scales"
    lin = "%input, %out_size, %ac, %scales"

    def area(rank: int) -> str:
        return (f"  %os_v{rank} : int[] = prim::unchecked_cast(%out_size)\n"
                f"  %Y : Tensor = aten::adaptive_avg_pool{rank - 2}d(%input, %os_v{rank})\n")

    def smooth(op: str) -> str:  # bilinear / bicubic: the antialiased operator by flag
        return choose("Y", "Tensor", "%antialias",
                      (f"  %Y_aa : Tensor = aten::_upsample_{op}_aa({lin})\n", "%Y_aa"),
                      (f"  %Y_p : Tensor = aten::upsample_{op}({lin})\n", "%Y_p"))

    lanczos = (
        raise_if("%ac", "Lanczos mode does not support align_corners=True", "lz_ac")
        + "  %lz_plain : bool = aten::__not__(%antialias)\n"
        + raise_if("%lz_plain", "Lanczos mode requires antialias=True", "lz_aa")
        + f"  %Y : Tensor = aten::_upsample_lanczos2d_aa({lin})\n"
    )
    table: dict[str, dict[int, str]] = {
        "nearest": {r: f"  %Y : Tensor = aten::upsample_nearest{r - 2}d({vec})\n" for r in (3, 4, 5)},
        "nearest_exact": {r: f"  %Y : Tensor = aten::_upsample_nearest_exact{r - 2}d({vec})\n" for r in (3, 4, 5)},
        "area": {r: area(r) for r in (3, 4, 5)},
        "linear": {3: f"  %Y : Tensor = aten::upsample_linear1d({lin})\n"},
        "bilinear": {4: smooth("bilinear2d")},
        "bicubic": {4: smooth("bicubic2d")},
        "trilinear": {5: f"  %Y : Tensor = aten::upsample_trilinear3d({lin})\n"},
        "lanczos": {4: lanczos},
    }
    failure = ("   = prim::RaiseException(%fail_msg, %fail_cls)\n", "%input")
    chain = failure
    for mode, ranks in reversed(table.items()):
        inner = failure
        for rank, lines in reversed(ranks.items()):
            tag = f"{mode}{rank}"
            arm = (lines.replace("%Y", f"%y_{tag}_r"), f"%y_{tag}_r")
            inner = (choose(f"y_{tag}", "Tensor", f"%nd{rank}", arm, inner), f"%y_{tag}")
        chain = (choose(f"m_{mode}", "Tensor", f"%is_{mode}", inner, chain), f"%m_{mode}")
    rank_conds = "".join(
        const(f"r{r}", "int", r) + f"  %nd{r} : bool = aten::eq(%ndim, %r{r})\n" for r in (3, 4, 5)
    )
    message = const("fail_msg", "str", "Input Error: Only 3D, 4D and 5D input Tensors supported for the modes: "
                    "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact, with linear "
                    "for 3D, bilinear / bicubic / lanczos for 4D and trilinear for 5D input")
    message += const("fail_cls", "str", "builtins.NotImplementedError")
    return rank_conds + message + chain[0].replace("%m_nearest : Tensor", "%out : Tensor", 1)


def _interpolate(size_is_list: bool, scale_is_list: bool) -> str:
    size_t = "int[]?" if size_is_list else "int?"
    scale_t = "float[]?" if scale_is_list else "float?"
    body = (
        const("none", "NoneType")
        + const("false", "bool", False)
        + const("true", "bool", True)
        + const("two", "int", 2)
        + "  %ndim : int = aten::dim(%input)\n"
        + "  %dim : int = aten::sub(%ndim, %two)\n"
        + _as_list("out_size0", "size", "int", size_is_list, _SIZE_LEN)
        + _as_list("scales0", "scale_factor", "float", scale_is_list, _SCALE_LEN)
        + _checks()
        + _recompute()
        + "  %aa_modes0 : bool = aten::__or__(%is_bilinear, %is_bicubic)\n"
        + "  %aa_modes : bool = aten::__or__(%aa_modes0, %is_lanczos)\n"
        + const("r4_aa", "int", 4)
        # the rank test only when antialias is set: a constant False folds the check away
        + choose("aa_bad", "bool", "%antialias",
                 (("  %aa_rank : bool = aten::eq(%ndim, %r4_aa)\n"
                  "  %aa_ok : bool = aten::__and__(%aa_modes, %aa_rank)\n"
                  "  %aa_not_ok : bool = aten::__not__(%aa_ok)\n"), "%aa_not_ok"),
                 ("", "%false"))
        + raise_if("%aa_bad", "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires "
                   "a 4-D tensor as input", "aa")
        + _dispatch()
    )
    return graph(f"%input : Tensor, %size : {size_t}, %scale_factor : {scale_t}, %mode : str, "
                 "%align_corners : bool?, %recompute_scale_factor : bool?, %antialias : bool", body)


BODIES: dict[str, list[str]] = {
    # in the order of torch 2.13's overload declarations
    "interpolate": [_interpolate(False, True), _interpolate(True, True), _interpolate(False, False),
                    _interpolate(True, False)],
}


def _product(name: str, values: str) -> str:
    """``%name``: the product of the ints in ``values``."""
    return (
        f"  %{name}_n : int = aten::len({values})\n"
        f"  %{name} : int = prim::Loop(%{name}_n, %true, %one)\n"
        f"    block0(%{name}_i : int, %{name}_acc : int):\n"
        f"      %{name}_v : int = aten::__getitem__({values}, %{name}_i)\n"
        f"      %{name}_next : int = aten::mul(%{name}_acc, %{name}_v)\n"
        f"      -> (%true, %{name}_next)\n"
    )


def _contract() -> str:
    """``%res``: a and b contracted over the axes ``%dims_a`` / ``%dims_b``."""
    loop_dest = (
        "  %dest_a0 : int[] = prim::ListConstruct()\n"
        "  %dest_a : int[] = prim::Loop(%k, %true, %dest_a0)\n"
        "    block0(%i : int, %acc : int[]):\n"
        "      %pos : int = aten::add(%free_a, %i)\n"
        "      %pos_l : int[] = prim::ListConstruct(%pos)\n"
        "      %acc2 : int[] = aten::add(%acc, %pos_l)\n"
        "      -> (%true, %acc2)\n"
        "  %dest_b0 : int[] = prim::ListConstruct()\n"
        "  %dest_b : int[] = prim::Loop(%k, %true, %dest_b0)\n"
        "    block0(%j : int, %accb : int[]):\n"
        "      %j_l : int[] = prim::ListConstruct(%j)\n"
        "      %accb2 : int[] = aten::add(%accb, %j_l)\n"
        "      -> (%true, %accb2)\n"
    )
    # a contracted axis of size 1 against a larger one is summed away first, as torch does
    broadcast = (
        "  %ta : Tensor, %tb : Tensor = prim::Loop(%k, %true, %a_moved, %b_moved)\n"
        "    block0(%m : int, %ta0 : Tensor, %tb0 : Tensor):\n"
        "      %pa : int = aten::add(%free_a, %m)\n"
        "      %s1 : int = aten::size(%ta0, %pa)\n"
        "      %s2 : int = aten::size(%tb0, %m)\n"
        "      %differ : bool = aten::ne(%s1, %s2)\n"
        "      %s1_one : bool = aten::eq(%s1, %one)\n"
        "      %s2_one : bool = aten::eq(%s2, %one)\n"
        "      %either_one : bool = aten::__or__(%s1_one, %s2_one)\n"
        "      %no_one : bool = aten::__not__(%either_one)\n"
        "      %mismatch : bool = aten::__and__(%differ, %no_one)\n"
        + "".join("    " + line + "\n" for line in raise_if(
            "%mismatch", "contracted dimensions need to match", "match", "builtins.RuntimeError").splitlines())
        + "      %sum_a : bool = aten::__and__(%differ, %s2_one)\n"
        "      %s2_big : bool = aten::__not__(%s2_one)\n"
        "      %sum_b0 : bool = aten::__and__(%differ, %s2_big)\n"
        "      %sum_b : bool = aten::__and__(%sum_b0, %s1_one)\n"
        + "".join("    " + line + "\n" for line in (
            choose("ta1", "Tensor", "%sum_a",
                   (("  %pa_l : int[] = prim::ListConstruct(%pa)\n"
                    "  %ta_s : Tensor = aten::sum(%ta0, %pa_l, %true, %none)\n"), "%ta_s"), ("", "%ta0"))
            + choose("tb1", "Tensor", "%sum_b",
                     (("  %m_l : int[] = prim::ListConstruct(%m)\n"
                      "  %tb_s : Tensor = aten::sum(%tb0, %m_l, %true, %none)\n"), "%tb_s"), ("", "%tb0"))
        ).splitlines())
        + "      -> (%true, %ta1, %tb1)\n"
    )
    return (
        "  %na : int = aten::dim(%a)\n"
        "  %nb : int = aten::dim(%b)\n"
        "  %k : int = aten::len(%dims_a)\n"
        "  %kb : int = aten::len(%dims_b)\n"
        "  %k_bad : bool = aten::ne(%k, %kb)\n"
        + raise_if("%k_bad", "both dimension lists should have same length", "klen", "builtins.RuntimeError")
        + "  %free_a : int = aten::sub(%na, %k)\n"
        + loop_dest
        + "  %a_moved : Tensor = aten::movedim(%a, %dims_a, %dest_a)\n"
        + "  %b_moved : Tensor = aten::movedim(%b, %dims_b, %dest_b)\n"
        + broadcast
        + "  %size_a : int[] = aten::size(%ta)\n"
        + "  %size_b : int[] = aten::size(%tb)\n"
        + "  %zero : int = prim::Constant[value=0]()\n"
        + "  %kept_a : int[] = aten::slice(%size_a, %zero, %free_a, %one)\n"
        + "  %shared : int[] = aten::slice(%size_a, %free_a, %na, %one)\n"
        + "  %kept_b : int[] = aten::slice(%size_b, %k, %nb, %one)\n"
        + _product("rows", "%kept_a")
        + _product("inner", "%shared")
        + _product("cols", "%kept_b")
        + "  %shape_a : int[] = prim::ListConstruct(%rows, %inner)\n"
        + "  %shape_b : int[] = prim::ListConstruct(%inner, %cols)\n"
        + "  %mat_a : Tensor = aten::reshape(%ta, %shape_a)\n"
        + "  %mat_b : Tensor = aten::reshape(%tb, %shape_b)\n"
        + "  %prod : Tensor = aten::mm(%mat_a, %mat_b)\n"
        + "  %out_shape : int[] = aten::add(%kept_a, %kept_b)\n"
        + "  %res : Tensor = aten::reshape(%prod, %out_shape)\n"
    )


def _tensordot(dims_type: str) -> str:
    """tensordot with ``dims`` an int, two lists in a tuple, or a list of two lists."""
    body = (
        const("none", "NoneType")
        + const("true", "bool", True)
        + const("one", "int", 1)
        + "  %has_out : bool = aten::__isnot__(%out, %none)\n"
        + raise_if("%has_out", "irvm: torch.tensordot with out= is not supported", "out", "builtins.RuntimeError")
    )
    if dims_type == "int":
        body += (
            const("zero_d", "int", 0)
            + "  %neg : bool = aten::lt(%dims, %zero_d)\n"
            + raise_if("%neg", "tensordot expects dims >= 0", "dneg", "builtins.RuntimeError")
            + "  %rank_a : int = aten::dim(%a)\n"
            + "  %rank_b : int = aten::dim(%b)\n"
            + "  %rank : int = prim::min(%rank_a, %rank_b)\n"
            + "  %big : bool = aten::gt(%dims, %rank)\n"
            + raise_if("%big", "tensordot expects dims < ndim_a or ndim_b", "dbig", "builtins.RuntimeError")
            + "  %start : int = aten::neg(%dims)\n"
            + "  %dims_a0 : int[] = prim::ListConstruct()\n"
            + "  %dims_a : int[] = prim::Loop(%dims, %true, %dims_a0)\n"
            + "    block0(%q : int, %qa : int[]):\n"
            + "      %qv : int = aten::add(%start, %q)\n"
            + "      %ql : int[] = prim::ListConstruct(%qv)\n"
            + "      %qa2 : int[] = aten::add(%qa, %ql)\n"
            + "      -> (%true, %qa2)\n"
            + "  %dims_b0 : int[] = prim::ListConstruct()\n"
            + "  %dims_b : int[] = prim::Loop(%dims, %true, %dims_b0)\n"
            + "    block0(%r : int, %rb : int[]):\n"
            + "      %rl : int[] = prim::ListConstruct(%r)\n"
            + "      %rb2 : int[] = aten::add(%rb, %rl)\n"
            + "      -> (%true, %rb2)\n"
        )
    elif dims_type == "(int[], int[])":
        body += "  %dims_a : int[], %dims_b : int[] = prim::TupleUnpack(%dims)\n"
    else:
        body += (
            "  %n_lists : int = aten::len(%dims)\n"
            + const("two_l", "int", 2)
            + "  %not_two : bool = aten::ne(%n_lists, %two_l)\n"
            + raise_if("%not_two", "tensordot expects dims to be a pair of lists of dimensions", "pair")
            + const("zero_l", "int", 0)
            + "  %dims_a : int[] = aten::__getitem__(%dims, %zero_l)\n"
            + "  %dims_b : int[] = aten::__getitem__(%dims, %one)\n"
        )
    return graph(f"%a : Tensor, %b : Tensor, %dims : {dims_type}, %out : Tensor?", body + _contract(), "%res")


BODIES["tensordot"] = [_tensordot("int"), _tensordot("(int[], int[])"), _tensordot("int[][]")]
