"""Shared test set-up: hypothesis profiles and the command-line options.

Profiles: ``ci`` (default, 200 examples per property, derandomized) and ``long`` (10,000,
random), chosen with ``pytest --hypothesis-profile long``.  Options: ``--zoo=all`` runs
every model of the zoo (tests/zoo/test_zoo.py), ``--regen-goldens`` rewrites the golden
files (tests/emit/goldens/) instead of comparing with them, ``--stateful-calls=N`` runs
each stream of the stateful harness (tests/stateful/) for N calls instead of 30.
"""

import os
import tempfile

# The compiled tier loads on the caller's thread in the suite (``vm.ops.compiled.loading``):
# every test then runs the same kernels whatever ran before it.  The default, background
# loading, is tested on its own (tests/compiled/test_tiers.py), in fresh interpreters.
os.environ.setdefault("IRVM_COMPILE", "eager")
# Compiled programs (vm.api.program_cache) go to a folder of this session's, never the user's.
os.environ.setdefault("IRVM_CACHE_DIR", tempfile.mkdtemp(prefix="irvm-test-cache-"))

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    # The same examples on every run, so a landing never hangs on a fresh random draw;
    # `--hypothesis-profile long` (10,000, random) is where new counterexamples are hunted.
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "long",
    max_examples=10_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_addoption(parser):
    parser.addoption(
        "--zoo",
        choices=("ci", "all"),
        default="ci",
        help="model zoo (tests/zoo/test_zoo.py): the CI subset (default) or every model (all)",
    )
    parser.addoption(
        "--regen-goldens",
        action="store_true",
        default=False,
        help="rewrite the [out] sections of golden files (tests/emit/goldens) with today's output",
    )
    parser.addoption(
        "--stateful-calls",
        type=int,
        default=30,
        help="consecutive calls of each stream of the stateful harness (tests/stateful/)",
    )


@pytest.fixture
def stateful_calls(request: pytest.FixtureRequest) -> int:
    """The calls of each stateful stream (``--stateful-calls``, 30 by default)."""
    return int(request.config.getoption("--stateful-calls"))


@pytest.fixture
def regen_goldens(request: pytest.FixtureRequest) -> bool:
    """True under ``pytest --regen-goldens``: golden tests write their output instead of comparing."""
    return bool(request.config.getoption("--regen-goldens"))
