"""The model zoo: real torchvision, Hugging Face and timm models, scripted, traced and
frozen by torch, run on both backends and compared with torch's outputs.

Cases come from ``tools/gen_zoo.py`` (a model built by ``tools/zoo_models.py``, exported by
``tools/export_torch.py``) in the cache folder (``$IRVM_ZOO_CACHE``, else
``~/.cache/irvm/zoo``); a case missing there, or made by other code, is generated on the fly.
By default the CI subset runs (``zoo_models.CI_SUBSET``: one model of each family, about
two minutes); ``pytest tests/zoo/test_zoo.py --zoo=all`` runs every model (cases marked
``zoo_full``; hours, and gigabytes of cache).  A model whose package (torchvision,
transformers, timm) does not import is skipped with the reason; so is a case torch itself
cannot script or trace.  The tolerance is ``tools/zoo_check.py``'s: float32 error relative
to the output's scale (its docstring says why).

``KNOWN_FAILURES`` lists the subset's cases that fail today on a piece another change owns,
by the text of their error: such a case is an xfail while it fails with that error, passes
once the piece lands, and fails on any other error.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import pytest

from tests.support.paths import TOOLS

pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

sys.path.insert(0, str(TOOLS))

import gen_zoo
import zoo_check
from zoo_models import CI_SUBSET, ZOO, available

# Cases of the CI subset that fail today: case -> the text of the error it stops on (a piece
# issue #14 asks for that another change owns). Empty since random operators, module
# attributes and the zoo's operators landed.
KNOWN_FAILURES: dict[str, str] = {}


def _cases(full: bool) -> list[Any]:
    params = []
    for name in ZOO if full else CI_SUBSET:
        model = ZOO.get(name)
        if model is None:  # its package is absent, so the zoo could not list it
            params.append(pytest.param(name, f"{name}.?", id=f"{name}.?"))
            continue
        for case, _ in gen_zoo.cases_of(model):
            marks = [pytest.mark.zoo_full] if name not in CI_SUBSET else []
            params.append(pytest.param(name, case, id=case, marks=marks))
    return params


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "zoo_case" in metafunc.fixturenames:
        full = metafunc.config.getoption("--zoo") == "all"
        metafunc.parametrize(("model_name", "zoo_case"), _cases(full))


@functools.cache
def _records(name: str) -> dict[str, dict[str, Any]]:
    """The manifest records of model ``name``, generating its cases when missing or stale."""
    folder = zoo_check.cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    records = gen_zoo.process(name, folder, generate=True, run=False)
    return {r["name"]: r for r in records}


def _record(model_name: str, case: str) -> dict[str, Any]:
    model = ZOO.get(model_name)
    if model is None:
        pytest.skip(f"{model_name}: torchvision is not importable, so the zoo has no such model")
    reason = available(model)
    if reason is not None:
        pytest.skip(reason)
    record = _records(model_name)[case]
    if "torch_error" in record:
        pytest.skip(f"torch itself cannot compile {case}: {record['torch_error']}")
    assert "export_error" not in record, f"{case}: {record['export_error']}"
    return record


@pytest.mark.parametrize("backend", zoo_check.BACKENDS)
def test_zoo_case_matches_torch(model_name: str, zoo_case: str, backend: str) -> None:
    """A zoo model compiled by torch runs on ``backend`` and gives torch's outputs (kinds,
    dtypes, shapes exactly; floats within float32 tolerance at the output's scale)."""
    _record(model_name, zoo_case)
    outcome = zoo_check.run_case(zoo_case, backend, zoo_check.cache_dir())
    known = KNOWN_FAILURES.get(zoo_case)
    if outcome.status != "match" and known is not None and known in outcome.error:
        pytest.xfail(f"{zoo_case} stops on a piece not landed yet: {outcome.error}")
    assert outcome.status == "match", f"{zoo_case} on {backend}: {outcome.error}"


def test_zoo_case_matches_torch_with_the_load_time_folds_off(model_name: str, zoo_case: str) -> None:
    """The static runtime with every load-time rewrite switched off (``LOAD_TIME_FOLDS``:
    settings, BatchNorm, in-place epilogues) still gives torch's outputs; the default run
    above has them all on."""
    from vm.static import StaticOptions
    from vm.static.module_ir import LOAD_TIME_FOLDS

    _record(model_name, zoo_case)
    off = StaticOptions(**{name: False for name in LOAD_TIME_FOLDS})
    outcome = zoo_check.run_case(zoo_case, "static", zoo_check.cache_dir(), repeat_under_s=0, options=off)
    assert outcome.status == "match", f"{zoo_case} on static, folds off: {outcome.error}"


def test_compare_is_relative_to_output_scale() -> None:
    """An error of 1e-5 of the output's scale matches; one of 1e-2 of it does not, even when
    the element it lands on is near zero; kinds and shapes still compare exactly."""
    import numpy as np

    from vm.files.npz import flatten_outputs

    big = np.array([1e6, 1.0, -3e5], np.float32)
    expected = flatten_outputs([big])
    close = flatten_outputs([big + np.array([0.0, 10.0, 0.0], np.float32)])
    far = flatten_outputs([big + np.array([0.0, 1e4, 0.0], np.float32)])
    assert zoo_check.compare(expected, close)[0] == []
    assert zoo_check.compare(expected, far)[0] != []
    assert zoo_check.compare(expected, flatten_outputs([(big,)]))[0] != []
    assert zoo_check.compare(expected, flatten_outputs([big[:2]]))[0] != []


def test_every_timm_family_is_in_the_zoo_or_excluded_with_a_reason() -> None:
    """Each module of ``timm/models/`` that registers a model (timm's own grouping, as
    ``tools/zoo_timm.py`` computes it) has a zoo model or a stated reason to be left out,
    and every zoo model of a family is a model of that family."""
    import zoo_timm

    reason = available(ZOO["timm_resnet18"])
    if reason is not None:
        pytest.skip(reason)
    families = zoo_timm.timm_families()
    covered, excluded = set(zoo_timm.TIMM_MODELS), set(zoo_timm.TIMM_EXCLUDED)
    assert not covered & excluded
    assert sorted(set(families) - covered - excluded) == []
    assert sorted((covered | excluded) - set(families)) == []
    for family, models in zoo_timm.TIMM_MODELS.items():
        for name, _, _ in models:
            assert name in families[family], f"{name} is not a model of timm's {family} family"
            assert f"timm_{name}" in ZOO
