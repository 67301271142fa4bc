"""Benchmark: irvm's interpreter against torch.jit.script on small tensors, in one run.

    python tools/bench_interp.py [--repeat 200] [--quick]

For each program (a 100-iteration loop of small tensor ops on 16 elements, and the seed
programs of the corpus at their small sizes) it reports:

- the time per call under irvm and under torch.jit.script (torch warmed up first: its
  profiling executor optimizes after the first runs), and their ratio;
- irvm's dispatch cost: the run time minus the time of the same kernel calls replayed
  alone (recorded during one run, replayed in a bare loop whose own cost is subtracted),
  divided by the number of bytecode instructions executed and by the number of decoded
  (register-form) instructions executed;
- the first call of a fresh Interpreter against the median of the next 100, showing that
  all compilation and binding happen at construction (no warm-up).

Needs torch (for the comparison and for scripting the loop program).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compiler import compile_source
from vm.files.npz import load_inputs
from vm.interpreter import decode as D
from vm.interpreter.machine import Interpreter
from vm.program.bytecode import Program

CORPUS = ROOT / "tests" / "data" / "corpus"
SEEDS = ["x2", "dim_loop", "ratio_iou", "lunif2", "lstm_cell"]


# CPU time of this thread, not wall-clock time: the machine is shared, and time spent
# waiting for a core is not the program's cost (torch runs single-threaded here too).
clock = time.thread_time


def best_of(fn: Callable[[], Any], repeat: int, rounds: int = 7) -> float:
    """Seconds per call: the best of ``rounds`` batches of ``repeat`` calls."""
    best = float("inf")
    for _ in range(rounds):
        t0 = clock()
        for _ in range(repeat):
            fn()
        best = min(best, (clock() - t0) / repeat)
    return best


def loop_program() -> tuple[str, Callable[..., Any], tuple[Any, ...]]:
    import torch

    def small_loop(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        for _ in range(100):
            x = torch.relu(x * y + 1.0) - y
        return x

    x = np.linspace(-1, 1, 16, dtype=np.float32)
    y = np.full(16, 0.5, np.float32)
    scripted = torch.jit.script(small_loop)
    return str(scripted.graph), scripted, (x, y)


def count_instructions(interp: Interpreter, args: tuple[Any, ...]) -> tuple[int, int]:
    """(bytecode instructions, decoded instructions) executed by one run."""
    from vm.interpreter import reference
    counted = {"n": 0}
    program = interp.program
    original = reference._step

    def counting_step(*a: Any, **k: Any) -> None:
        counted["n"] += 1
        original(*a, **k)

    reference._step = counting_step  # type: ignore[assignment]
    try:
        interp.run_reference(*args)
    finally:
        reference._step = original  # type: ignore[assignment]
    calls_and_rets = _count_calls(interp, args)
    bytecode = counted["n"] + calls_and_rets
    decoded = _count_decoded(interp, args, program)
    return bytecode, decoded


def _count_calls(interp: Interpreter, args: tuple[Any, ...]) -> int:
    # CALL/RET are handled by the reference loop itself, not by _step: count them apart
    from vm.interpreter import reference
    n = {"c": 0}
    original = reference._new_frame

    def counting(*a: Any) -> Any:
        n["c"] += 1
        return original(*a)

    reference._new_frame = counting  # type: ignore[assignment]
    try:
        interp.run_reference(*args)
    finally:
        reference._new_frame = original  # type: ignore[assignment]
    return 2 * n["c"] - 1  # every frame but the first is entered by a CALL; all RET


def _count_decoded(interp: Interpreter, args: tuple[Any, ...], program: Program) -> int:
    """Run a copy of the fast loop over code whose every instruction is counted."""
    counter = {"n": 0}
    originals = interp.decoded

    class Counting(tuple):  # type: ignore[type-arg]
        def __getitem__(self, i: Any) -> Any:
            counter["n"] += 1
            return tuple.__getitem__(self, i)

    interp.use_decoded(tuple(attrs.evolve(d, code=Counting(d.code)) for d in originals))
    try:
        interp(*args)
    finally:
        interp.use_decoded(originals)
    return counter["n"]


def kernel_time(interp: Interpreter, args: tuple[Any, ...], repeat: int) -> float:
    """Seconds per run spent in kernels alone: calls recorded once, then replayed."""
    calls: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []
    originals = interp.decoded

    def recording(fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*a: Any) -> Any:
            calls.append((fn, a))
            return fn(*a)

        return wrapper

    program = interp.program
    wrapped = [[recording(k) for k in ks] for ks in interp.kernels]
    interp.use_decoded(
        tuple(D.decode(program, f, wrapped[i], interp.constants[i]) for i, f in enumerate(program.functions))
    )
    try:
        interp(*args)
    finally:
        interp.use_decoded(originals)

    def replay() -> None:
        for fn, a in calls:
            fn(*a)

    def bare() -> None:
        for _fn, _a in calls:
            pass

    return best_of(replay, repeat) - best_of(bare, repeat)


def noop_dispatch(interp: Interpreter, args: tuple[Any, ...], repeat: int) -> tuple[float, int]:
    """(seconds per run with every kernel replaced by a no-op, number of kernel calls).

    The no-op returns, call after call, what the real kernel returned in a recorded run,
    so control flow is the same; the cost of calling the no-op itself is measured apart
    and subtracted, leaving the dispatch loop alone.
    """
    program = interp.program
    originals = interp.decoded

    def recording(fn: Callable[..., Any], into: list[Any]) -> Callable[..., Any]:
        def wrapper(*a: Any) -> Any:
            r = fn(*a)
            into.append(r)
            return r

        return wrapper

    def decode_with(kernels: list[list[Callable[..., Any]]]) -> tuple[D.Decoded, ...]:
        return tuple(D.decode(program, f, kernels[i], interp.constants[i]) for i, f in enumerate(program.functions))

    sinks = [[[] for _ in ks] for ks in interp.kernels]
    interp.use_decoded(
        decode_with([[recording(k, sinks[i][j]) for j, k in enumerate(ks)] for i, ks in enumerate(interp.kernels)])
    )
    interp(*args)
    n_calls = sum(len(s) for ss in sinks for s in ss)
    total = 0.0
    best = float("inf")
    for _ in range(5):
        runs = []
        for _ in range(repeat):
            iters = [[iter(s) for s in ss] for ss in sinks]
            runs.append(decode_with([[_noop(it.__next__) for it in its] for its in iters]))
        t0 = clock()
        for decoded in runs:
            interp.use_decoded(decoded)
            interp(*args)
        best = min(best, (clock() - t0) / repeat)
    interp.use_decoded(originals)
    one = _noop(iter([None] * 1_000_000).__next__)
    t_noop = best_of(lambda: one(1, 2), 100_000) - best_of(lambda: None, 100_000)
    total = best - n_calls * max(t_noop, 0.0)
    return total, n_calls


def _noop(next_result: Callable[[], Any]) -> Callable[..., Any]:
    return lambda *a: next_result()


def first_call(program: Program, args: tuple[Any, ...], fresh: int = 20) -> tuple[float, float, float]:
    """Medians over ``fresh`` new interpreters of: the first call right after construction
    (the constructor just evicted the CPU caches), the first call of an interpreter built
    earlier (all built, then each called once), and later calls."""
    right_after, later = [], []
    for _ in range(fresh):
        interp = Interpreter(program)
        t0 = clock()
        interp(*args)
        right_after.append(clock() - t0)
        for _ in range(100 // fresh + 1):
            t0 = clock()
            interp(*args)
            later.append(clock() - t0)
    built = [Interpreter(program) for _ in range(fresh)]
    firsts = []
    for interp in built:
        t0 = clock()
        interp(*args)
        firsts.append(clock() - t0)
    return statistics.median(right_after), statistics.median(firsts), statistics.median(later)


def torch_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    import torch

    return tuple(torch.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a for a in args)


def bench(name: str, program: Program, scripted: Any, args: tuple[Any, ...], repeat: int) -> dict[str, Any]:
    interp = Interpreter(program)
    t_irvm = best_of(lambda: interp(*args), repeat)
    targs = torch_args(args)
    for _ in range(5):
        scripted(*targs)
    t_torch = best_of(lambda: scripted(*targs), repeat) if scripted is not None else float("nan")
    # A fused kernel is one bytecode OP (its group's kernels count as kernel time).
    n_byte, n_dec = count_instructions(interp, args)
    t_kern = kernel_time(interp, args, repeat)
    t_noop, n_calls = noop_dispatch(interp, args, repeat)
    cold, first, later = first_call(program, args)
    overhead = t_irvm - t_kern
    return {
        "name": name,
        "irvm_us": t_irvm * 1e6,
        "torch_us": t_torch * 1e6,
        "ratio": t_torch / t_irvm,
        "bytecode": n_byte,
        "decoded": n_dec,
        "ns_per_bytecode": overhead / n_byte * 1e9,
        "ns_per_decoded": overhead / n_dec * 1e9,
        "kernels_us": t_kern * 1e6,
        "noop_ns_per_bytecode": t_noop / n_byte * 1e9,
        "noop_ns_per_decoded": t_noop / n_dec * 1e9,
        "kernel_calls": n_calls,
        "cold_us": cold * 1e6,
        "first_us": first * 1e6,
        "later_us": later * 1e6,
    }


def seed(name: str) -> tuple[Program, Any, tuple[Any, ...]]:
    import torch

    path = CORPUS / f"{name}.ir"
    text = path.read_text()
    program = compile_source(text, str(path))
    args = tuple(load_inputs(CORPUS / f"{name}.inputs.npz", program))
    scripted = _torch_seed(name, torch)
    return program, scripted, args


def _torch_seed(name: str, torch: Any) -> Any:
    sys.path.insert(0, str(ROOT / "tools"))
    import corpus_programs  # type: ignore[import-not-found]

    fn = getattr(corpus_programs, name, None)
    if fn is None:
        for attr in dir(corpus_programs):
            obj = getattr(corpus_programs, attr)
            if isinstance(obj, dict) and name in obj:
                fn = obj[name]
    return torch.jit.script(fn) if callable(fn) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="only the 100-iteration loop")
    options = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    rows = []
    text, scripted, args = loop_program()
    variants = [
        ("loop100 (16 elems)", {}),  # the default: fusion groups run as fused kernels
        ("  groups as CALLs", {"fused_kernels": False}),
        ("  no fusion", {"fusion": False}),
    ]
    for label, options_ in variants:
        program = compile_source(text, "loop100.ir", **options_)
        rows.append(bench(label, program, scripted, args, max(options.repeat // 10, 5)))
    if not options.quick:
        for name in SEEDS:
            program, scripted, args = seed(name)
            rows.append(bench(name, program, scripted, args, options.repeat))
    head = (
        f"{'program':<20} {'irvm us':>9} {'torch us':>9} {'torch/irvm':>10} {'bytecode':>8} {'decoded':>8}"
        f" {'ns/bc':>6} {'ns/dec':>6} {'noop/bc':>7} {'noop/dec':>8} {'kern us':>8} {'calls':>6} {'us/kern':>7}"
        f" {'cold us':>8} {'1st us':>8} {'next us':>8}"
    )
    print(head)
    for r in rows:
        print(
            f"{r['name']:<20} {r['irvm_us']:9.1f} {r['torch_us']:9.1f} {r['ratio']:10.2f} {r['bytecode']:8d}"
            f" {r['decoded']:8d} {r['ns_per_bytecode']:6.0f} {r['ns_per_decoded']:6.0f}"
            f" {r['noop_ns_per_bytecode']:7.0f} {r['noop_ns_per_decoded']:8.0f} {r['kernels_us']:8.1f}"
            f" {r['kernel_calls']:6d} {r['kernels_us'] / max(r['kernel_calls'], 1):7.2f}"
            f" {r['cold_us']:8.1f} {r['first_us']:8.1f} {r['later_us']:8.1f}"
        )
    print(
        "\nns/bc: irvm time minus kernel time (kernels replayed alone), per bytecode instruction"
        " executed; ns/dec: the same per decoded instruction.\nnoop/bc, noop/dec: run time with"
        " every kernel a no-op (its call cost subtracted), per instruction: the dispatch loop alone."
        "\ncold us: first call right after the constructor (cold CPU caches); 1st us: first call of an"
        " Interpreter built earlier; next us: later calls (medians over 20 interpreters)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
