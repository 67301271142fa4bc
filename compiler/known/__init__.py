"""Known bodies: irvm's own IR for what a ``.graph`` dump calls without printing it.

A dump of ``fn.graph`` or ``module.graph`` (not ``inlined_graph``) calls two kinds of
code whose bodies it leaves out:

- ``torch.nn.functional`` / ``torch.functional`` helpers, as ``prim::CallFunction`` of a
  function constant (``relu``, ``layer_norm``, ``interpolate``, the losses...):
  ``known_body`` gives the body that fits a call, ``describe`` the signatures irvm has
  for a name (``compiler.known.functions`` explains the rules);
- standard ``torch.nn`` modules, as ``prim::CallMethod[name="forward"]`` on a submodule
  typed by its class (``Linear``, ``Conv2d``, ``LSTM``...): ``method_body`` gives the
  forward graph for a call, and ``attributes_read`` / ``list_rank`` what a weights file
  must hold for it (``compiler.known.modules`` explains the rules).

This module is the package's front door: the rest of irvm calls these functions and
nothing else in ``compiler.known``.  The pipeline attaches the bodies in two named steps:
``add_known_methods`` (``compiler.passes.add_known_methods``) stores module bodies in
``Module.functions`` before anything runs, and ``inline_calls`` asks ``known_body`` for
each call of a function the module does not define.

Where the bodies come from: bodies whose text is fixed are IR files,
``compiler/known/bodies/<family>.ir`` (``compiler.known.library`` reads them once);
families of bodies written from one pattern (the in-place activations, the 1-3d
convolutions and pools, the overloads of ``interpolate`` and ``torch.norm``) are Python
templates (``compiler.known.<family>``) built from the one set of text builders in
``compiler.known.text``.
"""

from __future__ import annotations

from compiler.known.functions import describe, is_known_function, known_body
from compiler.known.modules import attributes_read, base_qualname, is_known_class, known_forward, list_rank, method_body

__all__ = [
    "attributes_read",
    "base_qualname",
    "describe",
    "is_known_class",
    "is_known_function",
    "known_body",
    "known_forward",
    "list_rank",
    "method_body",
]
