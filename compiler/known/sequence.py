"""Templates of irvm's ``forward`` bodies for the recurrent layers GRU and RNN
(``SEQUENCE``, same form as ``compiler.known.layers.LAYERS``).

The recurrent layers follow ``RNNBase.forward`` around one ``aten::gru`` / ``rnn_tanh`` /
``rnn_relu`` call: an unbatched input gets a batch dimension and loses it again, a
missing initial state is zeros of the input's dtype.  TorchScript calls their tensor
overload ``forward__0`` (``METHODS``).  The other sequence models have fixed bodies, in
``compiler/known/bodies/modules/sequence.ir``: ``LSTM`` (the same prologue, a pair of
states), ``MultiheadAttention`` (``F.multi_head_attention_forward``'s own math) and
``TransformerEncoderLayer`` (which calls its children's forwards).
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.known.layers import NN
from compiler.known.text import attr, choose, method

_RNN_SETTINGS = [("batch_first", "bool"), ("bidirectional", "bool"), ("num_layers", "int"), ("hidden_size", "int"),
                 ("bias", "bool"), ("dropout", "float"), ("_flat_weights", "Tensor[]")]


def _rnn_prologue(state: str) -> str:
    """Settings, the batch handling of RNNBase.forward and the zero initial ``state``
    (``%h0_size``, which ``state`` completes) when ``%hx`` is None."""
    reads = "".join(attr(n, t) for n, t in _RNN_SETTINGS) + attr("training", "bool", required=True)
    consts = "".join(f"  %c{v} : int = prim::Constant[value={v}]()\n" for v in (0, 1, 2, 3))
    return (
        reads + consts
        + "  %none : NoneType = prim::Constant()\n"
        + "  %ndim : int = aten::dim(%input)\n"
        + "  %is_batched : bool = aten::eq(%ndim, %c3)\n"
        + choose("batch_dim", "int", "%batch_first", ("", "%c0"), ("", "%c1"))
        + "  %x : Tensor = prim::If(%is_batched)\n    block0():\n      -> (%input)\n    block1():\n"
        + "      %x_b : Tensor = aten::unsqueeze(%input, %batch_dim)\n      -> (%x_b)\n"
        + "  %batch : int = aten::size(%x, %batch_dim)\n"
        + choose("dirs", "int", "%bidirectional", ("", "%c2"), ("", "%c1"))
        + "  %layers_dirs : int = aten::mul(%num_layers, %dirs)\n"
        + "  %dtype : int = prim::dtype(%x)\n"
        + "  %no_hx : bool = aten::__is__(%hx, %none)\n"
        + state
    )


def _zeros(name: str, size: str) -> str:
    return (f"      %{name}_size : int[] = prim::ListConstruct(%layers_dirs, %batch, {size})\n"
            f"      %{name} : Tensor = aten::zeros(%{name}_size, %dtype, %none, %none, %none)\n")


def _batched_state(name: str, given: str) -> str:
    """``given`` as the kernel takes it: unbatched input has an unbatched state."""
    return (f"      %{name} : Tensor = prim::If(%is_batched)\n        block0():\n          -> ({given})\n"
            f"        block1():\n          %{name}_u : Tensor = aten::unsqueeze({given}, %c1)\n"
            f"          -> (%{name}_u)\n")


_RNN_ARGS = "%_flat_weights, %bias, %num_layers, %dropout, %training, %bidirectional, %batch_first"


def _unbatch(names: list[str]) -> str:
    """Outputs of the kernel, squeezed back when the input had no batch dimension."""
    outs = ", ".join(f"%{n}" for n in names)
    squeezed = "".join(
        f"      %{n}_s : Tensor = aten::squeeze(%{n}_k, {'%batch_dim' if i == 0 else '%c1'})\n"
        for i, n in enumerate(names)
    )
    types = ", ".join(f"%{n} : Tensor" for n in names)
    return (f"  {types} = prim::If(%is_batched)\n    block0():\n      -> ({outs.replace(',', '_k,')}_k)\n"
            f"    block1():\n{squeezed}      -> ({', '.join(f'%{n}_s' for n in names)})\n")


def _gru_like(kernel: str) -> Callable[[], str]:
    """GRU, or an RNN (``kernel`` None: ``mode`` picks rnn_tanh or rnn_relu)."""

    def build() -> str:
        state = (
            "  %h0 : Tensor = prim::If(%no_hx)\n    block0():\n" + _zeros("hz", "%hidden_size")
            + "      -> (%hz)\n    block1():\n"
            + "      %given : Tensor = prim::unchecked_cast(%hx)\n" + _batched_state("hb", "%given")
            + "      -> (%hb)\n"
        )
        if kernel:
            call = f"  %y_k : Tensor, %h_k : Tensor = {kernel}(%x, %h0, {_RNN_ARGS})\n"
        else:
            call = (
                attr("mode", "str")
                + '  %tanh_mode : str = prim::Constant[value="RNN_TANH"]()\n'
                + "  %is_tanh : bool = aten::eq(%mode, %tanh_mode)\n"
                + "  %y_k : Tensor, %h_k : Tensor = prim::If(%is_tanh)\n    block0():\n"
                + f"      %y_t : Tensor, %h_t : Tensor = aten::rnn_tanh(%x, %h0, {_RNN_ARGS})\n"
                + "      -> (%y_t, %h_t)\n    block1():\n"
                + f"      %y_r : Tensor, %h_r : Tensor = aten::rnn_relu(%x, %h0, {_RNN_ARGS})\n"
                + "      -> (%y_r, %h_r)\n"
            )
        body = (
            _rnn_prologue(state) + call + _unbatch(["y", "h"])
            + "  %out : (Tensor, Tensor) = prim::TupleConstruct(%y, %h)\n"
        )
        return method("%input : Tensor, %hx : Tensor?", body)

    return build


SEQUENCE: dict[str, tuple[Callable[[], str], int]] = {
    NN + "rnn.GRU": (_gru_like("aten::gru"), 0),
    NN + "rnn.RNN": (_gru_like(""), 0),
}

# classes whose tensor forward TorchScript names differently (the first @overload)
METHODS: dict[str, str] = {NN + "rnn.LSTM": "forward__0", NN + "rnn.GRU": "forward__0", NN + "rnn.RNN": "forward__0"}
