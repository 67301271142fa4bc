"""One Program, one Interpreter, eight threads: every run owns its frames and registers."""

from __future__ import annotations

import threading

import numpy as np

from compiler import compile_source
from vm.interpreter.machine import Interpreter

LOOP = """\
graph(%x : Tensor, %n : int):
  %true : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %y : Tensor, %k : int = prim::Loop(%n, %true, %x, %one)
    block0(%i : int, %acc : Tensor, %c : int):
      %a2 : Tensor = aten::mul(%acc, %c)
      %a3 : Tensor = aten::add(%a2, %x, %one)
      %c2 : int = aten::add(%c, %i)
      -> (%true, %a3, %c2)
  return (%y, %k)
"""


def _expected(x: np.ndarray, n: int) -> tuple[np.ndarray, int]:
    acc, c = x, 1
    for i in range(n):
        acc = acc * c + x
        c = c + i
    return acc, c


def test_eight_threads_two_hundred_runs_each() -> None:
    interp = Interpreter(compile_source(LOOP, "threads.ir"))
    failures: list[str] = []

    def worker(t: int) -> None:
        for run in range(200):
            x = np.full(16, t + run / 1000, dtype=np.float32)
            n = (t + run) % 7
            y, k = interp(x, n)
            ey, ek = _expected(x, n)
            if k != ek or not np.allclose(y, ey, rtol=1e-5):
                failures.append(f"thread {t} run {run}: {y[0]}, {k} != {ey[0]}, {ek}")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert failures == []
