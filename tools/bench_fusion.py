"""Fused kernels against hand-written numpy, unfused irvm kernels and torch.jit.

    python tools/bench_fusion.py [--quick | --smoke] [--sweep-blocks] [--out bench_results/fusion.md]

Rows: ratio_iou (the seed notebook's box IoU, 20 elementwise ops, 8 inputs) at 1e4, 1e5
and 8e5 elements, and the 5-op chain ``relu(x*w + b)*0.5 + x`` at 16M elements, all
float32.  Columns (median ms): hand-written numpy, the group's ops one by one
(``FusedKernel.run_unfused``), fused-blocked (numpy, cache-blocked, threads), fused-numba
(the kernel with ``enable_numba()``), torch.jit.script of the same Python function, the
memory-bandwidth bound (bytes the group reads and writes / measured copy bandwidth), each
column's ratio to torch.jit and numba's ratio to the bound.

How it measures.  Each column runs in its own long-lived worker process (see
``tools/_bench_fusion_worker.py``), started with ``spawn`` once per run: in one process,
torch's OpenMP threads, numba's threads and irvm's fusion pool oversubscribed the two
cores and torch.jit read 2-4x slower than alone.  Per case, every worker builds the same
inputs from the same seed and warms up; then the parent asks the workers in turn, in an
order rotated every round, for a block of R timed calls (R chosen per column so a block
lasts about ``block_ms``), over several rounds, so that noise on the machine lands on every
column alike.  While one worker runs, the others are blocked on their pipes.  The table
shows medians; minima, all settings and the raw sample counts go to the JSON file next to
the markdown.  A cell marked † did not take the path its column names (the kernel fell
back: too small, or numba missing); the notes under the table say what ran and why.

``--sweep-blocks`` also times fused-blocked with ``max_block`` from 16K to 512K elements
(and ``min_block`` 16K, so small settings are not raised) on ratio_iou 8e5 and the chain
at 16M, interleaved the same way in the fused-blocked worker: the measurement behind the
fuser's default block size.  ``--smoke`` runs everything once at 1/100 of the sizes (for
the test of this tool).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import multiprocessing as mp
import os
import statistics
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_fusion_worker import COLUMNS, KERNEL_PATH, ROOT, worker_main  # noqa: E402

CASES = [("ratio_iou", 10_000), ("ratio_iou", 100_000), ("ratio_iou", 800_000), ("5-op chain", 16_000_000)]
SWEEP_CASES = [("ratio_iou", 800_000), ("5-op chain", 16_000_000)]
SWEEP_BLOCKS = [16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10]
N_INPUTS = {"ratio_iou": 8, "5-op chain": 3}
# Measured (see the report of this tool's rework): OMP_WAIT_POLICY=PASSIVE makes no
# difference to torch.jit alone in its process, so torch runs with OpenMP's defaults.
TORCH_ENV: dict[str, str] = {}


class Settings:
    def __init__(self, rounds: int, block_ms: float, min_repeats: int, max_repeats: int, scale: int, gap_s: float):
        self.rounds, self.block_ms, self.gap_s, self.scale = rounds, block_ms, gap_s, scale
        self.min_repeats, self.max_repeats = min_repeats, max_repeats

    def repeats(self, call_ms: float) -> int:
        """Calls per block: enough for ``block_ms``, within the bounds."""
        return max(self.min_repeats, min(self.max_repeats, math.ceil(self.block_ms / max(call_ms, 1e-3))))


FULL = Settings(rounds=9, block_ms=250, min_repeats=5, max_repeats=400, scale=1, gap_s=0.05)
QUICK = Settings(rounds=3, block_ms=100, min_repeats=3, max_repeats=200, scale=1, gap_s=0.05)
SMOKE = Settings(rounds=1, block_ms=0, min_repeats=1, max_repeats=1, scale=100, gap_s=0.0)


def size_label(n: int) -> str:
    """1e4, 8e5, 1.6e5, 16M: how the issue names sizes."""
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    exponent = int(math.floor(math.log10(n)))
    return f"{n / 10 ** exponent:g}e{exponent}"


def copy_bandwidth(n_bytes: int) -> dict[str, float]:
    """Bytes per second (read + write) of a large numpy copy, best of five, on one thread
    and on two threads copying a half each (numpy releases the GIL in copyto)."""
    a = np.ones(n_bytes // 4, np.float32)
    b = np.empty_like(a)
    np.copyto(b, a)  # faults the pages in

    def one() -> None:
        np.copyto(b, a)

    def two() -> None:
        half = a.size // 2
        t = threading.Thread(target=np.copyto, args=(b[half:], a[half:]))
        t.start()
        np.copyto(b[:half], a[:half])
        t.join()

    result = {}
    for name, fn in (("1 thread", one), ("2 threads", two)):
        best = math.inf
        for _ in range(5):
            t = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t)
        result[name] = 2 * a.nbytes / best
    return result


class Worker:
    """One column's process and the parent's end of its pipe."""

    def __init__(self, ctx: Any, column: str, env: dict[str, str]):
        self.column = column
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=worker_main, args=(child, column, env), name=f"bench-{column}", daemon=True)
        self.process.start()
        child.close()

    def send(self, *message: Any) -> None:
        self.conn.send(message)

    def receive(self) -> dict[str, Any]:
        answer = self.conn.recv()
        if "error" in answer:
            raise RuntimeError(f"the {self.column} worker failed:\n{answer['error']}")
        return answer

    def ask(self, *message: Any) -> dict[str, Any]:
        self.send(*message)
        return self.receive()

    def stop(self) -> None:
        try:
            self.send("stop")
        except (BrokenPipeError, OSError):
            pass
        self.process.join(timeout=10)
        if self.process.is_alive():
            self.process.kill()


def interleave(jobs: list[tuple[Worker, str, int]], settings: Settings) -> dict[tuple[str, str], dict[str, Any]]:
    """Run every (worker, variant, repeats) job once per round, the order rotated each
    round; gather the times and the kernel paths taken."""
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for r in range(settings.rounds):
        k = r % len(jobs)
        for worker, variant, repeats in jobs[k:] + jobs[:k]:
            answer = worker.ask("run", variant, repeats)
            slot = results.setdefault((worker.column, variant), {"times": [], "calls": 0, "paths": {}, "reasons": {}})
            slot["times"] += answer["times"]
            slot["calls"] += answer["calls"]
            for key in ("paths", "reasons"):
                for name, count in answer.get(key, {}).items():
                    slot[key][name] = slot[key].get(name, 0) + count
            if settings.gap_s:
                time.sleep(settings.gap_s)  # lets a column's threads go idle before the next one
    return results


def summarize(column: str, result: dict[str, Any], setup: dict[str, Any]) -> dict[str, Any]:
    times = result["times"]
    cell = {"median_ms": statistics.median(times), "min_ms": min(times), "samples": len(times),
            "calls": result["calls"], "paths": result["paths"], "reasons": result["reasons"],
            "checksum": setup["checksum"], "dtype": setup["dtype"], "notes": list(setup["notes"])}
    expected = KERNEL_PATH.get(column)
    if expected is not None:
        took = result["paths"].get(expected, 0)
        cell["took_path"] = took == result["calls"]
        if not cell["took_path"]:
            ran = ", ".join(f"{k} {v}" for k, v in result["paths"].items() if v) or "no counted path"
            why = "; ".join(f"{k} ({v})" for k, v in result["reasons"].items()) or "no fallback reason counted"
            cell["notes"].append(f"{took} of {result['calls']} calls took the {expected} path (ran: {ran}); {why}")
    return cell


def run_case(workers: dict[str, Worker], case: str, n: int, settings: Settings, sweep: bool) -> dict[str, Any]:
    variants = {column: {"default": {}} for column in workers}
    if sweep and "fused-blocked" in workers:
        for block in SWEEP_BLOCKS:
            variants["fused-blocked"][f"max_block={block}"] = {"min_block": SWEEP_BLOCKS[0], "max_block": block}
    for column, worker in workers.items():  # the workers set up in parallel
        worker.send("setup", case, n, variants[column])
    setups = {column: worker.receive() for column, worker in workers.items()}
    jobs = [(w, "default", settings.repeats(setups[c]["default"]["call_ms"])) for c, w in workers.items()]
    results = interleave(jobs, settings)
    row: dict[str, Any] = {"case": case, "n": n, "label": f"{case} n={size_label(n)}", "columns": {}}
    for column in workers:
        row["columns"][column] = summarize(column, results[(column, "default")], setups[column]["default"])
    row["bytes"] = (N_INPUTS[case] + 1) * n * 4
    row["checksum_problems"] = _checksum_problems(row["columns"])
    if sweep and "fused-blocked" in workers:
        blocked = workers["fused-blocked"]
        names = list(variants["fused-blocked"])
        setup = setups["fused-blocked"]
        jobs = [(blocked, name, settings.repeats(setup[name]["call_ms"])) for name in names]
        sweep_results = interleave(jobs, settings)
        row["sweep"] = {name: summarize("fused-blocked", sweep_results[("fused-blocked", name)], setup[name])
                        for name in names}
    return row


def _checksum_problems(cells: dict[str, dict[str, Any]]) -> list[str]:
    """Columns whose result sum differs from numpy's beyond float32 rounding."""
    ref = cells["numpy"]["checksum"]
    return [f"{c}: result sum {cell['checksum']:.6g} vs numpy {ref:.6g}" for c, cell in cells.items()
            if not math.isclose(cell["checksum"], ref, rel_tol=1e-4)]


# ---------------------------------------------------------------------------------------
# the report


def _cell(cell: dict[str, Any] | None, ref: float | None) -> str:
    if cell is None:
        return "n/a"
    mark = "" if cell.get("took_path", True) else "†"
    ratio = f" ({cell['median_ms'] / ref:.2f}x)" if ref else ""
    return f"{cell['median_ms']:.3f}{mark}{ratio}"


def main_table(rows: list[dict[str, Any]], bandwidth: float) -> list[str]:
    head = [*COLUMNS, "bandwidth bound", "numba / bound"]
    lines = ["| case | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
    notes: list[str] = []
    for row in rows:
        cells = row["columns"]
        bound = row["bytes"] / bandwidth * 1e3
        row["bound_ms"] = bound
        ref = cells["torch.jit"]["median_ms"] if "torch.jit" in cells else None
        numba = cells.get("fused-numba")
        vs_bound = f"{numba['median_ms'] / bound:.2f}x" if numba and numba.get("took_path") else "n/a"
        lines.append(f"| {row['label']} | " + " | ".join(_cell(cells.get(c), ref) for c in COLUMNS)
                     + f" | {bound:.3f} | {vs_bound} |")
        for column, cell in cells.items():
            notes += [f"- {row['label']}, {column}: {note}" for note in cell["notes"]]
        notes += [f"- {row['label']}: RESULTS DIFFER: {p}" for p in row["checksum_problems"]]
    return lines + ([""] + notes if notes else [])


def sweep_table(rows: list[dict[str, Any]]) -> list[str]:
    names = ["default", *(f"max_block={b}" for b in SWEEP_BLOCKS)]
    head = ["default", *(f"{b >> 10}K" for b in SWEEP_BLOCKS)]
    lines = ["| case | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
    for row in rows:
        if "sweep" not in row:
            continue
        cells = row["sweep"]
        best = min(cells[name]["median_ms"] for name in names)
        text = [_cell(cells[name], None) for name in names]
        text = [f"**{t}**" if cells[name]["median_ms"] == best else t for t, name in zip(text, names)]
        lines.append(f"| {row['label']} | " + " | ".join(text) + " |")
    return lines


def report(rows: list[dict[str, Any]], meta: dict[str, Any], out: Path) -> str:
    bw = meta["bandwidth"]
    bandwidth = max(bw.values())
    info = meta["workers"]
    torch_info = info.get("torch.jit", {})
    numba_info = info.get("fused-numba", {})
    lines = [
        "# Fused kernels vs torch.jit",
        "",
        f"`{meta['command']}` at {meta['when']}, {os.cpu_count()} cores, {meta['seconds']:.0f} s.",
        "",
        f"Each column in its own worker process; {meta['rounds']} rounds of one block per column "
        "(R timed calls, R per column for ~{:g} ms), in rotated order; cells are median ms ".format(meta["block_ms"])
        + "(ratio to torch.jit: below 1 is faster); minima are in the JSON file.",
        f"torch {torch_info.get('torch', 'absent')}: {torch_info.get('torch_threads', '-')} threads (its default), "
        f"OMP_WAIT_POLICY {torch_info.get('omp_wait_policy', '-')}; numba {numba_info.get('numba', 'absent')}: "
        f"{numba_info.get('numba_threads', '-')} threads, layer {numba_info.get('numba_layer', '-')}; "
        f"irvm fusion pool: {numba_info.get('fusion_threads', info.get('fused-blocked', {}).get('fusion_threads'))} threads.",
        f"Copy bandwidth {bandwidth / 1e9:.1f} GB/s (best of " + ", ".join(f"{k} {v / 1e9:.1f}" for k, v in bw.items())
        + "); the bound is (inputs + 1 output) x n x 4 bytes / that.",
        "",
        *main_table(rows, bandwidth),
    ]
    if any("sweep" in row for row in rows):
        lines += ["", f"## Block sweep: fused-blocked median ms by max_block (min_block {SWEEP_BLOCKS[0] >> 10}K)",
                  "", *sweep_table(rows), "",
                  "The fuser may use blocks smaller than max_block when n is small (it splits the "
                  "elements over its threads); the JSON has every cell's path counts."]
    text = "\n".join(lines) + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="3 rounds of ~0.1 s blocks (under a minute)")
    mode.add_argument("--smoke", action="store_true", help="1/100 sizes, 1 round of 1 call, no sweep")
    parser.add_argument("--sweep-blocks", action="store_true", help="also time fused-blocked over max_block")
    parser.add_argument("--torch-omp-passive", action="store_true",
                        help="run the torch worker with OMP_WAIT_POLICY=PASSIVE (to compare)")
    parser.add_argument("--out", default=str(ROOT / "bench_results" / "fusion.md"))
    args = parser.parse_args()
    settings = SMOKE if args.smoke else QUICK if args.quick else FULL
    sweep = args.sweep_blocks and not args.smoke
    started = time.perf_counter()
    bandwidth = copy_bandwidth(32 << 20 if args.smoke else 256 << 20)  # before the workers exist
    columns = [c for c in COLUMNS if c != "torch.jit" or importlib.util.find_spec("torch") is not None]
    torch_env = {**TORCH_ENV, **({"OMP_WAIT_POLICY": "PASSIVE"} if args.torch_omp_passive else {})}
    ctx = mp.get_context("spawn")
    workers = {c: Worker(ctx, c, torch_env if c == "torch.jit" else {}) for c in columns}
    try:
        rows = []
        for case, n in CASES:
            n //= settings.scale
            rows.append(run_case(workers, case, n, settings, sweep and (case, n) in SWEEP_CASES))
            print(f"{rows[-1]['label']}: " + ", ".join(f"{c} {v['median_ms']:.3f} ms"
                                                      for c, v in rows[-1]["columns"].items()), flush=True)
        info = {c: w.ask("describe") for c, w in workers.items()}
    finally:
        for worker in workers.values():
            worker.stop()
    meta = {"command": "python tools/bench_fusion.py " + " ".join(sys.argv[1:]),
            "when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "seconds": time.perf_counter() - started, "rounds": settings.rounds, "block_ms": settings.block_ms,
            "bandwidth": {k: v for k, v in bandwidth.items()}, "workers": info}
    print(report(rows, meta, Path(args.out)))


if __name__ == "__main__":
    main()
