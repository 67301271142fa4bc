"""Every nn operator is registered with PyTorch's own schema: same name, overload,
argument names, types, defaults and returns, so graphs bind their inputs as PyTorch does."""

from __future__ import annotations

import pytest

from vm.ops import registry

torch = pytest.importorskip("torch")

NN_MODULES = ("vm.ops.nn_conv", "vm.ops.nn_pool", "vm.ops.nn_norm", "vm.ops.nn_activation",
              "vm.ops.nn_resize", "vm.ops.nn_embedding", "vm.ops.nn_rnn", "vm.ops.nn_attention")


def _nn_ops() -> list[registry.OpInfo]:
    ops = [o for o in registry.all_ops() if getattr(o.kernel, "__module__", "") in NN_MODULES]
    assert len(ops) > 80, "the nn kernel modules registered fewer operators than expected"
    return ops


@pytest.mark.parametrize("info", _nn_ops(), ids=lambda o: o.name)
def test_schema_is_pytorchs(info):
    torch_schemas = {}
    for s in torch._C._jit_get_schemas_for_operator(info.schema.name):
        parsed = registry.parse_schema(str(s))
        torch_schemas[parsed.qualified] = parsed
    assert info.name in torch_schemas, f"PyTorch has no overload {info.name}"
    assert info.schema == torch_schemas[info.name], f"\n ours:  {info.schema.text}\n torch: {torch_schemas[info.name].text}"
