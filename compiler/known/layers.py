"""Templates of irvm's ``forward`` bodies for standard ``torch.nn`` layer classes.

``LAYERS`` maps a class's unmangled TorchScript qualname to a builder returning the text
of its forward graph (``%self`` of type ``text.SELF``, filled in by
``compiler.known.modules``), and the length of its ``int[]`` settings (``kernel_size=3``
of a Conv2d means ``[3, 3]``).  These are the families written from one pattern: the
1-3d convolutions, batch and instance norms, dropouts, activations (an operator and its
in-place variant), softmaxes, pools and padding layers passing their settings to one
operator.  Classes whose body is one fixed text (Linear, Bilinear, Identity, LayerNorm,
GroupNorm, Embedding, Flatten, GELU, Tanhshrink, Softmax2d) are IR in
``compiler/known/bodies/modules/layers.ir``.  The bodies follow the rules
``compiler.known.modules`` explains: every setting read from ``%self``, eval semantics,
PyTorch's input checks kept where a wrong input would otherwise give an answer instead of
torch's error.  The recurrent layers are in ``compiler.known.sequence``.
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.known.text import attr, choose, indent, ints, method, raise_if

NN = "__torch__.torch.nn.modules."


def _inplace_or_not(op: str, args: str = "", *, inplace_op: str | None = None) -> str:
    """``op(input, args)``, or its in-place variant when the module's ``inplace`` is set."""
    extra = f", {args}" if args else ""
    return attr("inplace", "bool") + choose(
        "out", "Tensor", "%inplace",
        (f"  %out_a : Tensor = {inplace_op or op + '_'}(%input{extra})\n", "%out_a"),
        (f"  %out_b : Tensor = {op}(%input{extra})\n", "%out_b"),
    )


def _unary(op: str) -> Callable[[], str]:
    return lambda: method("%input : Tensor", f"  %out : Tensor = {op}(%input)\n")


def _activation(op: str, attrs: tuple[tuple[str, str], ...] = (), consts: str = "") -> Callable[[], str]:
    """``op(input, *attrs, *consts)``; ``consts`` are ``name=value`` float constants."""
    fixed = [c.split("=") for c in consts.split()]

    def build() -> str:
        reads = "".join(attr(n, t) for n, t in attrs)
        reads += "".join(f"  %{n} : float = prim::Constant[value={v}]()\n" for n, v in fixed)
        args = ", ".join([f"%{n}" for n, _ in attrs] + [f"%{n}" for n, _ in fixed])
        return method("%input : Tensor", reads + _inplace_or_not(op, args))

    return build


def _conv(n: int) -> Callable[[], str]:
    def build() -> str:
        reads = "".join(
            attr(name, t)
            for name, t in [("weight", "Tensor"), ("bias", "Tensor?"), ("stride", "int[]"), ("padding", "int[]"),
                            ("dilation", "int[]"), ("groups", "int"), ("padding_mode", "str")]
        )
        # padding_mode != "zeros": pad explicitly (F.pad's pad list runs from the last
        # dimension back, each side twice), then convolve without padding
        pads = "".join(f"  %p{i} : int = aten::__getitem__(%padding, %i{i})\n" for i in range(n))
        idx = "".join(f"  %i{i} : int = prim::Constant[value={i}]()\n" for i in range(n))
        order = ", ".join(f"%p{i}, %p{i}" for i in reversed(range(n)))
        op = f"aten::conv{n}d"
        body = (
            reads
            + '  %zeros : str = prim::Constant[value="zeros"]()\n'
            + "  %is_zeros : bool = aten::eq(%padding_mode, %zeros)\n"
            + "  %out : Tensor = prim::If(%is_zeros)\n"
            + "    block0():\n"
            + f"      %out_a : Tensor = {op}(%input, %weight, %bias, %stride, %padding, %dilation, %groups)\n"
            + "      -> (%out_a)\n"
            + "    block1():\n"
            + indent(idx + pads + f"  %pad : int[] = prim::ListConstruct({order})\n"
                      + "  %none : NoneType = prim::Constant()\n"
                      + "  %padded : Tensor = aten::pad(%input, %pad, %padding_mode, %none)\n"
                      + ints("no_pad", [0] * n)
                      + f"  %out_b : Tensor = {op}(%padded, %weight, %bias, %stride, %no_pad, %dilation, %groups)\n")
            + "      -> (%out_b)\n"
        )
        return method("%input : Tensor", body)

    return build


def _conv_transpose(n: int) -> Callable[[], str]:
    def build() -> str:
        reads = "".join(
            attr(name, t)
            for name, t in [("weight", "Tensor"), ("bias", "Tensor?"), ("stride", "int[]"), ("padding", "int[]"),
                            ("output_padding", "int[]"), ("groups", "int"), ("dilation", "int[]"),
                            ("padding_mode", "str")]
        )
        body = (
            reads
            + '  %zeros : str = prim::Constant[value="zeros"]()\n'
            + "  %not_zeros : bool = aten::ne(%padding_mode, %zeros)\n"
            + raise_if("%not_zeros", f"ValueError: Only 'zeros' padding mode is supported for ConvTranspose{n}d",
                       "mode", None)
            + "  %none : NoneType = prim::Constant()\n"
            + "  %sized : bool = aten::__isnot__(%output_size, %none)\n"
            + raise_if("%sized", f"irvm: ConvTranspose{n}d with an output_size argument is not supported", "size", None)
            + f"  %out : Tensor = aten::conv_transpose{n}d(%input, %weight, %bias, %stride, %padding, "
            "%output_padding, %groups, %dilation)\n"
        )
        return method("%input : Tensor, %output_size : int[]?", body)

    return build


def _dim_check(allowed: tuple[int, ...], name: str) -> str:
    """Raise PyTorch's ValueError unless ``input.dim()`` is one of ``allowed``."""
    text = " or ".join(f"{d}D" for d in allowed)
    checks = "".join(f"  %dim_{d} : bool = aten::ne(%ndim, %c{d})\n" for d in allowed)
    consts = "".join(f"  %c{d} : int = prim::Constant[value={d}]()\n" for d in allowed)
    conds = [f"%dim_{d}" for d in allowed]
    combine, last = "", conds[0]
    for i, c in enumerate(conds[1:]):
        combine += f"  %dim_all{i} : bool = aten::__and__({last}, {c})\n"
        last = f"%dim_all{i}"
    return (
        "  %ndim : int = aten::dim(%input)\n" + consts + checks + combine
        + raise_if(last, f"ValueError: {name}: expected {text} input", "dim", None)
    )


def _batch_norm(allowed: tuple[int, ...], name: str) -> Callable[[], str]:
    def build() -> str:
        body = (
            attr("training", "bool", required=True)
            + raise_if("%training", f"irvm: {name} in training mode updates running statistics; irvm runs "
                        "inference (set the module's `training` attribute to False)", "train", None)
            + _dim_check(allowed, name)
            + "".join(attr(n, "Tensor?") for n in ("weight", "bias", "running_mean", "running_var"))
            + attr("eps", "float")
            # eval: batch statistics only when the module keeps no running ones
            + "  %none : NoneType = prim::Constant()\n"
            + "  %no_mean : bool = aten::__is__(%running_mean, %none)\n"
            + "  %no_var : bool = aten::__is__(%running_var, %none)\n"
            + "  %batch_stats : bool = aten::__and__(%no_mean, %no_var)\n"
            + "  %momentum : float = prim::Constant[value=0.]()\n"
            + "  %cudnn : bool = prim::Constant[value=0]()\n"
            + "  %out : Tensor = aten::batch_norm(%input, %weight, %bias, %running_mean, %running_var, "
            "%batch_stats, %momentum, %eps, %cudnn)\n"
        )
        return method("%input : Tensor", body)

    return build


def _instance_norm(n: int) -> Callable[[], str]:
    name = f"InstanceNorm{n}d"

    def build() -> str:
        norm = (
            "  %use_input_stats : bool = aten::__or__(%training, %untracked)\n"
            "  %momentum : float = prim::Constant[value=0.]()\n"
            "  %cudnn : bool = prim::Constant[value=0]()\n"
        )
        call = ("aten::instance_norm({x}, %weight, %bias, %running_mean, %running_var, %use_input_stats, "
                "%momentum, %eps, %cudnn)")
        body = (
            attr("training", "bool", required=True)
            + attr("track_running_stats", "bool")
            + "  %update : bool = aten::__and__(%training, %track_running_stats)\n"
            + raise_if("%update", f"irvm: {name} in training mode updates running statistics; irvm runs "
                        "inference (set the module's `training` attribute to False)", "train", None)
            + "  %untracked : bool = aten::__not__(%track_running_stats)\n"
            + _dim_check((n + 1, n + 2), name)
            + "".join(attr(a, "Tensor?") for a in ("weight", "bias", "running_mean", "running_var"))
            + attr("eps", "float")
            + norm
            + "  %zero : int = prim::Constant[value=0]()\n"
            + "  %unbatched : bool = aten::eq(%ndim, %c" + str(n + 1) + ")\n"
            + "  %out : Tensor = prim::If(%unbatched)\n"
            + "    block0():\n"
            + "      %batched : Tensor = aten::unsqueeze(%input, %zero)\n"
            + f"      %normed : Tensor = {call.format(x='%batched')}\n"
            + "      %out_a : Tensor = aten::squeeze(%normed, %zero)\n"
            + "      -> (%out_a)\n"
            + "    block1():\n"
            + f"      %out_b : Tensor = {call.format(x='%input')}\n"
            + "      -> (%out_b)\n"
        )
        return method("%input : Tensor", body)

    return build


def _dropout(name: str, allowed: tuple[int, ...] = ()) -> Callable[[], str]:
    """Eval mode: the input itself (PyTorch returns it, not a copy); training raises (the
    channel-wise dropouts, whose unbatched inputs torch reshapes first)."""

    def build() -> str:
        body = (
            attr("training", "bool", required=True)
            + raise_if("%training", f"irvm: {name} in training mode is not supported; irvm runs it in eval mode "
                       "(set the module's `training` attribute to False)", "train", None)
            + (_dim_check(allowed, name) if allowed else "")
        )
        return method("%input : Tensor", body, "%input")

    return build


def _random_dropout(op: str) -> Callable[[], str]:
    """``aten::dropout`` / ``aten::alpha_dropout`` (in place when ``inplace``): the input
    itself in eval mode, a draw from the runtime's generator in training."""

    def build() -> str:
        body = (
            attr("training", "bool", required=True) + attr("p", "float")
            + _inplace_or_not(f"aten::{op}", "%p, %training")
        )
        return method("%input : Tensor", body)

    return build


def _softmax(op: str, negate: bool = False) -> Callable[[], str]:
    """``op(input, dim)`` (Softmin: of ``-input``), ``dim`` None meaning PyTorch's legacy
    choice."""

    def build() -> str:
        # dim=None: PyTorch's legacy choice, 0 for 0-, 1- and 3-dimensional inputs, else 1
        body = (
            attr("dim", "int?", required=True)
            + "  %none : NoneType = prim::Constant()\n"
            + "  %implicit : bool = aten::__is__(%dim, %none)\n"
            + "  %axis : int = prim::If(%implicit)\n"
            + "    block0():\n"
            + "      %nd : int = aten::dim(%input)\n"
            + "      %legacy : int[] = prim::ListConstruct(%c0, %c1, %c3)\n"
            + "      %first : bool = aten::__contains__(%legacy, %nd)\n"
            + "      %chosen : int = prim::If(%first)\n"
            + "        block0():\n"
            + "          -> (%c0)\n"
            + "        block1():\n"
            + "          -> (%c1)\n"
            + "      -> (%chosen)\n"
            + "    block1():\n"
            + "      %given : int = prim::unchecked_cast(%dim)\n"
            + "      -> (%given)\n"
            + ("  %negated : Tensor = aten::neg(%input)\n" if negate else "")
            + f"  %out : Tensor = {op}({'%negated' if negate else '%input'}, %axis, %none)\n"
        )
        consts = "".join(f"  %c{v} : int = prim::Constant[value={v}]()\n" for v in (0, 1, 3))
        return method("%input : Tensor", consts + body)

    return build


def _call(op: str, attrs: list[tuple[str, str]], extra: str = "") -> Callable[[], str]:
    """``op(input, *attrs, *extra)``: the module's settings passed straight to one operator
    (``extra``: IR constants after them, ``"float 0."``)."""
    consts = [(f"c{i}", item.split()) for i, item in enumerate(extra.split(",")) if item.strip()]

    def build() -> str:
        reads = "".join(attr(n, t, required=t.endswith("?")) for n, t in attrs)
        reads += "".join(
            f"  %{n} : {t} = prim::Constant" + (f"[value={v[0]}]" if v else "") + "()\n" for n, (t, *v) in consts
        )
        args = "".join(f", %{n}" for n, _ in attrs) + "".join(f", %{n}" for n, _ in consts)
        return method("%input : Tensor", reads + f"  %out : Tensor = {op}(%input{args})\n")

    return build


def _adaptive_max_pool(n: int) -> Callable[[], str]:
    def build() -> str:
        body = (
            attr("output_size", "int[]")
            + f"  %out : Tensor, %indices : Tensor = aten::adaptive_max_pool{n}d(%input, %output_size)\n"
        )
        return method("%input : Tensor", body)

    return build


_MAX_POOL = [("kernel_size", "int[]"), ("stride", "int[]"), ("padding", "int[]"), ("dilation", "int[]"),
             ("ceil_mode", "bool")]
_AVG_POOL = [("kernel_size", "int[]"), ("stride", "int[]"), ("padding", "int[]"), ("ceil_mode", "bool"),
             ("count_include_pad", "bool")]

# base class qualname -> (body builder, rank of its int[] attributes: an int setting such
# as kernel_size=3 means [3] * rank)
LAYERS: dict[str, tuple[Callable[[], str], int]] = {
    NN + "conv.Conv1d": (_conv(1), 1),
    NN + "conv.Conv2d": (_conv(2), 2),
    NN + "conv.Conv3d": (_conv(3), 3),
    NN + "conv.ConvTranspose1d": (_conv_transpose(1), 1),
    NN + "conv.ConvTranspose2d": (_conv_transpose(2), 2),
    NN + "batchnorm.BatchNorm1d": (_batch_norm((2, 3), "BatchNorm1d"), 0),
    NN + "batchnorm.BatchNorm2d": (_batch_norm((4,), "BatchNorm2d"), 0),
    NN + "batchnorm.BatchNorm3d": (_batch_norm((5,), "BatchNorm3d"), 0),
    NN + "instancenorm.InstanceNorm1d": (_instance_norm(1), 0),
    NN + "instancenorm.InstanceNorm2d": (_instance_norm(2), 0),
    NN + "instancenorm.InstanceNorm3d": (_instance_norm(3), 0),
    NN + "dropout.Dropout": (_random_dropout("dropout"), 0),
    NN + "dropout.Dropout1d": (_dropout("Dropout1d", (2, 3)), 0),
    NN + "dropout.Dropout2d": (_dropout("Dropout2d"), 0),
    NN + "dropout.Dropout3d": (_dropout("Dropout3d"), 0),
    NN + "dropout.AlphaDropout": (_random_dropout("alpha_dropout"), 0),
    NN + "activation.ReLU": (_activation("aten::relu"), 0),
    NN + "activation.ReLU6": (_activation("aten::hardtanh", consts="lo=0. hi=6."), 0),
    NN + "activation.Hardtanh": (_activation("aten::hardtanh", (("min_val", "float"), ("max_val", "float"))), 0),
    NN + "activation.LeakyReLU": (_activation("aten::leaky_relu", (("negative_slope", "float"),)), 0),
    NN + "activation.ELU": (_activation("aten::elu", (("alpha", "float"),)), 0),
    NN + "activation.SiLU": (_activation("aten::silu"), 0),
    NN + "activation.Hardswish": (_activation("aten::hardswish"), 0),
    NN + "activation.Hardsigmoid": (_activation("aten::hardsigmoid"), 0),
    NN + "activation.Mish": (_activation("aten::mish"), 0),
    NN + "activation.Sigmoid": (_unary("aten::sigmoid"), 0),
    NN + "activation.Tanh": (_unary("aten::tanh"), 0),
    NN + "activation.Softmax": (_softmax("aten::softmax"), 0),
    NN + "activation.LogSoftmax": (_softmax("aten::log_softmax"), 0),
    NN + "pooling.MaxPool1d": (_call("aten::max_pool1d", _MAX_POOL), 1),
    NN + "pooling.MaxPool2d": (_call("aten::max_pool2d", _MAX_POOL), 2),
    NN + "pooling.AvgPool1d": (_call("aten::avg_pool1d", _AVG_POOL), 1),
    NN + "pooling.AvgPool2d": (_call("aten::avg_pool2d", _AVG_POOL + [("divisor_override", "int?")]), 2),
    NN + "pooling.AdaptiveAvgPool1d": (_call("aten::adaptive_avg_pool1d", [("output_size", "int[]")]), 1),
    NN + "pooling.AdaptiveAvgPool2d": (_call("aten::adaptive_avg_pool2d", [("output_size", "int[]")]), 2),
    NN + "pooling.AdaptiveMaxPool1d": (_adaptive_max_pool(1), 1),
    NN + "pooling.AdaptiveMaxPool2d": (_adaptive_max_pool(2), 2),
    NN + "flatten.Unflatten": (_call("aten::unflatten", [("dim", "int"), ("unflattened_size", "int[]")]), 0),
    NN + "activation.PReLU": (_call("aten::prelu", [("weight", "Tensor")]), 0),
    NN + "activation.Softplus": (_call("aten::softplus", [("beta", "float"), ("threshold", "float")]), 0),
    NN + "activation.CELU": (_activation("aten::celu", (("alpha", "float"),)), 0),
    NN + "activation.SELU": (_activation("aten::selu"), 0),
    NN + "activation.Threshold": (_activation("aten::threshold", (("threshold", "float"), ("value", "float"))), 0),
    NN + "activation.GLU": (_call("aten::glu", [("dim", "int")]), 0),
    NN + "activation.LogSigmoid": (_unary("aten::log_sigmoid"), 0),
    NN + "activation.Softshrink": (_call("aten::softshrink", [("lambd", "float")]), 0),
    NN + "activation.Hardshrink": (_call("aten::hardshrink", [("lambd", "float")]), 0),
    NN + "activation.Softmin": (_softmax("aten::softmax", negate=True), 0),
    NN + "pixelshuffle.PixelShuffle": (_call("aten::pixel_shuffle", [("upscale_factor", "int")]), 0),
    NN + "pixelshuffle.PixelUnshuffle": (_call("aten::pixel_unshuffle", [("downscale_factor", "int")]), 0),
    # padding layers: `padding` holds both sides of each padded dimension, last first
    NN + "padding.ZeroPad1d": (_call("aten::constant_pad_nd", [("padding", "int[]"), ("value", "float")]), 2),
    NN + "padding.ZeroPad2d": (_call("aten::constant_pad_nd", [("padding", "int[]"), ("value", "float")]), 4),
    NN + "padding.ConstantPad1d": (_call("aten::constant_pad_nd", [("padding", "int[]"), ("value", "float")]), 2),
    NN + "padding.ConstantPad2d": (_call("aten::constant_pad_nd", [("padding", "int[]"), ("value", "float")]), 4),
    NN + "padding.ReflectionPad1d": (_call("aten::pad", [("padding", "int[]")], 'str "reflect", NoneType'), 2),
    NN + "padding.ReflectionPad2d": (_call("aten::pad", [("padding", "int[]")], 'str "reflect", NoneType'), 4),
    NN + "padding.ReplicationPad1d": (_call("aten::pad", [("padding", "int[]")], 'str "replicate", NoneType'), 2),
    NN + "padding.ReplicationPad2d": (_call("aten::pad", [("padding", "int[]")], 'str "replicate", NoneType'), 4),
}

CONTAINERS = {NN + "container.Sequential", NN + "container.ModuleList", NN + "container.ModuleDict"}
