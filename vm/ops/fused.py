"""Registers ``prim::FusedKernel`` (see ``vm.fusion``) with the other operator families."""

import vm.fusion  # noqa: F401  (its @prim_factory registration)
