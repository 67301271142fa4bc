"""The operator library: every module listed below registers its kernels on import.

Families: pointwise (``unary``, ``pointwise``, ``pointwise_math``, ``predicates``),
reductions (``reduction``, ``order_stats``), shapes and views (``shape``, ``rearrange``), indexing, linear algebra, ``nn/`` (the ``torch.nn``
kernels), random operators, and the prim side (scalars, lists, dicts, strings, enums,
prim:: nodes).  ``vm.ops.registry`` holds the table they fill.

Each family declares its operators where it registers them (``vm.ops.registry`` says
how, with an example); every table the compiler and the runtimes read is a query over
that one registry.  The order below is only the order of imports: overload choice does
not depend on it (``registry.overloads`` orders by a rule), ``nn.fallbacks`` registers
at the lowest priority, and PyTorch's ``out=`` overloads register with their functional
overloads.  ``docs/operators.md`` walks through adding an operator.
"""

import importlib

FAMILIES = (
    "dicts",
    "enums",
    "factory",
    "fused",
    "grad_mode",
    "indexing",
    "inplace",
    "linalg",
    "matrix_norm",
    "lists",
    "nn.activation",
    "nn.attention",
    "nn.conv",
    "nn.embedding",
    "nn.fold",
    "nn.loss",
    "nn.norm",
    "nn.pool",
    "nn.resize",
    "nn.rnn",
    "nn.upsample",
    "pointwise",
    "predicates",
    "pointwise_math",
    "prim",
    "properties",
    "random",
    "random_draws",
    "reduction",
    "scalar",
    "shape",
    "rearrange",
    "prepared_views",  # construction-time forms of shape kernels (vm.ops.prepared)
    "prepared_nn",  # ... and of small convolutions and max pools
    "prepared_norm",  # ... and of batch_norm (weights bound) and layer_norm
    "order_stats",
    "strings",
    "unary",
    "nn.fallbacks",  # at FALLBACK priority: what no family registers
    "quantized",  # quantized tensors' operators; wraps some above to dispatch on them
)

for _name in FAMILIES:
    importlib.import_module(f"{__name__}.{_name}")
