"""End to end: real torch modules (scripted, traced, traced on the fused fast path, frozen)
dumped by tools/dump_nn_models.py into tests/data/nn_models/, run in irvm on both backends,
must match torch's outputs within float32 tolerance.

Each dump is NAME.ir + NAME.weights.npz + NAME.inputs.npz + NAME.expected.npz; the test
binds ``%self`` (or a frozen graph's tensor constants) from the weights, so it also
checks vm.binding.weights.bind_self / bind_constants on real graphs: typed plain attributes,
parameterless submodules, an RNN's ``_flat_weights`` rebuilt from its named parameters.
"""

from __future__ import annotations

import numpy as np
import pytest

import compiler
import vm
from compiler.diagnostics import RunError
from tests.support.paths import NN_MODELS
from vm.files import npz as io

MODELS = NN_MODELS
DUMPS = sorted(p.stem for p in MODELS.glob("*.ir"))


def test_every_model_of_the_issue_is_dumped():
    wanted = ["mlp", "cnn", "lstm_cell", "gru_cell", "lstm", "gru", "embedding", "embedding_bag", "encoder_layer", "mha"]
    for name in wanted:
        assert f"{name}_script" in DUMPS and f"{name}_trace" in DUMPS, name
    assert {"encoder_layer_trace_fast", "mha_trace_fast", "mlp_freeze", "cnn_freeze"} <= set(DUMPS)


_programs: dict[str, object] = {}


def _program(name: str):
    if name not in _programs:
        path = MODELS / f"{name}.ir"
        _programs[name] = compiler.compile_source(path.read_text(), str(path))
    return _programs[name]


@pytest.mark.parametrize("backend", ["Interpreter", "StaticRuntime"])
@pytest.mark.parametrize("name", DUMPS)
def test_model_matches_torch(name, backend):
    program = _program(name)
    weights = io.read_npz(MODELS / f"{name}.weights.npz")
    inputs = io.load_inputs(MODELS / f"{name}.inputs.npz", program)
    runner = getattr(vm, backend)(program, weights)
    expected = io.read_npz(MODELS / f"{name}.expected.npz")
    n_outputs = len([k for k in io.spec_of(expected)])
    got = io.flatten_outputs(io.outputs_as_list(runner(*inputs), n_outputs))
    problems = io.compare_flat(expected, got, rtol=1e-4, atol=2e-5)
    assert not problems, "\n".join(problems)


def test_missing_parameters_are_all_named_before_the_run():
    program = _program("cnn_script")
    weights = io.read_npz(MODELS / "cnn_script.weights.npz")
    del weights["head.bias"], weights["features.1.running_var"]
    with pytest.raises(RunError) as err:
        vm.Interpreter(program, weights)
    text = str(err.value)
    assert "head.bias : Tensor" in text and "features.1.running_var : Tensor" in text


def test_frozen_graph_reports_every_missing_constant():
    program = _program("mlp_freeze")
    weights = io.read_npz(MODELS / "mlp_freeze.weights.npz")
    unprinted = [k for k in weights if "<Tensor>" in _constant_line(program, k)]
    assert unprinted, "the frozen dump should have <Tensor> constants"
    for key in unprinted:
        del weights[key]
    with pytest.raises(RunError) as err:
        vm.Interpreter(program, weights)
    for key in unprinted:
        assert key in str(err.value)


def _constant_line(program, key: str) -> str:
    for line in (MODELS / "mlp_freeze.ir").read_text().splitlines():
        if line.strip().startswith(f"%{key} "):
            return line
    return ""


def test_weights_files_hold_plain_attributes_as_zero_d_arrays():
    weights = io.read_npz(MODELS / "mha_script.weights.npz")
    assert weights["attn.num_heads"].shape == () and int(weights["attn.num_heads"]) == 4
    assert weights["attn._qkv_same_embed_dim"].dtype == np.bool_
