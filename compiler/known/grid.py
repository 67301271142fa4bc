"""Known bodies of ``F.affine_grid`` and ``F.grid_sample`` (4-d input).

``affine_grid`` builds torch's base grid, the normalized coordinates of every output
pixel (``linspace(-1, 1, n)``, shrunk by ``(n - 1) / n`` without ``align_corners``, 0 for
a size of 1) with a trailing 1, and multiplies it by each ``theta`` (``bmm`` with
``theta`` transposed), for 2-d (N, 2, 3) and 3-d (N, 3, 4) transforms.

``grid_sample`` follows ATen's 2-d ``grid_sampler``: grid coordinates are unnormalized
to pixel units (``(g + 1) / 2 * (size - 1)`` with ``align_corners``, else
``((g + 1) * size - 1) / 2``); ``border`` clips them to the image, ``reflection``
reflects them about the image's edges (about pixel centers with ``align_corners``, about
the outer borders without, then clips).  Bilinear mode blends the four neighbouring
pixels with the usual weights, nearest mode takes the pixel at the coordinates rounded
half to even; a neighbour outside the image contributes 0.  Each neighbour is one
``gather`` on the image flattened to (N, C, H * W).  Bicubic mode and 5-d (volumetric)
input are not implemented and raise.
"""

from __future__ import annotations

from compiler.known.text import choose, const, graph, raise_if


def _check_choice(value: str, options: tuple[str, ...], message: str, tag: str) -> str:
    lines, conds = "", []
    for i, option in enumerate(options):
        lines += const(f"{tag}{i}", "str", option) + f"  %{tag}_is{i} : bool = aten::eq({value}, %{tag}{i})\n"
        conds.append(f"%{tag}_is{i}")
    lines += f"  %{tag}_ok01 : bool = aten::__or__({conds[0]}, {conds[1]})\n"
    lines += f"  %{tag}_ok : bool = aten::__or__(%{tag}_ok01, {conds[2]})\n"
    lines += f"  %{tag}_bad : bool = aten::__not__(%{tag}_ok)\n"
    return lines + raise_if(f"%{tag}_bad", message, f"{tag}_r")


def _unnormalize(axis: str, coord: str, size: str) -> str:
    """``%i{axis}``: pixel coordinates of the normalized ``coord`` along an axis of ``size``
    pixels, after the padding mode's clipping or reflection."""
    a = axis
    reflect_ac = _reflect(a, "ac", f"%{a}_raw", "%zero_f", f"%{a}_hi_ac")
    reflect_plain = _reflect(a, "pl", f"%{a}_raw", "%minus1_f", f"%{a}_hi_pl")
    return (
        f"  %{a}_size_f : float = aten::Float({size})\n"
        f"  %{a}_last : float = aten::sub(%{a}_size_f, %one_f)\n"
        f"  %{a}_p1 : Tensor = aten::add({coord}, %one, %one)\n"
        + choose(f"{a}_raw", "Tensor", "%ac",
                 ((f"  %{a}_half : Tensor = aten::div(%{a}_p1, %two)\n"
                  f"  %{a}_ac : Tensor = aten::mul(%{a}_half, %{a}_last)\n"), f"%{a}_ac"),
                 ((f"  %{a}_scaled : Tensor = aten::mul(%{a}_p1, %{a}_size_f)\n"
                  f"  %{a}_m1 : Tensor = aten::sub(%{a}_scaled, %one, %one)\n"
                  f"  %{a}_pl : Tensor = aten::div(%{a}_m1, %two)\n"), f"%{a}_pl"))
        + f"  %{a}_hi_ac : float = aten::mul(%{a}_last, %two_f)\n"
        + f"  %{a}_twice : float = aten::mul(%{a}_size_f, %two_f)\n"
        + f"  %{a}_hi_pl : float = aten::sub(%{a}_twice, %one_f)\n"
        + choose(f"{a}_refl", "Tensor", "%ac", (reflect_ac, f"%{a}_ac_r"), (reflect_plain, f"%{a}_pl_r"))
        + choose(f"{a}_moved", "Tensor", "%pm_is2", ("", f"%{a}_refl"), ("", f"%{a}_raw"))
        + f"  %{a}_clipped : Tensor = aten::clamp(%{a}_moved, %zero_f, %{a}_last)\n"
        + f"  %{a}_clip : bool = aten::__not__(%pm_is0)\n"
        + choose(f"i{a}", "Tensor", f"%{a}_clip", ("", f"%{a}_clipped"), ("", f"%{a}_raw"))
    )


def _reflect(a: str, tag: str, coord: str, twice_low: str, twice_high: str) -> str:
    """``%{a}_{tag}_r``: ``coord`` reflected into [twice_low / 2, twice_high / 2]."""
    p = f"{a}_{tag}"
    return (
        f"  %{p}_flat : bool = aten::eq({twice_low}, {twice_high})\n"
        f"  %{p}_lo : float = aten::div({twice_low}, %two_f)\n"
        f"  %{p}_width : float = aten::sub({twice_high}, {twice_low})\n"
        f"  %{p}_span : float = aten::div(%{p}_width, %two_f)\n"
        f"  %{p}_off : Tensor = aten::sub({coord}, %{p}_lo, %one)\n"
        f"  %{p}_dist : Tensor = aten::abs(%{p}_off)\n"
        f"  %{p}_safe : float = prim::max(%{p}_span, %one_f)\n"
        f"  %{p}_extra : Tensor = aten::fmod(%{p}_dist, %{p}_safe)\n"
        f"  %{p}_turns0 : Tensor = aten::div(%{p}_dist, %{p}_safe)\n"
        f"  %{p}_turns : Tensor = aten::floor(%{p}_turns0)\n"
        f"  %{p}_parity : Tensor = aten::remainder(%{p}_turns, %two)\n"
        f"  %{p}_even : Tensor = aten::eq(%{p}_parity, %zero)\n"
        f"  %{p}_up : Tensor = aten::add(%{p}_extra, %{p}_lo, %one)\n"
        f"  %{p}_back0 : Tensor = aten::rsub(%{p}_extra, %{p}_span, %one)\n"
        f"  %{p}_back : Tensor = aten::add(%{p}_back0, %{p}_lo, %one)\n"
        f"  %{p}_refl : Tensor = aten::where(%{p}_even, %{p}_up, %{p}_back)\n"
        f"  %{p}_zero : Tensor = aten::mul(%{p}_refl, %zero)\n"
        + choose(f"{p}_r", "Tensor", f"%{p}_flat", ("", f"%{p}_zero"), ("", f"%{p}_refl"))
    )


def _tap(tag: str, x: str, y: str, weight: str) -> str:
    """``%tap_{tag}``: the image at integer pixel coordinates (x, y) times ``weight``, 0
    outside the image; shaped (N, C, Ho * Wo)."""
    t = f"t_{tag}"
    return (
        f"  %{t}_x0 : Tensor = aten::ge({x}, %zero)\n"
        f"  %{t}_x1 : Tensor = aten::le({x}, %w_last)\n"
        f"  %{t}_y0 : Tensor = aten::ge({y}, %zero)\n"
        f"  %{t}_y1 : Tensor = aten::le({y}, %h_last)\n"
        f"  %{t}_in_x : Tensor = aten::logical_and(%{t}_x0, %{t}_x1)\n"
        f"  %{t}_in_y : Tensor = aten::logical_and(%{t}_y0, %{t}_y1)\n"
        f"  %{t}_in : Tensor = aten::logical_and(%{t}_in_x, %{t}_in_y)\n"
        f"  %{t}_xc : Tensor = aten::clamp({x}, %zero, %w_last)\n"
        f"  %{t}_yc : Tensor = aten::clamp({y}, %zero, %h_last)\n"
        f"  %{t}_row : Tensor = aten::mul(%{t}_yc, %w)\n"
        f"  %{t}_posf : Tensor = aten::add(%{t}_row, %{t}_xc, %one)\n"
        f"  %{t}_pos : Tensor = aten::to(%{t}_posf, %long, %false, %false, %none)\n"
        f"  %{t}_pos3 : Tensor = aten::reshape(%{t}_pos, %tap_shape)\n"
        f"  %{t}_idx : Tensor = aten::expand(%{t}_pos3, %wide, %false)\n"
        f"  %{t}_vals : Tensor = aten::gather(%flat, %two, %{t}_idx, %false)\n"
        f"  %{t}_w0 : Tensor = aten::where(%{t}_in, {weight}, %zero_f)\n"
        f"  %{t}_w : Tensor = aten::reshape(%{t}_w0, %tap_shape)\n"
        f"  %tap_{tag} : Tensor = aten::mul(%{t}_vals, %{t}_w)\n"
    )


def _grid_sample() -> str:
    bilinear = (
        "  %x0 : Tensor = aten::floor(%ix)\n"
        "  %y0 : Tensor = aten::floor(%iy)\n"
        "  %x1 : Tensor = aten::add(%x0, %one, %one)\n"
        "  %y1 : Tensor = aten::add(%y0, %one, %one)\n"
        "  %fx : Tensor = aten::sub(%ix, %x0, %one)\n"
        "  %fy : Tensor = aten::sub(%iy, %y0, %one)\n"
        "  %gx : Tensor = aten::rsub(%fx, %one, %one)\n"
        "  %gy : Tensor = aten::rsub(%fy, %one, %one)\n"
        "  %w_nw : Tensor = aten::mul(%gx, %gy)\n"
        "  %w_ne : Tensor = aten::mul(%fx, %gy)\n"
        "  %w_sw : Tensor = aten::mul(%gx, %fy)\n"
        "  %w_se : Tensor = aten::mul(%fx, %fy)\n"
        + _tap("nw", "%x0", "%y0", "%w_nw")
        + _tap("ne", "%x1", "%y0", "%w_ne")
        + _tap("sw", "%x0", "%y1", "%w_sw")
        + _tap("se", "%x1", "%y1", "%w_se")
        + "  %s_top : Tensor = aten::add(%tap_nw, %tap_ne, %one)\n"
        + "  %s_bottom : Tensor = aten::add(%tap_sw, %tap_se, %one)\n"
        + "  %s_bl : Tensor = aten::add(%s_top, %s_bottom, %one)\n"
    )
    nearest = (
        "  %xr : Tensor = aten::round(%ix)\n"
        "  %yr : Tensor = aten::round(%iy)\n"
        "  %ones : Tensor = aten::ones_like(%ix, %none, %none, %none, %none, %none)\n"
        + _tap("nn", "%xr", "%yr", "%ones")
    )
    body = (
        const("none", "NoneType")
        + const("false", "bool", False)
        + const("zero", "int", 0)
        + const("one", "int", 1)
        + const("two", "int", 2)
        + const("three", "int", 3)
        + const("four", "int", 4)
        + const("minus1", "int", -1)
        + const("long", "int", 4)
        + const("zero_f", "float", 0.0)
        + const("one_f", "float", 1.0)
        + const("two_f", "float", 2.0)
        + const("minus1_f", "float", -1.0)
        + _check_choice("%mode", ("bilinear", "nearest", "bicubic"),
                        "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic'", "md")
        + _check_choice("%padding_mode", ("zeros", "border", "reflection"),
                        "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection'",
                        "pm")
        + raise_if("%md_is2", "irvm: grid_sample with mode='bicubic' is not implemented", "cubic",
                   "builtins.RuntimeError")
        + "  %ac_given : bool = aten::__isnot__(%align_corners, %none)\n"
        + choose("ac", "bool", "%ac_given",
                 ("  %ac_v : bool = prim::unchecked_cast(%align_corners)\n", "%ac_v"), ("", "%false"))
        + "  %ndim : int = aten::dim(%input)\n"
        + "  %not4 : bool = aten::ne(%ndim, %four)\n"
        + raise_if("%not4", "irvm: grid_sample supports 4-D input only (volumetric 5-D sampling is not implemented)",
                   "rank", "builtins.RuntimeError")
        + "  %n : int = aten::size(%input, %zero)\n"
        + "  %c : int = aten::size(%input, %one)\n"
        + "  %h : int = aten::size(%input, %two)\n"
        + "  %w : int = aten::size(%input, %three)\n"
        + "  %h_last : int = aten::sub(%h, %one)\n"
        + "  %w_last : int = aten::sub(%w, %one)\n"
        + "  %ho : int = aten::size(%grid, %one)\n"
        + "  %wo : int = aten::size(%grid, %two)\n"
        + "  %flat_shape : int[] = prim::ListConstruct(%n, %c, %minus1)\n"
        + "  %flat : Tensor = aten::reshape(%input, %flat_shape)\n"
        + "  %tap_shape : int[] = prim::ListConstruct(%n, %one, %minus1)\n"
        + "  %wide : int[] = prim::ListConstruct(%n, %c, %minus1)\n"
        + "  %gx_n : Tensor = aten::select(%grid, %minus1, %zero)\n"
        + "  %gy_n : Tensor = aten::select(%grid, %minus1, %one)\n"
        + _unnormalize("x", "%gx_n", "%w")
        + _unnormalize("y", "%gy_n", "%h")
        + choose("sampled", "Tensor", "%md_is0", (bilinear, "%s_bl"), (nearest, "%tap_nn"))
        + "  %out_shape : int[] = prim::ListConstruct(%n, %c, %ho, %wo)\n"
        + "  %out : Tensor = aten::reshape(%sampled, %out_shape)\n"
    )
    return graph("%input : Tensor, %grid : Tensor, %mode : str, %padding_mode : str, %align_corners : bool?", body)


def _axis(name: str, size: str) -> str:
    """``%{name}``: torch's normalized coordinates of ``size`` pixels."""
    return (
        f"  %{name}_lin : Tensor = aten::linspace(%minus1_f, %one_f, {size}, %dtype, %none, %none, %none)\n"
        f"  %{name}_n : float = aten::Float({size})\n"
        f"  %{name}_n1 : float = aten::sub(%{name}_n, %one_f)\n"
        f"  %{name}_shrink : float = aten::div(%{name}_n1, %{name}_n)\n"
        + choose(f"{name}_scale", "float", "%ac", ("", "%one_f"), ("", f"%{name}_shrink"))
        + f"  %{name}_single : bool = aten::le({size}, %one)\n"
        + choose(f"{name}_factor", "float", f"%{name}_single", ("", "%zero_f"), ("", f"%{name}_scale"))
        + f"  %{name} : Tensor = aten::mul(%{name}_lin, %{name}_factor)\n"
    )


def _affine_arm(rank: int) -> str:
    """The grid for a (N, C, *spatial) size with ``rank`` spatial dims."""
    names = [f"{axis}{rank}" for axis in ["d", "h", "w"][3 - rank:]]
    lines = "".join(const(f"at_{n}", "int", i + 2) + f"  %{n} : int = aten::__getitem__(%size, %at_{n})\n"
                    for i, n in enumerate(names))
    lines += "".join(_axis(f"lin_{n}", f"%{n}") for n in names)
    full = ", ".join(f"%{n}" for n in names) + ", %one"
    lines += f"  %full_{rank} : int[] = prim::ListConstruct({full})\n"
    parts = []
    # x varies along the last spatial axis (w), y along h, z along d
    for n in reversed(names):
        view = ", ".join("%minus1" if m == n else "%one" for m in names) + ", %one"
        lines += (
            f"  %view_{n} : int[] = prim::ListConstruct({view})\n"
            f"  %col_{n}0 : Tensor = aten::reshape(%lin_{n}, %view_{n})\n"
            f"  %col_{n} : Tensor = aten::expand(%col_{n}0, %full_{rank}, %false)\n"
        )
        parts.append(f"%col_{n}")
    lines += (
        f"  %ones_{rank} : Tensor = aten::ones(%full_{rank}, %dtype, %none, %none, %none)\n"
        f"  %parts_{rank} : Tensor[] = prim::ListConstruct({', '.join(parts)}, %ones_{rank})\n"
        f"  %base_{rank} : Tensor = aten::cat(%parts_{rank}, %minus1)\n"
        f"  %k1_{rank} : int = prim::Constant[value={rank + 1}]()\n"
        f"  %flat_{rank} : int[] = prim::ListConstruct(%one, %minus1, %k1_{rank})\n"
        f"  %base_flat_{rank} : Tensor = aten::reshape(%base_{rank}, %flat_{rank})\n"
        f"  %batch_{rank} : int[] = prim::ListConstruct(%n, %minus1, %minus1)\n"
        f"  %base_b_{rank} : Tensor = aten::expand(%base_flat_{rank}, %batch_{rank}, %false)\n"
        f"  %theta_t_{rank} : Tensor = aten::transpose(%theta, %one, %two)\n"
        f"  %prod_{rank} : Tensor = aten::bmm(%base_b_{rank}, %theta_t_{rank})\n"
        f"  %rk_{rank} : int = prim::Constant[value={rank}]()\n"
        f"  %shape_{rank} : int[] = prim::ListConstruct(%n, {', '.join(f'%{n}' for n in names)}, %rk_{rank})\n"
        f"  %grid_{rank} : Tensor = aten::reshape(%prod_{rank}, %shape_{rank})\n"
    )
    return lines


def _affine_grid() -> str:
    body = (
        const("none", "NoneType")
        + const("false", "bool", False)
        + const("zero", "int", 0)
        + const("one", "int", 1)
        + const("two", "int", 2)
        + const("three", "int", 3)
        + const("four", "int", 4)
        + const("five", "int", 5)
        + const("minus1", "int", -1)
        + const("zero_f", "float", 0.0)
        + const("one_f", "float", 1.0)
        + const("minus1_f", "float", -1.0)
        + "  %ac_given : bool = aten::__isnot__(%align_corners, %none)\n"
        + choose("ac", "bool", "%ac_given",
                 ("  %ac_v : bool = prim::unchecked_cast(%align_corners)\n", "%ac_v"), ("", "%false"))
        + "  %floating : bool = aten::is_floating_point(%theta)\n"
        + "  %not_float : bool = aten::__not__(%floating)\n"
        + raise_if("%not_float", "Expected theta to have floating point type", "float")
        + "  %dtype : int = prim::dtype(%theta)\n"
        + "  %n : int = aten::__getitem__(%size, %zero)\n"
        + "  %len : int = aten::len(%size)\n"
        + "  %is4 : bool = aten::eq(%len, %four)\n"
        + "  %is5 : bool = aten::eq(%len, %five)\n"
        + "  %t_dim : int = aten::dim(%theta)\n"
        + "  %t_rows : int = aten::size(%theta, %minus1)\n"
        + "  %t_last2 : int = prim::Constant[value=-2]()\n"
        + "  %t_cols : int = aten::size(%theta, %t_last2)\n"
        + "  %t3 : bool = aten::eq(%t_dim, %three)\n"
        + "  %min_size : int = prim::min(%size)\n"
        + "  %nonpos : bool = aten::le(%min_size, %zero)\n"
        + "  %ac_off : bool = aten::__not__(%ac)\n"
        + "  %size_bad : bool = aten::__and__(%nonpos, %ac_off)\n"
        + raise_if("%size_bad", "Expected non-zero, positive output size", "size")
        + choose("out", "Tensor", "%is4",
                 ("  %c2 : bool = aten::eq(%t_cols, %two)\n  %r3 : bool = aten::eq(%t_rows, %three)\n"
                  "  %ok2a : bool = aten::__and__(%t3, %c2)\n  %ok2 : bool = aten::__and__(%ok2a, %r3)\n"
                  "  %bad2 : bool = aten::__not__(%ok2)\n"
                  + raise_if("%bad2", "Expected a batch of 2D affine matrices of shape Nx2x3", "shape2")
                  + _affine_arm(2), "%grid_2"),
                 ("  %not5 : bool = aten::__not__(%is5)\n"
                  + raise_if("%not5", "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                             "respectively", "rank", "builtins.NotImplementedError")
                  + "  %c3 : bool = aten::eq(%t_cols, %three)\n  %r4 : bool = aten::eq(%t_rows, %four)\n"
                  "  %ok3a : bool = aten::__and__(%t3, %c3)\n  %ok3 : bool = aten::__and__(%ok3a, %r4)\n"
                  "  %bad3 : bool = aten::__not__(%ok3)\n"
                  + raise_if("%bad3", "Expected a batch of 3D affine matrices of shape Nx3x4", "shape3")
                  + _affine_arm(3), "%grid_3"))
    )
    return graph("%theta : Tensor, %size : int[], %align_corners : bool?", body)


BODIES: dict[str, list[str]] = {"grid_sample": [_grid_sample()], "affine_grid": [_affine_grid()]}
