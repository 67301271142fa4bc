"""Registers ``prim::FusedKernel`` (see ``vm.fusion.kernels``) with the other operator families."""

import vm.fusion.kernels  # noqa: F401  (its @prim_factory registration)
