"""Quantized operators: torch's quantized CPU kernels (fbgemm and qnnpack arithmetic) on numpy.

``tensors`` quantizes and dequantizes (``aten::quantize_per_tensor``, ``dequantize``,
``int_repr``, ``q_scale``...); ``layers`` holds the quantized convolutions and linear layers,
static and dynamic, and the prepack/unpack operators; ``elementwise`` the quantized add, mul,
cat, activations and pooling, and the dispatch that sends a quantized tensor reaching an aten
operator (``aten::max_pool2d``, ``aten::flatten``...) to its quantized form; ``rnn`` the
dynamic quantized LSTM and GRU.  ``arith`` is the arithmetic they share (rounding,
requantization per engine, parameter choice).  Values are ``vm.core.quantized.QTensor`` and
the packed-parameter types beside it.  This family is imported last (``vm.ops.FAMILIES``):
it wraps kernels the others registered.
"""

from vm.ops.quantized import elementwise, layers, rnn, tensors
from vm.ops.quantized.arith import ENGINES, engine, using_engine

elementwise.install()

__all__ = ["ENGINES", "elementwise", "engine", "layers", "rnn", "tensors", "using_engine"]
