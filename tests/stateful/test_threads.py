"""State across threads is torch's: one module object, whatever thread calls.  A model
that writes state runs one call at a time (a lock over all its methods); a stateless
model's calls run at once, each thread on its own runtime."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import vm  # noqa: E402
from tests.support.stateful_models import Counter  # noqa: E402

BACKENDS = ["interp", "static"]


@pytest.fixture(scope="module")
def counter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("threads") / "counter.pt"
    torch.jit.script(Counter()).save(str(path))
    return path


def _torch_stream(path: Path, x: np.ndarray, calls: int) -> list[np.ndarray]:
    module = torch.jit.load(str(path))
    with torch.no_grad():
        return [module(torch.from_numpy(x)).numpy() for _ in range(calls)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_three_fresh_threads_see_one_counter(counter: Path, backend: str) -> None:
    """The issue's example: [0,1,2] [0,3,6] [0,5.25,10.5], as torch gives."""
    model = vm.load(counter, backend=backend)
    x = np.arange(3, dtype=np.float32)
    outs: list[np.ndarray] = []
    for _ in range(3):
        t = threading.Thread(target=lambda: outs.append(model(x)))
        t.start()
        t.join()
    np.testing.assert_allclose(np.stack(outs), [[0, 1, 2], [0, 3, 6], [0, 5.25, 10.5]])
    np.testing.assert_allclose(np.stack(outs), np.stack(_torch_stream(counter, x, 3)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_concurrent_calls_are_serialized(counter: Path, backend: str) -> None:
    """8 threads x 10 calls at once with the same input: every call sees the state the one
    before it left, so the results are torch's 80 sequential ones, in some order."""
    model = vm.load(counter, backend=backend)
    assert model.state == ("count", "state")
    x = np.arange(3, dtype=np.float32)
    outs: list[np.ndarray] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def work() -> None:
        start.wait()
        for _ in range(10):
            y = model(x)
            with lock:
                outs.append(y)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert model.module_object.get("count") == 80
    want = np.stack(_torch_stream(counter, x, 80))
    got = np.stack(sorted(outs, key=lambda a: float(a[1])))
    np.testing.assert_allclose(got, want[np.argsort(want[:, 1], kind="stable")], rtol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_call_waits_for_the_call_in_progress(counter: Path, backend: str) -> None:
    """While one call holds the model's state, another thread's call does not start."""
    model = vm.load(counter, backend=backend)
    x = np.arange(3, dtype=np.float32)
    done = threading.Event()
    assert model._calls is not None
    with model._calls:  # a call in progress
        t = threading.Thread(target=lambda: (model(x), done.set()))
        t.start()
        assert not done.wait(0.3)
    t.join(10)
    assert done.is_set()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_stateless_model_runs_calls_at_once(tmp_path: Path, backend: str) -> None:
    """No lock: each thread runs on its own runtime, and every result is torch's."""
    torch.manual_seed(0)
    net = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval())
    net.save(str(tmp_path / "mlp.pt"))
    model = vm.load(tmp_path / "mlp.pt", backend=backend)
    assert model.state == () and model._calls is None
    xs = [np.random.default_rng(i).standard_normal((2, 4)).astype(np.float32) for i in range(6)]
    outs: dict[int, np.ndarray] = {}
    threads = [threading.Thread(target=lambda i=i: outs.__setitem__(i, model(xs[i]))) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with torch.no_grad():
        for i, x in enumerate(xs):
            np.testing.assert_allclose(outs[i], net(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_a_runtime_pool_over_a_module_with_state_serializes_its_calls(counter: Path) -> None:
    from vm.static import RuntimePool

    model = vm.load(counter, backend="static")
    pool = RuntimePool(model.static_module, 4)
    x = np.arange(3, dtype=np.float32)
    threads = [threading.Thread(target=lambda: [pool(x) for _ in range(5)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert model.module_object.get("count") == 20
    np.testing.assert_allclose(model.module_object.get("state"), x * (2 - 0.5**19), rtol=1e-5)
