"""Fused kernels for ``prim::FusionGroup``, shared by both backends.

``kernels`` runs one group in one pass over memory (cache-blocked numpy), ``plan`` turns
a group into its per-block ufunc program, ``numba_backend`` compiles a single loop when
numba is installed and enabled, ``threads`` holds how many threads a fused call may use
(``set_num_threads``, as ``torch.set_num_threads``).
"""

from vm.fusion.threads import get_num_threads, set_num_threads

__all__ = ["get_num_threads", "set_num_threads"]
