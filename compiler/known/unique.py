"""Known bodies of ``torch.unique`` and ``torch.unique_consecutive`` (without ``dim``).

TorchScript prints these by their boolean dispatch: ``_return_output``,
``_return_inverse``, ``_return_counts``, ``_return_inverse_and_counts`` (and the
``_consecutive_...`` ones), by which of ``return_inverse`` / ``return_counts`` the call
set; each returns the values and the extras it asked for.  ``vm.ops`` has no unique
operator, so the bodies derive it from a sort: on the flattened (sorted, for ``unique``)
values, a run starts where a value differs from its predecessor; the values are the run
starts (``masked_select``), the inverse is the running count of starts minus one
(scattered back through the sort's permutation), the counts are the gaps between
consecutive starts.  ``unique`` always returns sorted values (what torch returns for
``sorted=True``; with ``sorted=False`` torch leaves the order unspecified).  A ``dim``
(unique slices) raises: it is not implemented.
"""

from __future__ import annotations

from compiler.known.text import const, graph, raise_if


def _runs(sort: bool) -> str:
    """``%values``, ``%inverse`` and ``%counts`` of ``%input``."""
    ordered = (
        "  %ordered : Tensor, %perm : Tensor = aten::sort(%flat, %zero, %false)\n" if sort
        else "  %ordered : Tensor = aten::reshape(%input, %flat_shape)\n"
    )
    inverse = (
        "  %blank : Tensor = aten::zeros_like(%perm, %none, %none, %none, %none, %none)\n"
        "  %inv_flat : Tensor = aten::scatter(%blank, %zero, %perm, %group)\n" if sort
        else "  %inv_flat : Tensor = aten::mul(%group, %one)\n"
    )
    return (
        const("none", "NoneType")
        + const("false", "bool", False)
        + const("zero", "int", 0)
        + const("one", "int", 1)
        + const("minus1", "int", -1)
        + const("long", "int", 4)
        + const("bool_t", "int", 11)
        + "  %has_dim : bool = aten::__isnot__(%dim, %none)\n"
        + raise_if("%has_dim", "irvm: torch.unique / unique_consecutive with dim (unique slices) is not implemented",
                   "dim", "builtins.RuntimeError")
        + "  %flat_shape : int[] = prim::ListConstruct(%minus1)\n"
        + "  %flat : Tensor = aten::reshape(%input, %flat_shape)\n"
        + ordered
        + "  %n : int = aten::numel(%input)\n"
        + "  %tail : Tensor = aten::slice(%ordered, %zero, %one, %none, %one)\n"
        + "  %head : Tensor = aten::slice(%ordered, %zero, %zero, %minus1, %one)\n"
        + "  %changes : Tensor = aten::ne(%tail, %head)\n"
        + "  %first_n : int = prim::min(%n, %one)\n"
        + "  %first_shape : int[] = prim::ListConstruct(%first_n)\n"
        + "  %first : Tensor = aten::ones(%first_shape, %bool_t, %none, %none, %none)\n"
        + "  %parts : Tensor[] = prim::ListConstruct(%first, %changes)\n"
        + "  %starts_mask : Tensor = aten::cat(%parts, %zero)\n"
        + "  %values : Tensor = aten::masked_select(%ordered, %starts_mask)\n"
        + "  %running : Tensor = aten::cumsum(%starts_mask, %zero, %long)\n"
        + "  %group : Tensor = aten::sub(%running, %one, %one)\n"
        + inverse
        + "  %in_shape : int[] = aten::size(%input)\n"
        + "  %inverse : Tensor = aten::reshape(%inv_flat, %in_shape)\n"
        + "  %where : Tensor = aten::nonzero(%starts_mask)\n"
        + "  %starts : Tensor = aten::reshape(%where, %flat_shape)\n"
        + "  %later : Tensor = aten::slice(%starts, %zero, %one, %none, %one)\n"
        + "  %one_shape : int[] = prim::ListConstruct(%one)\n"
        + "  %end : Tensor = aten::full(%one_shape, %n, %long, %none, %none, %none)\n"
        + "  %ends_parts : Tensor[] = prim::ListConstruct(%later, %end)\n"
        + "  %ends0 : Tensor = aten::cat(%ends_parts, %zero)\n"
        + "  %n_starts : int = aten::numel(%starts)\n"
        + "  %ends : Tensor = aten::slice(%ends0, %zero, %zero, %n_starts, %one)\n"
        + "  %counts : Tensor = aten::sub(%ends, %starts, %one)\n"
    )


def _variant(sort: bool, results: tuple[str, ...]) -> str:
    params = ("%input : Tensor, %sorted : bool, %return_inverse : bool, %return_counts : bool, %dim : int?" if sort
              else "%input : Tensor, %return_inverse : bool, %return_counts : bool, %dim : int?")
    body = _runs(sort)
    if len(results) == 1:
        return graph(params, body, "%values")
    types = ", ".join("Tensor" for _ in results)
    body += f"  %out : ({types}) = prim::TupleConstruct({', '.join(results)})\n"
    return graph(params, body)


_RESULTS = {
    "return_output": ("%values",),
    "return_inverse": ("%values", "%inverse"),
    "return_counts": ("%values", "%counts"),
    "return_inverse_and_counts": ("%values", "%inverse", "%counts"),
}

BODIES: dict[str, list[str]] = {
    **{f"_{name}": [_variant(True, results)] for name, results in _RESULTS.items()},
    **{f"_consecutive_{name}": [_variant(False, results)] for name, results in _RESULTS.items()},
}
