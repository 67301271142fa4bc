"""Known bodies of the ``torch.nn.functional`` max and power-average pools, and of the
deprecated ``upsample`` helpers.

``max_pool1d/2d`` (printed ``_max_pool1d``: the ``return_indices`` boolean dispatch picks
``_max_poolNd`` or ``max_poolNd_with_indices`` by name) and the adaptive max pools map to
the ``aten`` operators; ``max_pool1d_with_indices`` runs the 2-d operator on a height-1
plane, where the flat index into a 1-row plane is the column.

``vm.ops`` has no 3-d max pools, but a max over a box is a max over its depth of maxima
over its height-width rectangles, and every pooling rule (padding with -inf, dilation,
``ceil_mode``, adaptive window bounds) acts on each axis alone.  So the 3-d pools run the
2-d operator twice: over (H, W) on the input seen as (N, C*D, H, W), then over (D, 1) on
the result seen as (N, C, D, H'*W').  The flat index of a maximum is then
``d * H * W + (the 2-d index of row d)``, ``d`` being the second pass's index divided by
H'*W' and the 2-d index gathered at ``d``.  A 4-d input is one unbatched sample.

``lp_pool1d/2d/3d`` follow torch: ``(sum of x^p over the window)^(1/p)`` computed as an
average pool of ``x^p`` times the window size, with ``p = inf`` a max pool of ``|x|``
(the 3-d average pool runs separably too, and the 3-d max pool is a call of the known
``_max_pool3d``).
``max_unpool1d/2d/3d`` scatter the values at their flat indices into zeros of the output
size, which they work out as torch's ``_unpool_output_size`` does.
``upsample`` / ``upsample_nearest`` / ``upsample_bilinear`` call ``interpolate`` with
their fixed modes (bilinear with ``align_corners=True``); the call is a known function
too, inlined in turn.

This module holds the templates of the family; the bodies whose text is fixed
(max_unpool1d/2d/3d and lp_pool3d) are IR in ``compiler/known/bodies/functions/pool.ir``.
"""

from __future__ import annotations

from compiler.known.text import call, choose, const, graph, unwrap

_POOL_PARAMS = ("%input : Tensor, %kernel_size : int[], %stride : int[]?, %padding : int[], %dilation : int[], "
                "%ceil_mode : bool, %return_indices : bool")


def _stride() -> str:
    return unwrap("s", "stride", "int[]", "%s_empty") .replace(
        "  %s_none : NoneType", "  %s_empty : int[] = prim::ListConstruct()\n  %s_none : NoneType", 1)


def _max_pool(n: int, with_indices: bool) -> str:
    args = "%input, %kernel_size, %s, %padding, %dilation, %ceil_mode"
    if not with_indices:
        return graph(_POOL_PARAMS, _stride() + f"  %out : Tensor = aten::max_pool{n}d({args})\n")
    if n == 2:
        body = _stride() + f"  %v : Tensor, %i : Tensor = aten::max_pool2d_with_indices({args})\n"
    else:  # 1-d: the 2-d operator on (N, C, 1, L); the flat index in a 1-row plane is the column
        body = (
            _stride()
            + const("zero", "int", 0)
            + const("one", "int", 1)
            + const("minus2", "int", -2)
            + "  %x2 : Tensor = aten::unsqueeze(%input, %minus2)\n"
            + "  %k0 : int = aten::__getitem__(%kernel_size, %zero)\n"
            + "  %p0 : int = aten::__getitem__(%padding, %zero)\n"
            + "  %d0 : int = aten::__getitem__(%dilation, %zero)\n"
            + "  %k2 : int[] = prim::ListConstruct(%one, %k0)\n"
            + "  %p2 : int[] = prim::ListConstruct(%zero, %p0)\n"
            + "  %d2 : int[] = prim::ListConstruct(%one, %d0)\n"
            + "  %n_s : int = aten::len(%s)\n"
            + "  %no_s : bool = aten::eq(%n_s, %zero)\n"
            + choose("s2", "int[]", "%no_s", ("", "%s"),
                     (("  %s0 : int = aten::__getitem__(%s, %zero)\n"
                      "  %s2_given : int[] = prim::ListConstruct(%one, %s0)\n"), "%s2_given"))
            + "  %v2 : Tensor, %i2 : Tensor = aten::max_pool2d_with_indices(%x2, %k2, %s2, %p2, %d2, %ceil_mode)\n"
            + "  %v : Tensor = aten::squeeze(%v2, %minus2)\n"
            + "  %i : Tensor = aten::squeeze(%i2, %minus2)\n"
        )
    body += "  %out : (Tensor, Tensor) = prim::TupleConstruct(%v, %i)\n"
    return graph(_POOL_PARAMS, body)


def _adaptive_max_pool(n: int, with_indices: bool) -> str:
    body = f"  %v : Tensor, %i : Tensor = aten::adaptive_max_pool{n}d(%input, %output_size)\n"
    if with_indices:
        body += "  %out : (Tensor, Tensor) = prim::TupleConstruct(%v, %i)\n"
        return graph("%input : Tensor, %output_size : int[], %return_indices : bool", body)
    return graph("%input : Tensor, %output_size : int[], %return_indices : bool", body, "%v")


def _stride_or_kernel() -> str:
    """``%st``: the stride list, or the kernel size when the stride is None or empty."""
    return (
        _stride()
        + "  %s_len : int = aten::len(%s)\n"
        + const("s_zero", "int", 0)
        + "  %s_empty_b : bool = aten::eq(%s_len, %s_zero)\n"
        + choose("st", "int[]", "%s_empty_b", ("", "%kernel_size"), ("", "%s"))
    )


def _item(name: str, values: str, index: int) -> str:
    return const(f"{name}_at", "int", index) + f"  %{name} : int = aten::__getitem__({values}, %{name}_at)\n"


def _batched() -> str:
    """``%x5``: the input with a batch axis (a 4-d input is one sample), and its sizes."""
    return (
        "  %ndim : int = aten::dim(%input)\n"
        + const("four", "int", 4)
        + const("zero", "int", 0)
        + const("one", "int", 1)
        + const("minus1", "int", -1)
        + "  %unbatched : bool = aten::eq(%ndim, %four)\n"
        + choose("x5", "Tensor", "%unbatched",
                 ("  %x_b : Tensor = aten::unsqueeze(%input, %zero)\n", "%x_b"), ("", "%input"))
        + "  %sz : int[] = aten::size(%x5)\n"
        + _item("n", "%sz", 0) + _item("c", "%sz", 1) + _item("d", "%sz", 2)
        + _item("h", "%sz", 3) + _item("w", "%sz", 4)
        + "  %cd : int = aten::mul(%c, %d)\n"
        + "  %hw : int = aten::mul(%h, %w)\n"
        + "  %plane_shape : int[] = prim::ListConstruct(%n, %cd, %h, %w)\n"
        + "  %planes : Tensor = aten::reshape(%x5, %plane_shape)\n"
    )


def _combine(with_indices: bool) -> str:
    """After ``%v2, %i2`` (the (H, W) pass) and ``%v3, %i3`` (the depth pass) give the
    result ``%out``: values, or (values, flat indices), in the input's batching."""
    body = (
        "  %od : int = aten::size(%v3, %two)\n"
        + "  %shape_out : int[] = prim::ListConstruct(%n, %c, %od, %oh, %ow)\n"
        + "  %v5 : Tensor = aten::reshape(%v3, %shape_out)\n"
        + choose("vals", "Tensor", "%unbatched",
                 ("  %v4 : Tensor = aten::squeeze(%v5, %zero)\n", "%v4"), ("", "%v5"))
    )
    if not with_indices:
        return body.replace("%vals", "%out")
    return body + (
        "  %ohw : int = aten::mul(%oh, %ow)\n"
        + "  %depth : Tensor = aten::floor_divide(%i3, %ohw)\n"
        + "  %rows : Tensor = aten::reshape(%i2, %col_shape)\n"
        + const("false", "bool", False)
        + "  %picked : Tensor = aten::gather(%rows, %two, %depth, %false)\n"
        + "  %offset : Tensor = aten::mul(%depth, %hw)\n"
        + "  %flat : Tensor = aten::add(%picked, %offset, %one)\n"
        + "  %i5 : Tensor = aten::reshape(%flat, %shape_out)\n"
        + choose("idx", "Tensor", "%unbatched",
                 ("  %i4 : Tensor = aten::squeeze(%i5, %zero)\n", "%i4"), ("", "%i5"))
        + "  %out : (Tensor, Tensor) = prim::TupleConstruct(%vals, %idx)\n"
    )


def _columns() -> str:
    """``%cols``: the (H, W) pass's values seen as (N, C, D, H'*W'), and its sizes."""
    return (
        const("two", "int", 2)
        + const("three", "int", 3)
        + "  %oh : int = aten::size(%v2, %two)\n"
        + "  %ow : int = aten::size(%v2, %three)\n"
        + "  %ohw_cols : int = aten::mul(%oh, %ow)\n"
        + "  %col_shape : int[] = prim::ListConstruct(%n, %c, %d, %ohw_cols)\n"
        + "  %cols : Tensor = aten::reshape(%v2, %col_shape)\n"
    )


def _max_pool3d(with_indices: bool) -> str:
    hw = "".join(
        _item(f"{p}{a}", f"%{src}", i)
        for p, src in (("k", "kernel_size"), ("s", "st"), ("p", "padding"), ("dl", "dilation"))
        for a, i in (("d", 0), ("h", 1), ("w", 2))
    )
    body = (
        _stride_or_kernel()
        + _batched()
        + hw
        + "  %k_hw : int[] = prim::ListConstruct(%kh, %kw)\n"
        + "  %s_hw : int[] = prim::ListConstruct(%sh, %sw)\n"
        + "  %p_hw : int[] = prim::ListConstruct(%ph, %pw)\n"
        + "  %d_hw : int[] = prim::ListConstruct(%dlh, %dlw)\n"
        + "  %v2 : Tensor, %i2 : Tensor = aten::max_pool2d_with_indices(%planes, %k_hw, %s_hw, %p_hw, %d_hw, "
        "%ceil_mode)\n"
        + _columns()
        + "  %k_d : int[] = prim::ListConstruct(%kd, %one)\n"
        + "  %s_d : int[] = prim::ListConstruct(%sd, %one)\n"
        + "  %p_d : int[] = prim::ListConstruct(%pd, %zero)\n"
        + "  %d_d : int[] = prim::ListConstruct(%dld, %one)\n"
        + "  %v3 : Tensor, %i3 : Tensor = aten::max_pool2d_with_indices(%cols, %k_d, %s_d, %p_d, %d_d, %ceil_mode)\n"
        + _combine(with_indices)
    )
    return graph(_POOL_PARAMS, body)


def _adaptive_max_pool3d(with_indices: bool) -> str:
    body = (
        _batched()
        + _item("od_req", "%output_size", 0) + _item("oh_req", "%output_size", 1) + _item("ow_req", "%output_size", 2)
        + "  %hw_req : int[] = prim::ListConstruct(%oh_req, %ow_req)\n"
        + "  %v2 : Tensor, %i2 : Tensor = aten::adaptive_max_pool2d(%planes, %hw_req)\n"
        + _columns()
        + "  %d_req : int[] = prim::ListConstruct(%od_req, %ohw_cols)\n"
        + "  %v3 : Tensor, %i3 : Tensor = aten::adaptive_max_pool2d(%cols, %d_req)\n"
        + _combine(with_indices)
    )
    return graph("%input : Tensor, %output_size : int[], %return_indices : bool", body)


def _lp_pool(n: int) -> str:
    """(avg_pool(x^p) * window size)^(1/p) with torch's sign(out) * relu(|out|) guard;
    p = +inf / -inf are max pools of |x| / -(max pool of -|x|)."""
    kernel_t = "int" if n == 1 else "int[]"
    kernel_list = ("  %k_list : int[] = prim::ListConstruct(%kernel_size)\n" if n == 1
                   else "  %k_list : int[] = aten::list(%kernel_size)\n")
    window = ("  %window : int = aten::mul(%kernel_size, %one)\n" if n == 1 else
              "  %k0 : int = aten::__getitem__(%kernel_size, %zero)\n"
              "  %k1 : int = aten::__getitem__(%kernel_size, %one)\n"
              "  %window : int = aten::mul(%k0, %k1)\n")
    zeros = "%zero" if n == 1 else "%zero, %zero"
    ones = "%one" if n == 1 else "%one, %one"
    max_pool = (
        f"  %no_pad : int[] = prim::ListConstruct({zeros})\n"
        f"  %no_dil : int[] = prim::ListConstruct({ones})\n"
        "  %abs : Tensor = aten::abs(%input)\n"
    )
    power = (
        "  %powered : Tensor = aten::pow(%input, %norm_type)\n"
        + f"  %avg : Tensor = aten::avg_pool{n}d(%powered, %k_list, %s, %no_pad, %ceil_mode, %true)\n"
        + "  %sign : Tensor = aten::sign(%avg)\n"
        + "  %mag : Tensor = aten::abs(%avg)\n"
        + "  %pos : Tensor = aten::relu(%mag)\n"
        + "  %guarded : Tensor = aten::mul(%sign, %pos)\n"
        + window
        + "  %summed : Tensor = aten::mul(%guarded, %window)\n"
        + const("unit", "float", 1.0)
        + "  %inv : Scalar = aten::div(%unit, %norm_type)\n"
        + "  %root : Tensor = aten::pow(%summed, %inv)\n"
    )
    body = (
        _stride()
        + const("zero", "int", 0)
        + const("one", "int", 1)
        + const("true", "bool", True)
        + kernel_list
        + max_pool
        + const("inf", "float", float("inf"))
        + const("ninf", "float", float("-inf"))
        + "  %is_inf : bool = aten::eq(%norm_type, %inf)\n"
        + "  %is_ninf : bool = aten::eq(%norm_type, %ninf)\n"
        + choose("out_n", "Tensor", "%is_ninf",
                 (("  %negabs : Tensor = aten::neg(%abs)\n"
                  f"  %mx_n : Tensor = aten::max_pool{n}d(%negabs, %k_list, %s, %no_pad, %no_dil, %ceil_mode)\n"
                  "  %mn : Tensor = aten::neg(%mx_n)\n"), "%mn"),
                 (power, "%root"))
        + choose("out", "Tensor", "%is_inf",
                 (f"  %mx : Tensor = aten::max_pool{n}d(%abs, %k_list, %s, %no_pad, %no_dil, %ceil_mode)\n", "%mx"),
                 ("", "%out_n"))
    )
    return graph(f"%input : Tensor, %norm_type : Scalar, %kernel_size : {kernel_t}, %stride : int[]?, "
                 "%ceil_mode : bool", body)


def _upsample(size_t: str, scale_t: str, mode: str | None, corners: bool | None) -> str:
    """A call of the known ``interpolate`` with the helper's fixed mode."""
    params = f"%input : Tensor, %size : {size_t}, %scale_factor : {scale_t}"
    body = const("none", "NoneType") + const("false", "bool", False)
    if mode is None:
        params += ", %mode : str, %align_corners : bool?"
        args = "%mode, %align_corners"
    else:
        body += const("mode", "str", mode)
        body += const("corners", "bool", corners) if corners is not None else ""
        args = "%mode, " + ("%corners" if corners is not None else "%none")
    body += call("out", "Tensor", "interpolate", f"%input, %size, %scale_factor, {args}, %none, %false")
    return graph(params, body)


_SIZE_SCALE = [("int?", "float[]?"), ("int[]?", "float[]?"), ("int?", "float?"), ("int[]?", "float?")]

BODIES: dict[str, list[str]] = {
    "_max_pool1d": [_max_pool(1, False)],
    "_max_pool2d": [_max_pool(2, False)],
    "_max_pool3d": [_max_pool3d(False)],
    "max_pool1d_with_indices": [_max_pool(1, True)],
    "max_pool2d_with_indices": [_max_pool(2, True)],
    "max_pool3d_with_indices": [_max_pool3d(True)],
    "_adaptive_max_pool1d": [_adaptive_max_pool(1, False)],
    "_adaptive_max_pool2d": [_adaptive_max_pool(2, False)],
    "_adaptive_max_pool3d": [_adaptive_max_pool3d(False)],
    "adaptive_max_pool1d_with_indices": [_adaptive_max_pool(1, True)],
    "adaptive_max_pool2d_with_indices": [_adaptive_max_pool(2, True)],
    "adaptive_max_pool3d_with_indices": [_adaptive_max_pool3d(True)],
    "lp_pool1d": [_lp_pool(1)],
    "lp_pool2d": [_lp_pool(2)],
    "upsample": [_upsample(s, f, None, None) for s, f in _SIZE_SCALE],
    "upsample_nearest": [_upsample(s, f, "nearest", None) for s, f in _SIZE_SCALE],
    "upsample_bilinear": [_upsample(s, f, "bilinear", True) for s, f in _SIZE_SCALE],
}
