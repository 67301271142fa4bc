"""Known bodies of ``F.unfold`` (im2col) and ``F.fold`` (col2im).

``vm.ops`` has neither operator; both are one indexed copy.  After zero padding, the
pixel that kernel offset (i, j) of sliding block (y, x) reads sits at the flat position
``(i * dilation_h + y * stride_h) * W_padded + (j * dilation_w + x * stride_w)``; the
bodies build these positions for all (i, j, y, x) at once from four ``arange`` vectors
broadcast against each other.  ``unfold`` gathers the padded image at them, which gives
torch's (N, C * kh * kw, blocks) layout after a reshape; ``fold`` scatter-adds the
columns at them into a zero padded image (overlapping blocks sum, as col2im does) and
crops the padding.  Unbatched inputs (3-d for unfold, 2-d for fold) work as a batch of
one.  The size checks are torch's: at least one sliding block, and for ``fold`` a block
count and channel count that match the sizes.
"""

from __future__ import annotations

from compiler.known.text import choose, const, graph, raise_if


def _item(name: str, values: str, index: str) -> str:
    return f"  %{name} : int = aten::__getitem__({values}, {index})\n"


def _blocks(height: str, width: str) -> str:
    """Sizes of the padded image and block grid, and ``%where``: the flat positions read
    by every (i, j, y, x), shaped (1, 1, kh * kw * oh * ow)."""
    lines = ""
    for axis, size, k, d, p, s in (("h", height, "%kh", "%dh", "%ph", "%sh"), ("w", width, "%kw", "%dw", "%pw", "%sw")):
        lines += (
            f"  %pad2_{axis} : int = aten::mul({p}, %two)\n"
            f"  %padded_{axis} : int = aten::add({size}, %pad2_{axis})\n"
            f"  %k1_{axis} : int = aten::sub({k}, %one)\n"
            f"  %span_{axis} : int = aten::mul({d}, %k1_{axis})\n"
            f"  %room_{axis} : int = aten::sub(%padded_{axis}, %span_{axis})\n"
            f"  %room1_{axis} : int = aten::sub(%room_{axis}, %one)\n"
            f"  %steps_{axis} : int = aten::floordiv(%room1_{axis}, {s})\n"
            f"  %o{axis} : int = aten::add(%steps_{axis}, %one)\n"
            f"  %few_{axis} : bool = aten::lt(%o{axis}, %one)\n"
        )
    lines += "  %too_few : bool = aten::__or__(%few_h, %few_w)\n" + raise_if(
        "%too_few", "the calculated shape of the array of sliding blocks must have components of at least one",
        "few", "builtins.RuntimeError")
    for name, count, step, shape in (("ki", "%kh", "%dh", "%kh, %one, %one, %one"),
                                     ("kj", "%kw", "%dw", "%one, %kw, %one, %one"),
                                     ("by", "%oh", "%sh", "%one, %one, %oh, %one"),
                                     ("bx", "%ow", "%sw", "%one, %one, %one, %ow")):
        lines += (
            f"  %{name}_r : Tensor = aten::arange({count}, %long, %none, %none, %none)\n"
            f"  %{name}_s : Tensor = aten::mul(%{name}_r, {step})\n"
            f"  %{name}_shape : int[] = prim::ListConstruct({shape})\n"
            f"  %{name} : Tensor = aten::reshape(%{name}_s, %{name}_shape)\n"
        )
    return lines + (
        "  %rows : Tensor = aten::add(%ki, %by, %one)\n"
        "  %cols : Tensor = aten::add(%kj, %bx, %one)\n"
        "  %row_starts : Tensor = aten::mul(%rows, %padded_w)\n"
        "  %pos : Tensor = aten::add(%row_starts, %cols, %one)\n"
        "  %where_shape : int[] = prim::ListConstruct(%one, %one, %minus1)\n"
        "  %where : Tensor = aten::reshape(%pos, %where_shape)\n"
    )


def _params() -> str:
    return (
        const("none", "NoneType")
        + const("zero", "int", 0)
        + const("one", "int", 1)
        + const("two", "int", 2)
        + const("three", "int", 3)
        + const("minus1", "int", -1)
        + const("long", "int", 4)
        + const("false", "bool", False)
        + "".join(_item(n, v, i) for n, v, i in (
            ("kh", "%kernel_size", "%zero"), ("kw", "%kernel_size", "%one"), ("dh", "%dilation", "%zero"),
            ("dw", "%dilation", "%one"), ("ph", "%padding", "%zero"), ("pw", "%padding", "%one"),
            ("sh", "%stride", "%zero"), ("sw", "%stride", "%one")))
    )


def _unfold() -> str:
    body = (
        _params()
        + "  %ndim : int = aten::dim(%input)\n"
        + const("four", "int", 4)
        + "  %is3 : bool = aten::eq(%ndim, %three)\n"
        + "  %is4 : bool = aten::eq(%ndim, %four)\n"
        + "  %rank_ok : bool = aten::__or__(%is3, %is4)\n"
        + "  %rank_bad : bool = aten::__not__(%rank_ok)\n"
        + raise_if("%rank_bad", "Expected 3D or 4D (batch mode) tensor for input", "rank", "builtins.RuntimeError")
        + choose("x4", "Tensor", "%is3", ("  %x_b : Tensor = aten::unsqueeze(%input, %zero)\n", "%x_b"),
                 ("", "%input"))
        + "  %sizes : int[] = aten::size(%x4)\n"
        + _item("n", "%sizes", "%zero") + _item("c", "%sizes", "%one")
        + _item("h", "%sizes", "%two") + _item("w", "%sizes", "%three")
        + _blocks("%h", "%w")
        + "  %pads : int[] = prim::ListConstruct(%pw, %pw, %ph, %ph)\n"
        + const("fill", "float", 0.0)
        + "  %padded : Tensor = aten::constant_pad_nd(%x4, %pads, %fill)\n"
        + "  %area : int = aten::mul(%padded_h, %padded_w)\n"
        + "  %flat_shape : int[] = prim::ListConstruct(%n, %c, %area)\n"
        + "  %flat : Tensor = aten::reshape(%padded, %flat_shape)\n"
        + "  %wide : int[] = prim::ListConstruct(%n, %c, %minus1)\n"
        + "  %index : Tensor = aten::expand(%where, %wide, %false)\n"
        + "  %picked : Tensor = aten::gather(%flat, %two, %index, %false)\n"
        + "  %kk : int = aten::mul(%kh, %kw)\n"
        + "  %ckk : int = aten::mul(%c, %kk)\n"
        + "  %blocks : int = aten::mul(%oh, %ow)\n"
        + "  %cols_shape : int[] = prim::ListConstruct(%n, %ckk, %blocks)\n"
        + "  %columns : Tensor = aten::reshape(%picked, %cols_shape)\n"
        + choose("out", "Tensor", "%is3", ("  %col_u : Tensor = aten::squeeze(%columns, %zero)\n", "%col_u"),
                 ("", "%columns"))
    )
    return graph("%input : Tensor, %kernel_size : int[], %dilation : int[], %padding : int[], %stride : int[]", body)


def _fold() -> str:
    body = (
        _params()
        + "  %ndim : int = aten::dim(%input)\n"
        + "  %is2 : bool = aten::eq(%ndim, %two)\n"
        + "  %is3 : bool = aten::eq(%ndim, %three)\n"
        + "  %rank_ok : bool = aten::__or__(%is2, %is3)\n"
        + "  %rank_bad : bool = aten::__not__(%rank_ok)\n"
        + raise_if("%rank_bad", "Expected 2D or 3D (batch mode) tensor for input", "rank", "builtins.RuntimeError")
        + choose("x3", "Tensor", "%is2", ("  %x_b : Tensor = aten::unsqueeze(%input, %zero)\n", "%x_b"),
                 ("", "%input"))
        + "  %sizes : int[] = aten::size(%x3)\n"
        + _item("n", "%sizes", "%zero") + _item("ckk", "%sizes", "%one") + _item("length", "%sizes", "%two")
        + _item("h", "%output_size", "%zero") + _item("w", "%output_size", "%one")
        + _blocks("%h", "%w")
        + "  %kk : int = aten::mul(%kh, %kw)\n"
        + "  %rest : int = aten::remainder(%ckk, %kk)\n"
        + "  %uneven : bool = aten::ne(%rest, %zero)\n"
        + raise_if("%uneven", "Expected size of input's dimension 1 to be divisible by the product of kernel_size",
                   "div", "builtins.RuntimeError")
        + "  %blocks : int = aten::mul(%oh, %ow)\n"
        + "  %count_bad : bool = aten::ne(%length, %blocks)\n"
        + raise_if("%count_bad", "Expected size of input's dimension 2 to match the calculated number of sliding "
                   "blocks", "count", "builtins.RuntimeError")
        + "  %c : int = aten::floordiv(%ckk, %kk)\n"
        + "  %vals_shape : int[] = prim::ListConstruct(%n, %c, %minus1)\n"
        + "  %vals : Tensor = aten::reshape(%x3, %vals_shape)\n"
        + "  %area : int = aten::mul(%padded_h, %padded_w)\n"
        + "  %canvas_shape : int[] = prim::ListConstruct(%n, %c, %area)\n"
        + "  %canvas : Tensor = aten::new_zeros(%x3, %canvas_shape, %none, %none, %none, %none)\n"
        + "  %index : Tensor = aten::expand(%where, %vals_shape, %false)\n"
        + "  %summed : Tensor = aten::scatter_add(%canvas, %two, %index, %vals)\n"
        + "  %img_shape : int[] = prim::ListConstruct(%n, %c, %padded_h, %padded_w)\n"
        + "  %img : Tensor = aten::reshape(%summed, %img_shape)\n"
        + "  %h_end : int = aten::add(%ph, %h)\n"
        + "  %w_end : int = aten::add(%pw, %w)\n"
        + "  %crop_h : Tensor = aten::slice(%img, %two, %ph, %h_end, %one)\n"
        + "  %crop : Tensor = aten::slice(%crop_h, %three, %pw, %w_end, %one)\n"
        + choose("out", "Tensor", "%is2", ("  %img_u : Tensor = aten::squeeze(%crop, %zero)\n", "%img_u"),
                 ("", "%crop"))
    )
    return graph("%input : Tensor, %output_size : int[], %kernel_size : int[], %dilation : int[], %padding : int[], "
                 "%stride : int[]", body)


BODIES: dict[str, list[str]] = {"unfold": [_unfold()], "fold": [_fold()]}
