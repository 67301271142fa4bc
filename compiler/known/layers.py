"""The IR text of irvm's ``forward`` bodies for standard ``torch.nn`` classes.

``LAYERS`` maps a class's unmangled TorchScript qualname to a builder returning the text
of its forward graph, with ``$SELF`` for the type of ``%self``, and the length of its
``int[]`` settings (``kernel_size=3`` of a Conv2d means ``[3, 3]``).  The bodies follow
the rules ``compiler.known.modules`` explains: every setting read from ``%self``, eval
semantics, PyTorch's input checks kept where a wrong input would otherwise give an answer
instead of torch's error.  The builders are small string functions (``_attr`` reads a
setting, ``_raise_if`` raises as TorchScript prints a ``raise``), so that each body can
be read as the IR it produces (``print(compiler.known.modules.known_forward(q))``).
The sequence models (recurrent layers, attention, the transformer encoder layer) are in
``compiler.known.sequence``.
"""

from __future__ import annotations

from collections.abc import Callable

NN = "__torch__.torch.nn.modules."

def _attr(name: str, type_: str, *, required: bool = False) -> str:
    flag = ", required=1" if required else ""
    return f'  %{name} : {type_} = prim::GetAttr[name="{name}"{flag}](%self)\n'


def _graph(params: str, body: str, result: str = "%out") -> str:
    return f"graph(%self : $SELF, {params}):\n{body}  return ({result})\n"


def _raise_if(cond: str, message: str, tag: str) -> str:
    """Raise ``message`` when the bool ``cond`` holds (as TorchScript prints a raise)."""
    text = message.replace("\\", "\\\\").replace('"', '\\"')
    return (
        f'  %{tag}_msg : str = prim::Constant[value="{text}"]()\n'
        f"  %{tag}_cls : NoneType = prim::Constant()\n"
        f"   = prim::If({cond})\n"
        f"    block0():\n"
        f"       = prim::RaiseException(%{tag}_msg, %{tag}_cls)\n"
        f"      -> ()\n"
        f"    block1():\n"
        f"      -> ()\n"
    )


def _ints(name: str, values: list[int]) -> str:
    consts = "".join(f"  %{name}_{i} : int = prim::Constant[value={v}]()\n" for i, v in enumerate(values))
    items = ", ".join(f"%{name}_{i}" for i in range(len(values)))
    return consts + f"  %{name} : int[] = prim::ListConstruct({items})\n"


def _inplace_or_not(op: str, args: str = "", *, inplace_op: str | None = None) -> str:
    """``op(input, args)``, or its in-place variant when the module's ``inplace`` is set."""
    extra = f", {args}" if args else ""
    return (
        _attr("inplace", "bool")
        + "  %out : Tensor = prim::If(%inplace)\n"
        + "    block0():\n"
        + f"      %out_a : Tensor = {inplace_op or op + '_'}(%input{extra})\n"
        + "      -> (%out_a)\n"
        + "    block1():\n"
        + f"      %out_b : Tensor = {op}(%input{extra})\n"
        + "      -> (%out_b)\n"
    )


def _unary(op: str) -> Callable[[], str]:
    return lambda: _graph("%input : Tensor", f"  %out : Tensor = {op}(%input)\n")


def _activation(op: str, attrs: tuple[tuple[str, str], ...] = (), consts: str = "") -> Callable[[], str]:
    """``op(input, *attrs, *consts)``; ``consts`` are ``name=value`` float constants."""
    fixed = [c.split("=") for c in consts.split()]

    def build() -> str:
        reads = "".join(_attr(n, t) for n, t in attrs)
        reads += "".join(f"  %{n} : float = prim::Constant[value={v}]()\n" for n, v in fixed)
        args = ", ".join([f"%{n}" for n, _ in attrs] + [f"%{n}" for n, _ in fixed])
        return _graph("%input : Tensor", reads + _inplace_or_not(op, args))

    return build


def _linear() -> str:
    body = _attr("weight", "Tensor") + _attr("bias", "Tensor?")
    return _graph("%input : Tensor", body + "  %out : Tensor = aten::linear(%input, %weight, %bias)\n")


def _bilinear() -> str:
    # y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o]
    body = (
        _attr("weight", "Tensor")
        + _attr("bias", "Tensor?")
        + '  %eq : str = prim::Constant[value="...i,oij,...j->...o"]()\n'
        + "  %operands : Tensor[] = prim::ListConstruct(%input1, %weight, %input2)\n"
        + "  %none : NoneType = prim::Constant()\n"
        + "  %prod : Tensor = aten::einsum(%eq, %operands, %none)\n"
        + "  %no_bias : bool = aten::__is__(%bias, %none)\n"
        + "  %out : Tensor = prim::If(%no_bias)\n"
        + "    block0():\n"
        + "      -> (%prod)\n"
        + "    block1():\n"
        + "      %b : Tensor = prim::unchecked_cast(%bias)\n"
        + "      %one : int = prim::Constant[value=1]()\n"
        + "      %with_bias : Tensor = aten::add(%prod, %b, %one)\n"
        + "      -> (%with_bias)\n"
    )
    return _graph("%input1 : Tensor, %input2 : Tensor", body)


def _identity() -> str:
    return _graph("%input : Tensor", "", "%input")


def _conv(n: int) -> Callable[[], str]:
    def build() -> str:
        reads = "".join(
            _attr(name, t)
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
            + _indent(idx + pads + f"  %pad : int[] = prim::ListConstruct({order})\n"
                      + "  %none : NoneType = prim::Constant()\n"
                      + "  %padded : Tensor = aten::pad(%input, %pad, %padding_mode, %none)\n"
                      + _ints("no_pad", [0] * n)
                      + f"  %out_b : Tensor = {op}(%padded, %weight, %bias, %stride, %no_pad, %dilation, %groups)\n")
            + "      -> (%out_b)\n"
        )
        return _graph("%input : Tensor", body)

    return build


def _indent(text: str) -> str:
    return "".join("    " + line + "\n" for line in text.splitlines())


def _conv_transpose(n: int) -> Callable[[], str]:
    def build() -> str:
        reads = "".join(
            _attr(name, t)
            for name, t in [("weight", "Tensor"), ("bias", "Tensor?"), ("stride", "int[]"), ("padding", "int[]"),
                            ("output_padding", "int[]"), ("groups", "int"), ("dilation", "int[]"),
                            ("padding_mode", "str")]
        )
        body = (
            reads
            + '  %zeros : str = prim::Constant[value="zeros"]()\n'
            + "  %not_zeros : bool = aten::ne(%padding_mode, %zeros)\n"
            + _raise_if("%not_zeros", f"ValueError: Only 'zeros' padding mode is supported for ConvTranspose{n}d", "mode")
            + "  %none : NoneType = prim::Constant()\n"
            + "  %sized : bool = aten::__isnot__(%output_size, %none)\n"
            + _raise_if("%sized", f"irvm: ConvTranspose{n}d with an output_size argument is not supported", "size")
            + f"  %out : Tensor = aten::conv_transpose{n}d(%input, %weight, %bias, %stride, %padding, "
            "%output_padding, %groups, %dilation)\n"
        )
        return _graph("%input : Tensor, %output_size : int[]?", body)

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
        + _raise_if(last, f"ValueError: {name}: expected {text} input", "dim")
    )


def _batch_norm(allowed: tuple[int, ...], name: str) -> Callable[[], str]:
    def build() -> str:
        body = (
            _attr("training", "bool", required=True)
            + _raise_if("%training", f"irvm: {name} in training mode updates running statistics; irvm runs "
                        "inference (set the module's `training` attribute to False)", "train")
            + _dim_check(allowed, name)
            + "".join(_attr(n, "Tensor?") for n in ("weight", "bias", "running_mean", "running_var"))
            + _attr("eps", "float")
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
        return _graph("%input : Tensor", body)

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
            _attr("training", "bool", required=True)
            + _attr("track_running_stats", "bool")
            + "  %update : bool = aten::__and__(%training, %track_running_stats)\n"
            + _raise_if("%update", f"irvm: {name} in training mode updates running statistics; irvm runs "
                        "inference (set the module's `training` attribute to False)", "train")
            + "  %untracked : bool = aten::__not__(%track_running_stats)\n"
            + _dim_check((n + 1, n + 2), name)
            + "".join(_attr(a, "Tensor?") for a in ("weight", "bias", "running_mean", "running_var"))
            + _attr("eps", "float")
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
        return _graph("%input : Tensor", body)

    return build


def _layer_norm() -> str:
    body = (
        _attr("normalized_shape", "int[]") + _attr("weight", "Tensor?") + _attr("bias", "Tensor?")
        + _attr("eps", "float")
        + "  %cudnn : bool = prim::Constant[value=1]()\n"
        + "  %out : Tensor = aten::layer_norm(%input, %normalized_shape, %weight, %bias, %eps, %cudnn)\n"
    )
    return _graph("%input : Tensor", body)


def _group_norm() -> str:
    body = (
        _attr("num_groups", "int") + _attr("weight", "Tensor?") + _attr("bias", "Tensor?") + _attr("eps", "float")
        + "  %cudnn : bool = prim::Constant[value=1]()\n"
        + "  %out : Tensor = aten::group_norm(%input, %num_groups, %weight, %bias, %eps, %cudnn)\n"
    )
    return _graph("%input : Tensor", body)


def _embedding() -> str:
    body = (
        _attr("weight", "Tensor") + _attr("max_norm", "float?", required=True)
        + "  %none : NoneType = prim::Constant()\n"
        + "  %renorm : bool = aten::__isnot__(%max_norm, %none)\n"
        + _raise_if("%renorm", "irvm: Embedding with max_norm renormalizes its weight in place; not supported",
                    "renorm")
        # padding_idx, scale_grad_by_freq and sparse change only gradients
        + "  %no_padding : int = prim::Constant[value=-1]()\n"
        + "  %false : bool = prim::Constant[value=0]()\n"
        + "  %out : Tensor = aten::embedding(%weight, %input, %no_padding, %false, %false)\n"
    )
    return _graph("%input : Tensor", body)


def _dropout(name: str, allowed: tuple[int, ...] = ()) -> Callable[[], str]:
    """Eval mode: the input itself (PyTorch returns it, not a copy); training raises."""

    def build() -> str:
        body = (
            _attr("training", "bool", required=True)
            + _raise_if("%training", f"irvm: {name} in training mode is random; irvm runs inference (set the "
                        "module's `training` attribute to False)", "train")
            + (_dim_check(allowed, name) if allowed else "")
        )
        return _graph("%input : Tensor", body, "%input")

    return build


def _softmax(op: str, negate: bool = False) -> Callable[[], str]:
    """``op(input, dim)`` (Softmin: of ``-input``), ``dim`` None meaning PyTorch's legacy
    choice."""

    def build() -> str:
        # dim=None: PyTorch's legacy choice, 0 for 0-, 1- and 3-dimensional inputs, else 1
        body = (
            _attr("dim", "int?", required=True)
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
        return _graph("%input : Tensor", consts + body)

    return build


def _call(op: str, attrs: list[tuple[str, str]], extra: str = "") -> Callable[[], str]:
    """``op(input, *attrs, *extra)``: the module's settings passed straight to one operator
    (``extra``: IR constants after them, ``"float 0."``)."""
    consts = [(f"c{i}", item.split()) for i, item in enumerate(extra.split(",")) if item.strip()]

    def build() -> str:
        reads = "".join(_attr(n, t, required=t.endswith("?")) for n, t in attrs)
        reads += "".join(
            f"  %{n} : {t} = prim::Constant" + (f"[value={v[0]}]" if v else "") + "()\n" for n, (t, *v) in consts
        )
        args = "".join(f", %{n}" for n, _ in attrs) + "".join(f", %{n}" for n, _ in consts)
        return _graph("%input : Tensor", reads + f"  %out : Tensor = {op}(%input{args})\n")

    return build


def _softmax2d() -> str:
    body = (
        _dim_check((3, 4), "Softmax2d")
        + "  %channels : int = prim::Constant[value=-3]()\n"
        + "  %none : NoneType = prim::Constant()\n"
        + "  %out : Tensor = aten::softmax(%input, %channels, %none)\n"
    )
    return _graph("%input : Tensor", body)


def _tanhshrink() -> str:
    body = (
        "  %t : Tensor = aten::tanh(%input)\n"
        "  %one : int = prim::Constant[value=1]()\n"
        "  %out : Tensor = aten::sub(%input, %t, %one)\n"
    )
    return _graph("%input : Tensor", body)


def _adaptive_max_pool(n: int) -> Callable[[], str]:
    def build() -> str:
        body = (
            _attr("output_size", "int[]")
            + f"  %out : Tensor, %indices : Tensor = aten::adaptive_max_pool{n}d(%input, %output_size)\n"
        )
        return _graph("%input : Tensor", body)

    return build


def _flatten() -> str:
    body = _attr("start_dim", "int") + _attr("end_dim", "int")
    return _graph("%input : Tensor", body + "  %out : Tensor = aten::flatten(%input, %start_dim, %end_dim)\n")


_MAX_POOL = [("kernel_size", "int[]"), ("stride", "int[]"), ("padding", "int[]"), ("dilation", "int[]"),
             ("ceil_mode", "bool")]
_AVG_POOL = [("kernel_size", "int[]"), ("stride", "int[]"), ("padding", "int[]"), ("ceil_mode", "bool"),
             ("count_include_pad", "bool")]

# base class qualname -> (body builder, rank of its int[] attributes: an int setting such
# as kernel_size=3 means [3] * rank)
LAYERS: dict[str, tuple[Callable[[], str], int]] = {
    NN + "linear.Linear": (_linear, 0),
    NN + "linear.Bilinear": (_bilinear, 0),
    NN + "linear.Identity": (_identity, 0),
    NN + "conv.Conv1d": (_conv(1), 1),
    NN + "conv.Conv2d": (_conv(2), 2),
    NN + "conv.Conv3d": (_conv(3), 3),
    NN + "conv.ConvTranspose1d": (_conv_transpose(1), 1),
    NN + "conv.ConvTranspose2d": (_conv_transpose(2), 2),
    NN + "normalization.LayerNorm": (_layer_norm, 0),
    NN + "normalization.GroupNorm": (_group_norm, 0),
    NN + "batchnorm.BatchNorm1d": (_batch_norm((2, 3), "BatchNorm1d"), 0),
    NN + "batchnorm.BatchNorm2d": (_batch_norm((4,), "BatchNorm2d"), 0),
    NN + "batchnorm.BatchNorm3d": (_batch_norm((5,), "BatchNorm3d"), 0),
    NN + "instancenorm.InstanceNorm1d": (_instance_norm(1), 0),
    NN + "instancenorm.InstanceNorm2d": (_instance_norm(2), 0),
    NN + "instancenorm.InstanceNorm3d": (_instance_norm(3), 0),
    NN + "sparse.Embedding": (_embedding, 0),
    NN + "dropout.Dropout": (_dropout("Dropout"), 0),
    NN + "dropout.Dropout1d": (_dropout("Dropout1d", (2, 3)), 0),
    NN + "dropout.Dropout2d": (_dropout("Dropout2d"), 0),
    NN + "dropout.Dropout3d": (_dropout("Dropout3d"), 0),
    NN + "dropout.AlphaDropout": (_dropout("AlphaDropout"), 0),
    NN + "activation.ReLU": (_activation("aten::relu"), 0),
    NN + "activation.ReLU6": (_activation("aten::hardtanh", consts="lo=0. hi=6."), 0),
    NN + "activation.Hardtanh": (_activation("aten::hardtanh", (("min_val", "float"), ("max_val", "float"))), 0),
    NN + "activation.LeakyReLU": (_activation("aten::leaky_relu", (("negative_slope", "float"),)), 0),
    NN + "activation.ELU": (_activation("aten::elu", (("alpha", "float"),)), 0),
    NN + "activation.SiLU": (_activation("aten::silu"), 0),
    NN + "activation.Hardswish": (_activation("aten::hardswish"), 0),
    NN + "activation.Hardsigmoid": (_activation("aten::hardsigmoid"), 0),
    NN + "activation.Mish": (_activation("aten::mish"), 0),
    NN + "activation.GELU": (lambda: _graph("%input : Tensor", _attr("approximate", "str")
                                            + "  %out : Tensor = aten::gelu(%input, %approximate)\n"), 0),
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
    NN + "flatten.Flatten": (_flatten, 0),
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
    NN + "activation.Tanhshrink": (_tanhshrink, 0),
    NN + "activation.Softmin": (_softmax("aten::softmax", negate=True), 0),
    NN + "activation.Softmax2d": (_softmax2d, 0),
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
