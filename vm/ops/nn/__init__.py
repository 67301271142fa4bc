"""The ``torch.nn`` kernels: convolution, pooling, normalisation, activations, resizing,
interpolation, embeddings, recurrent cells, attention, losses, fold/unfold.

``vm.ops`` imports these modules in its ``FAMILIES`` order; ``_util`` holds the helpers
they share, and ``fallbacks`` the few non-nn operators nn modules call, registered last.
"""
