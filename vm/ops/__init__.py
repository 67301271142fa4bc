"""The operator library: every module listed below registers its kernels on import.

Families: pointwise (``unary``, ``pointwise``, ``pointwise_math``, ``predicates``),
reductions (``reduction``, ``order_stats``), shapes and views (``shape``, ``rearrange``), indexing, linear algebra, ``nn/`` (the ``torch.nn``
kernels), random operators, and the prim side (scalars, lists, dicts, strings, enums,
prim:: nodes).  ``vm.ops.registry`` holds the table they fill.

The modules import in the order of ``FAMILIES``.  The order is part of the semantics:
when two overloads fit a node equally well, overload resolution picks the one registered
first, and the last two entries only fill gaps the others left (``nn.fallbacks``) or add
``out=`` overloads of what everything before them registered (``out_overloads``).
"""

import importlib

FAMILIES = (
    "dicts",
    "enums",
    "factory",
    "fused",
    "indexing",
    "inplace",
    "linalg",
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
    "nn.fallbacks",  # only what no family registered
    "out_overloads",  # out= overloads of everything above
    "quantized",  # quantized tensors' operators; wraps some above to dispatch on them
)

for _name in FAMILIES:
    importlib.import_module(f"{__name__}.{_name}")
