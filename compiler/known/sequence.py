"""irvm's ``forward`` bodies for the sequence models of ``torch.nn``: LSTM, GRU, RNN,
MultiheadAttention and TransformerEncoderLayer (``SEQUENCE``, same form as
``compiler.known.layers.LAYERS``).

The recurrent layers follow ``RNNBase.forward`` around one ``aten::lstm`` / ``gru`` /
``rnn_tanh`` / ``rnn_relu`` call: an unbatched input gets a batch dimension and loses it
again, a missing initial state is zeros of the input's dtype.  TorchScript calls their
tensor overload ``forward__0`` (``METHODS``).  The attention follows
``F.multi_head_attention_forward``'s own math (packed in-projection, per-head scaled
scores plus the canonical float masks, softmax, out-projection), not the fused kernel, so
that float masks of any values and per-head masks mean what they mean in PyTorch.  The
encoder layer calls its children's forwards, which ``add_known_methods`` supplies in turn.
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.known.layers import NN, _attr, _graph, _indent, _raise_if

_RNN_SETTINGS = [("batch_first", "bool"), ("bidirectional", "bool"), ("num_layers", "int"), ("hidden_size", "int"),
                 ("bias", "bool"), ("dropout", "float"), ("_flat_weights", "Tensor[]")]


def _rnn_prologue(state: str) -> str:
    """Settings, the batch handling of RNNBase.forward and the zero initial ``state``
    (``%h0_size``, which ``state`` completes) when ``%hx`` is None."""
    reads = "".join(_attr(n, t) for n, t in _RNN_SETTINGS) + _attr("training", "bool", required=True)
    consts = "".join(f"  %c{v} : int = prim::Constant[value={v}]()\n" for v in (0, 1, 2, 3))
    return (
        reads + consts
        + "  %none : NoneType = prim::Constant()\n"
        + "  %ndim : int = aten::dim(%input)\n"
        + "  %is_batched : bool = aten::eq(%ndim, %c3)\n"
        + _choose("batch_dim", "int", "%batch_first", "%c0", "%c1")
        + "  %x : Tensor = prim::If(%is_batched)\n    block0():\n      -> (%input)\n    block1():\n"
        + "      %x_b : Tensor = aten::unsqueeze(%input, %batch_dim)\n      -> (%x_b)\n"
        + "  %batch : int = aten::size(%x, %batch_dim)\n"
        + _choose("dirs", "int", "%bidirectional", "%c2", "%c1")
        + "  %layers_dirs : int = aten::mul(%num_layers, %dirs)\n"
        + "  %dtype : int = prim::dtype(%x)\n"
        + "  %no_hx : bool = aten::__is__(%hx, %none)\n"
        + state
    )


def _choose(name: str, type_: str, cond: str, then: str, other: str) -> str:
    return (f"  %{name} : {type_} = prim::If({cond})\n    block0():\n      -> ({then})\n"
            f"    block1():\n      -> ({other})\n")


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


def _lstm() -> str:
    state = (
        _attr("proj_size", "int")
        + "  %has_proj : bool = aten::gt(%proj_size, %c0)\n"
        + _choose("real_hidden", "int", "%has_proj", "%proj_size", "%hidden_size")
        + "  %h0 : Tensor, %c0_t : Tensor = prim::If(%no_hx)\n    block0():\n"
        + _zeros("hz", "%real_hidden") + _zeros("cz", "%hidden_size")
        + "      -> (%hz, %cz)\n    block1():\n"
        + "      %given : (Tensor, Tensor) = prim::unchecked_cast(%hx)\n"
        + "      %gh : Tensor, %gc : Tensor = prim::TupleUnpack(%given)\n"
        + _batched_state("hb", "%gh") + _batched_state("cb", "%gc")
        + "      -> (%hb, %cb)\n"
    )
    body = (
        _rnn_prologue(state)
        + "  %state : Tensor[] = prim::ListConstruct(%h0, %c0_t)\n"
        + f"  %y_k : Tensor, %h_k : Tensor, %c_k : Tensor = aten::lstm(%x, %state, {_RNN_ARGS})\n"
        + _unbatch(["y", "h", "c"])
        + "  %hidden : (Tensor, Tensor) = prim::TupleConstruct(%h, %c)\n"
        + "  %out : (Tensor, (Tensor, Tensor)) = prim::TupleConstruct(%y, %hidden)\n"
    )
    return _graph("%input : Tensor, %hx : (Tensor, Tensor)?", body)


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
                _attr("mode", "str")
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
        return _graph("%input : Tensor, %hx : Tensor?", body)

    return build


def _canonical_mask(name: str) -> str:
    """F._canonical_mask: a bool mask (True = masked out) becomes a float one with -inf
    there and 0 elsewhere; a float mask is added to the scores as it is."""
    return f"""  %{name}_is_none : bool = aten::__is__(%{name}, %none)
  %{name}_f : Tensor? = prim::If(%{name}_is_none)
    block0():
      -> (%none)
    block1():
      %{name}_t : Tensor = prim::unchecked_cast(%{name})
      %{name}_dt : int = prim::dtype(%{name}_t)
      %{name}_bool : bool = aten::eq(%{name}_dt, %bool_code)
      %{name}_c : Tensor = prim::If(%{name}_bool)
        block0():
          %{name}_z : Tensor = aten::zeros_like(%{name}_t, %qdtype, %none, %none, %none, %none)
          %{name}_m : Tensor = aten::masked_fill(%{name}_z, %{name}_t, %neg_inf)
          -> (%{name}_m)
        block1():
          -> (%{name}_t)
      -> (%{name}_c)
"""


def _multihead_attention() -> str:
    checks = (
        _attr("_qkv_same_embed_dim", "bool")
        + "  %separate : bool = aten::__not__(%_qkv_same_embed_dim)\n"
        + _raise_if("%separate", "irvm: MultiheadAttention with kdim/vdim other than embed_dim is not supported", "kv")
        + _attr("bias_k", "Tensor?") + _attr("add_zero_attn", "bool")
        + "  %has_bias_k : bool = aten::__isnot__(%bias_k, %none)\n"
        + "  %extra_keys : bool = aten::__or__(%has_bias_k, %add_zero_attn)\n"
        + _raise_if("%extra_keys", "irvm: MultiheadAttention with add_bias_kv or add_zero_attn is not supported",
                    "extra")
        + _attr("training", "bool", required=True) + _attr("dropout", "float")
        + "  %zero_p : float = prim::Constant[value=0.]()\n"
        + "  %drops : bool = aten::gt(%dropout, %zero_p)\n"
        + "  %random : bool = aten::__and__(%training, %drops)\n"
        + _raise_if("%random", "irvm: MultiheadAttention in training mode with dropout is random; irvm runs "
                    "inference (set the module's `training` attribute to False)", "train")
        + "  %causal_without_mask : bool = aten::__and__(%is_causal, %attn_mask_is_none)\n"
        + _raise_if("%causal_without_mask", "RuntimeError: Need attn_mask if specifying the is_causal hint. You may "
                    "use the Transformer module method `generate_square_subsequent_mask` to create this mask.",
                    "causal")
    )
    body = f"""  %none : NoneType = prim::Constant()
  %c0 : int = prim::Constant[value=0]()
  %c1 : int = prim::Constant[value=1]()
  %c2 : int = prim::Constant[value=2]()
  %c3 : int = prim::Constant[value=3]()
  %m1 : int = prim::Constant[value=-1]()
  %m2 : int = prim::Constant[value=-2]()
  %bool_code : int = prim::Constant[value=11]()
  %neg_inf : float = prim::Constant[value=-inf]()
  %one_f : float = prim::Constant[value=1.]()
{_attr("batch_first", "bool")}{_attr("embed_dim", "int")}{_attr("num_heads", "int")}\
{_attr("in_proj_weight", "Tensor?")}{_attr("in_proj_bias", "Tensor?")}\
  %out_proj : __torch__.torch.nn.modules.linear.NonDynamicallyQuantizableLinear = prim::GetAttr[name="out_proj"](%self)
  %out_w : Tensor = prim::GetAttr[name="weight"](%out_proj)
  %out_b : Tensor? = prim::GetAttr[name="bias"](%out_proj)
  %qdtype : int = prim::dtype(%query)
{_canonical_mask("key_padding_mask")}{_canonical_mask("attn_mask")}{checks}\
  %qdim : int = aten::dim(%query)
  %is_batched : bool = aten::eq(%qdim, %c3)
  %time_major : bool = aten::__not__(%batch_first)
  %keep_layout : bool = aten::__or__(%time_major, %is_batched)
  %transpose_in : bool = aten::__and__(%batch_first, %is_batched)
  %q0 : Tensor, %k0 : Tensor, %v0 : Tensor, %kpm0 : Tensor? = prim::If(%is_batched)
    block0():
      %qt : Tensor, %kt : Tensor, %vt : Tensor = prim::If(%batch_first)
        block0():
          %qb : Tensor = aten::transpose(%query, %c0, %c1)
          %kb : Tensor = aten::transpose(%key, %c0, %c1)
          %vb : Tensor = aten::transpose(%value, %c0, %c1)
          -> (%qb, %kb, %vb)
        block1():
          -> (%query, %key, %value)
      -> (%qt, %kt, %vt, %key_padding_mask_f)
    block1():
      %qu : Tensor = aten::unsqueeze(%query, %c1)
      %ku : Tensor = aten::unsqueeze(%key, %c1)
      %vu : Tensor = aten::unsqueeze(%value, %c1)
      %kpm_none : bool = aten::__is__(%key_padding_mask_f, %none)
      %kpm_u : Tensor? = prim::If(%kpm_none)
        block0():
          -> (%none)
        block1():
          %kpm_t : Tensor = prim::unchecked_cast(%key_padding_mask_f)
          %kpm_us : Tensor = aten::unsqueeze(%kpm_t, %c0)
          -> (%kpm_us)
      -> (%qu, %ku, %vu, %kpm_u)
  %tgt_len : int = aten::size(%q0, %c0)
  %bsz : int = aten::size(%q0, %c1)
  %src_len : int = aten::size(%k0, %c0)
  %head_dim : int = aten::floordiv(%embed_dim, %num_heads)
  %bh : int = aten::mul(%bsz, %num_heads)
  %in_w : Tensor = prim::unchecked_cast(%in_proj_weight)
  %w_parts : Tensor[] = aten::chunk(%in_w, %c3, %c0)
  %wq : Tensor, %wk : Tensor, %wv : Tensor = prim::ListUnpack(%w_parts)
  %no_in_bias : bool = aten::__is__(%in_proj_bias, %none)
  %bq : Tensor?, %bk : Tensor?, %bv : Tensor? = prim::If(%no_in_bias)
    block0():
      -> (%none, %none, %none)
    block1():
      %in_b : Tensor = prim::unchecked_cast(%in_proj_bias)
      %b_parts : Tensor[] = aten::chunk(%in_b, %c3, %c0)
      %bq_t : Tensor, %bk_t : Tensor, %bv_t : Tensor = prim::ListUnpack(%b_parts)
      -> (%bq_t, %bk_t, %bv_t)
  %q1 : Tensor = aten::linear(%q0, %wq, %bq)
  %k1 : Tensor = aten::linear(%k0, %wk, %bk)
  %v1 : Tensor = aten::linear(%v0, %wv, %bv)
  %q_shape : int[] = prim::ListConstruct(%tgt_len, %bh, %head_dim)
  %kv_shape : int[] = prim::ListConstruct(%src_len, %bh, %head_dim)
  %q2 : Tensor = aten::reshape(%q1, %q_shape)
  %q3 : Tensor = aten::transpose(%q2, %c0, %c1)
  %k2 : Tensor = aten::reshape(%k1, %kv_shape)
  %k3 : Tensor = aten::transpose(%k2, %c0, %c1)
  %v2 : Tensor = aten::reshape(%v1, %kv_shape)
  %v3 : Tensor = aten::transpose(%v2, %c0, %c1)
  %am_2d : Tensor? = prim::If(%attn_mask_is_none)
    block0():
      -> (%none)
    block1():
      %am_t : Tensor = prim::unchecked_cast(%attn_mask_f)
      %am_dim : int = aten::dim(%am_t)
      %am_is2 : bool = aten::eq(%am_dim, %c2)
      %am_r : Tensor = prim::If(%am_is2)
        block0():
          %am_u : Tensor = aten::unsqueeze(%am_t, %c0)
          -> (%am_u)
        block1():
          -> (%am_t)
      -> (%am_r)
  %kpm_is_none : bool = aten::__is__(%kpm0, %none)
  %mask : Tensor? = prim::If(%kpm_is_none)
    block0():
      -> (%am_2d)
    block1():
      %kpm_v : Tensor = prim::unchecked_cast(%kpm0)
      %kpm_shape : int[] = prim::ListConstruct(%bsz, %c1, %c1, %src_len)
      %kpm_4 : Tensor = aten::reshape(%kpm_v, %kpm_shape)
      %kpm_exp_shape : int[] = prim::ListConstruct(%m1, %num_heads, %m1, %m1)
      %false : bool = prim::Constant[value=0]()
      %kpm_e : Tensor = aten::expand(%kpm_4, %kpm_exp_shape, %false)
      %kpm_flat_shape : int[] = prim::ListConstruct(%bh, %c1, %src_len)
      %kpm_f : Tensor = aten::reshape(%kpm_e, %kpm_flat_shape)
      %am_none2 : bool = aten::__is__(%am_2d, %none)
      %merged : Tensor = prim::If(%am_none2)
        block0():
          -> (%kpm_f)
        block1():
          %am_v : Tensor = prim::unchecked_cast(%am_2d)
          %sum : Tensor = aten::add(%am_v, %kpm_f, %c1)
          -> (%sum)
      -> (%merged)
  %e_f : float = aten::Float(%head_dim)
  %inv : float = aten::div(%one_f, %e_f)
  %scale : float = aten::sqrt(%inv)
  %q_scaled : Tensor = aten::mul(%q3, %scale)
  %k_t : Tensor = aten::transpose(%k3, %m2, %m1)
  %mask_none : bool = aten::__is__(%mask, %none)
  %scores : Tensor = prim::If(%mask_none)
    block0():
      %s_plain : Tensor = aten::bmm(%q_scaled, %k_t)
      -> (%s_plain)
    block1():
      %mask_t : Tensor = prim::unchecked_cast(%mask)
      %s_masked : Tensor = aten::baddbmm(%mask_t, %q_scaled, %k_t, %c1, %c1)
      -> (%s_masked)
  %weights : Tensor = aten::softmax(%scores, %m1, %none)
  %attended : Tensor = aten::bmm(%weights, %v3)
  %att_t : Tensor = aten::transpose(%attended, %c0, %c1)
  %att_c : Tensor = aten::contiguous(%att_t, %c0)
  %rows : int = aten::mul(%tgt_len, %bsz)
  %flat_shape : int[] = prim::ListConstruct(%rows, %embed_dim)
  %att_flat : Tensor = aten::view(%att_c, %flat_shape)
  %projected : Tensor = aten::linear(%att_flat, %out_w, %out_b)
  %out_shape : int[] = prim::ListConstruct(%tgt_len, %bsz, %m1)
  %o1 : Tensor = aten::view(%projected, %out_shape)
  %w_shape : int[] = prim::ListConstruct(%bsz, %num_heads, %tgt_len, %src_len)
  %w1 : Tensor = aten::view(%weights, %w_shape)
  %w2 : Tensor = prim::If(%average_attn_weights)
    block0():
      %heads_dim : int[] = prim::ListConstruct(%c1)
      %keep : bool = prim::Constant[value=0]()
      %w_avg : Tensor = aten::mean(%w1, %heads_dim, %keep, %none)
      -> (%w_avg)
    block1():
      -> (%w1)
  %o2 : Tensor, %w3 : Tensor = prim::If(%is_batched)
    block0():
      %o_b : Tensor = prim::If(%batch_first)
        block0():
          %o_bt : Tensor = aten::transpose(%o1, %c0, %c1)
          -> (%o_bt)
        block1():
          -> (%o1)
      -> (%o_b, %w2)
    block1():
      %o_s : Tensor = aten::squeeze(%o1, %c1)
      %w_s : Tensor = aten::squeeze(%w2, %c0)
      -> (%o_s, %w_s)
  %w_out : Tensor? = prim::If(%need_weights)
    block0():
      -> (%w3)
    block1():
      -> (%none)
  %out : (Tensor, Tensor?) = prim::TupleConstruct(%o2, %w_out)
"""
    params = ("%query : Tensor, %key : Tensor, %value : Tensor, %key_padding_mask : Tensor?, %need_weights : bool, "
              "%attn_mask : Tensor?, %average_attn_weights : bool, %is_causal : bool")
    return _graph(params, body)


def _transformer_encoder_layer() -> str:
    """Post-norm ``norm1(x + sa(x)); norm2(x + ff(x))`` or pre-norm ``x + sa(norm1(x));
    x + ff(norm2(x))``, its children called through their own (known) forwards."""

    def child(name: str, cls: str) -> str:
        return f'  %{name} : {NN}{cls} = prim::GetAttr[name="{name}"](%self)\n'

    def call(out: str, name: str, arg: str) -> str:
        return f'  %{out} : Tensor = prim::CallMethod[name="forward"](%{name}, {arg})\n'

    def block(x: str, tag: str) -> str:
        """sa and ff of ``x`` (pre-norm: of the normed ``x``), added back, as IR."""
        return (
            f'  %{tag}_sa : (Tensor, Tensor?) = prim::CallMethod[name="forward"](%self_attn, {x}, {x}, {x}, '
            "%src_key_padding_mask, %false, %src_mask, %true, %is_causal)\n"
            f"  %{tag}_att : Tensor, %{tag}_w : Tensor? = prim::TupleUnpack(%{tag}_sa)\n"
            + call(f"{tag}_sa_out", "dropout1", f"%{tag}_att")
        )

    def ff(x: str, tag: str) -> str:
        return (
            call(f"{tag}_h", "linear1", x)
            + f"  %{tag}_act : Tensor = prim::If(%is_relu)\n    block0():\n"
            + f"      %{tag}_r : Tensor = aten::relu(%{tag}_h)\n      -> (%{tag}_r)\n    block1():\n"
            + f"      %{tag}_g : Tensor = aten::gelu(%{tag}_h, %none_str)\n      -> (%{tag}_g)\n"
            + call(f"{tag}_d", "dropout", f"%{tag}_act")
            + call(f"{tag}_l2", "linear2", f"%{tag}_d")
            + call(f"{tag}_ff_out", "dropout2", f"%{tag}_l2")
        )

    head = (
        child("self_attn", "activation.MultiheadAttention")
        + "".join(child(n, "linear.Linear") for n in ("linear1", "linear2"))
        + "".join(child(n, "normalization.LayerNorm") for n in ("norm1", "norm2"))
        + "".join(child(n, "dropout.Dropout") for n in ("dropout", "dropout1", "dropout2"))
        + _attr("norm_first", "bool") + _attr("activation_relu_or_gelu", "int")
        + "  %true : bool = prim::Constant[value=1]()\n  %false : bool = prim::Constant[value=0]()\n"
        + "  %one : int = prim::Constant[value=1]()\n  %two : int = prim::Constant[value=2]()\n"
        + '  %none_str : str = prim::Constant[value="none"]()\n'
        + "  %is_relu : bool = aten::eq(%activation_relu_or_gelu, %one)\n"
        + "  %is_gelu : bool = aten::eq(%activation_relu_or_gelu, %two)\n"
        + "  %known_act : bool = aten::__or__(%is_relu, %is_gelu)\n"
        + "  %other_act : bool = aten::__not__(%known_act)\n"
        + _raise_if("%other_act", "irvm: TransformerEncoderLayer with an activation other than relu or gelu is not "
                    "supported", "act")
    )
    pre = _indent(
        call("p_n1", "norm1", "%src") + block("%p_n1", "p1")
        + "  %p_x1 : Tensor = aten::add(%src, %p1_sa_out, %one)\n"
        + call("p_n2", "norm2", "%p_x1") + ff("%p_n2", "p2")
        + "  %p_x2 : Tensor = aten::add(%p_x1, %p2_ff_out, %one)\n"
    )
    post = _indent(
        block("%src", "q1")
        + "  %q_s1 : Tensor = aten::add(%src, %q1_sa_out, %one)\n" + call("q_x1", "norm1", "%q_s1")
        + ff("%q_x1", "q2")
        + "  %q_s2 : Tensor = aten::add(%q_x1, %q2_ff_out, %one)\n" + call("q_x2", "norm2", "%q_s2")
    )
    body = (
        head + "  %out : Tensor = prim::If(%norm_first)\n    block0():\n" + pre + "      -> (%p_x2)\n"
        + "    block1():\n" + post + "      -> (%q_x2)\n"
    )
    return _graph("%src : Tensor, %src_mask : Tensor?, %src_key_padding_mask : Tensor?, %is_causal : bool", body)


SEQUENCE: dict[str, tuple[Callable[[], str], int]] = {
    NN + "activation.MultiheadAttention": (_multihead_attention, 0),
    NN + "transformer.TransformerEncoderLayer": (_transformer_encoder_layer, 0),
    NN + "rnn.LSTM": (_lstm, 0),
    NN + "rnn.GRU": (_gru_like("aten::gru"), 0),
    NN + "rnn.RNN": (_gru_like(""), 0),
}

# classes whose tensor forward TorchScript names differently (the first @overload)
METHODS: dict[str, str] = {NN + "rnn.LSTM": "forward__0", NN + "rnn.GRU": "forward__0", NN + "rnn.RNN": "forward__0"}
