"""A CI subset of tools/language_programs.py: programs over the language's corners, each
from its printed graph and its .pt on both backends, against torch; every run must match
(torch's value, or an error where torch raised).  The subset holds every program that once
gave a wrong answer or crashed (container references, % formatting, tensor properties,
returned constants, module state)."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytest.importorskip("torch")

SUBSET = [
    "dict_keys_append", "dict_tensor_inplace", "dict_of_lists", "tuple_of_list_alias", "list_nested_alias",
    "class_attr_list_alias", "list_tensor_eq_raises", "str_percent_many", "str_percent_too_few",
    "str_percent_bad_spec", "tensor_properties", "tensor_mh_real", "tensor_grad_none", "list_empty_len",
    "class_contains", "module_state_update", "module_attributes", "frozen_module", "moduledict_index",
    "optional_tensor", "union_isinstance", "raise_valueerror", "int_overflow_wraps", "submodule_identity",
]


@pytest.fixture(scope="module")
def corpus():  # noqa: ANN201
    spec = importlib.util.spec_from_file_location("language_programs", ROOT / "tools" / "language_programs.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def test_subset_names_exist(corpus) -> None:  # noqa: ANN001
    assert set(SUBSET) <= set(corpus.PROGRAMS) | set(corpus.MODULES)
    assert len(corpus.PROGRAMS) + len(corpus.MODULES) >= 150


def test_subset_matches_torch_everywhere(corpus, tmp_path: Path) -> None:  # noqa: ANN001
    warnings.filterwarnings("ignore")
    source = tmp_path / "language_corpus.py"
    source.write_text(corpus._source())  # noqa: SLF001
    spec = importlib.util.spec_from_file_location("language_corpus", source)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["language_corpus"] = mod
    try:
        spec.loader.exec_module(mod)
        failures = {}
        for name in SUBSET:
            outcomes = corpus.run_one(name, mod, tmp_path)
            bad = {k: v for k, v in outcomes.items() if v != "match"}
            if bad:
                failures[name] = bad
    finally:
        sys.modules.pop("language_corpus", None)
    assert not failures, failures
