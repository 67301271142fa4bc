"""vm/files/npz.py: the .npz conventions for program inputs and outputs.

Flattening must be lossless (kinds survive: an int is not a 0-d tensor, an empty list is
not None), inputs must be found by name, by position, or by the graph's types when a
hand-written file has no ``__spec__``, and comparisons must catch kind, dtype, shape and
value differences.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from compiler import types as T
from compiler.diagnostics import RunError
from tests.support.paths import CORPUS
from tests.support.reference import same_value
from vm.files.npz import (
    compare_flat,
    flatten_outputs,
    load_inputs,
    outputs_as_list,
    read_npz,
    save_outputs,
    save_values,
    unflatten,
)
from vm.ir.graph import Graph

arrays = st.builds(
    lambda shape, dtype: (np.arange(int(np.prod(shape))) % 3).astype(dtype).reshape(shape),
    st.lists(st.integers(0, 3), max_size=3), st.sampled_from([np.float32, np.int64, np.bool_, np.float64]),
)
leaves = st.one_of(arrays, st.integers(-2**62, 2**62), st.floats(allow_nan=False), st.booleans(),
                   st.text(st.characters(blacklist_characters="\x00"), max_size=5), st.none())  # numpy drops trailing NULs
values = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(st.text("abc", min_size=1, max_size=3), inner, max_size=3)), max_leaves=8)


@given(values)
def test_flatten_then_unflatten_gives_the_same_value_and_kinds(value: Any) -> None:
    flat = flatten_outputs([value])
    assert same_value(unflatten(flat, "out0"), value)


def test_outputs_are_flattened_as_documented(tmp_path: Path) -> None:
    save_outputs(tmp_path / "o.npz", [(np.ones(2, np.float32), [3, 2.5]), True])
    with np.load(tmp_path / "o.npz") as data:
        assert str(data["__irvm__"]) == "outputs", "the mark by which irvm may replace its own file"
    flat = read_npz(tmp_path / "o.npz")
    assert sorted(flat) == ["__spec__", "out0.0", "out0.1.0", "out0.1.1", "out1"]
    assert flat["out0.1.0"].dtype == np.int64 and flat["out0.1.1"].dtype == np.float64
    assert flat["out1"].dtype == np.bool_ and flat["out1"].shape == ()


def test_outputs_as_list_splits_only_multiple_graph_outputs() -> None:
    assert outputs_as_list((1, 2), 1) == [(1, 2)]
    assert outputs_as_list((1, 2), 2) == [1, 2]


def graph_with(*params: tuple[str, Any]) -> Graph:
    g = Graph()
    for name, type_ in params:
        g.block.add_param(name, type_)
    return g


def test_inputs_by_name_by_position_and_by_graph_type() -> None:
    """A hand-written file: names or argN, scalars as 0-d arrays, lists flattened or 1-d."""
    g = graph_with(("self", T.ClassType("__torch__.M")), ("x.1", T.TENSOR), ("n.1", T.INT), ("b", T.OptionalType(T.TENSOR)),
                   ("xs", T.ListType(T.INT)), ("ts", T.ListType(T.TENSOR)), ("f", T.FLOAT))
    flat = {"x.1": np.ones(2, np.float32), "arg1": np.array(3), "xs": np.array([1, 2]),
            "ts.0": np.zeros(1), "ts.1": np.ones(1), "f": np.array(2)}
    x, n, b, xs, ts, f = load_inputs(flat, g)
    assert x.dtype == np.float32 and n == 3 and type(n) is int and b is None
    assert xs == [1, 2] and type(xs[0]) is int and len(ts) == 2 and f == 2.0 and type(f) is float


def test_inputs_keyed_by_python_argument_names() -> None:
    """A file keyed by the Python arguments (``x``) feeds TorchScript's ``%x.1``; when two
    inputs share a Python name (``%x.1``, ``%x.2``) only their IR names are accepted."""
    g = graph_with(("x.1", T.TENSOR), ("n.3", T.INT))
    x, n = load_inputs({"x": np.ones(2, np.float32), "n": np.array(4)}, g)
    assert x.dtype == np.float32 and n == 4 and type(n) is int
    twins = graph_with(("x.1", T.TENSOR), ("x.2", T.TENSOR))
    with pytest.raises(RunError, match="'x.1'.*missing"):
        load_inputs({"x": np.ones(2)}, twins)


def test_inputs_keyed_by_a_dump_feed_the_same_tensor_input_of_an_archive() -> None:
    """A file made for a dump (``x.1``) feeds a ``.pt`` graph's ``%x``: a tensor input has no
    elements for ``x.1`` to be; two such keys for one input are no answer, and refused."""
    g = graph_with(("x", T.TENSOR), ("n", T.INT))
    x, n = load_inputs({"x.1": np.ones(2, np.float32), "n.3": np.array(4)}, g)
    assert x.dtype == np.float32 and x.shape == (2,) and n == 4
    with pytest.raises(RunError, match="missing entry 'x'"):
        load_inputs({"x.1": np.ones(2), "x.2": np.ones(2), "n": np.array(4)}, g)


def test_inputs_with_a_spec_keep_their_kinds(tmp_path: Path) -> None:
    g = graph_with(("x", T.TENSOR), ("t", T.TupleType((T.INT, T.TENSOR))), ("o", T.OptionalType(T.INT)))
    save_values(tmp_path / "i.npz", {"x": np.array(1.5, np.float32), "t": (4, np.zeros(2)), "o": None})
    x, t, o = load_inputs(tmp_path / "i.npz", g)
    assert isinstance(x, np.ndarray) and x.shape == () and t[0] == 4 and o is None


def test_missing_and_stray_inputs_are_reported() -> None:
    g = graph_with(("x", T.TENSOR))
    with pytest.raises(RunError, match="'x'.*missing"):
        load_inputs({}, g)
    with pytest.raises(RunError, match="no graph input: y"):
        load_inputs({"x": np.ones(1), "y": np.ones(1)}, g)


def test_compare_flat_catches_kind_dtype_shape_and_values() -> None:
    base = flatten_outputs([np.ones(3, np.float32)])
    assert compare_flat(base, flatten_outputs([np.ones(3, np.float32) + 1e-7])) == []
    assert compare_flat(base, flatten_outputs([np.ones(3, np.float64)]))[0].startswith("out0: dtype")
    assert "shape" in compare_flat(base, flatten_outputs([np.ones(4, np.float32)]))[0]
    assert "values differ" in compare_flat(base, flatten_outputs([np.zeros(3, np.float32)]))[0]
    assert "kinds differ" in compare_flat(flatten_outputs([3]), flatten_outputs([np.array(3)]))[0]
    assert compare_flat(flatten_outputs([np.array([np.nan])]), flatten_outputs([np.array([np.nan])])) == []


def test_inputs_of_a_program_read_without_its_ir_module() -> None:
    """A program loaded from .irbc has no IR module: its recorded signature is used."""
    import attrs

    import compiler

    corpus = CORPUS
    program = compiler.compile_source((corpus / "lstm_cell_module.ir").read_text())
    bare = attrs.evolve(program, module=None)
    x, (h, c) = load_inputs(corpus / "lstm_cell_module.inputs.npz", bare)
    assert x.shape == (3, 4) and h.shape == c.shape == (3, 5)


def test_values_and_outputs_with_numpys_keyword_names_round_trip(tmp_path: Path) -> None:
    """Inputs named ``file`` or ``allow_pickle`` (``numpy.savez``'s own keywords) are saved
    and read back like any other name, to exactly the path given."""
    g = graph_with(("file", T.TENSOR), ("allow_pickle", T.INT))
    path = tmp_path / "inputs"  # no suffix: none is added
    save_values(path, {"file": np.arange(3, dtype=np.float32), "allow_pickle": 7})
    assert path.exists() and not (tmp_path / "inputs.npz").exists()
    file, flag = load_inputs(path, g)
    assert file.tolist() == [0.0, 1.0, 2.0] and file.dtype == np.float32 and flag == 7
