"""Fused kernels for ``prim::FusionGroup``, shared by both backends.

``kernels`` runs one group in one pass over memory (cache-blocked numpy), ``plan`` turns
a group into its per-block ufunc program, ``numba_backend`` compiles a single loop when
numba is installed and enabled.
"""
