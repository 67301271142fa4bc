"""Fused kernels against hand-written numpy, unfused irvm kernels and torch.jit.

    python tools/bench_fusion.py [--quick | --smoke] [--sweep-blocks] [--omp-wait both|default|PASSIVE]
                                 [--malloc steady|default] [--out bench_results/fusion.md]

Rows: ratio_iou (the seed notebook's box IoU, 20 elementwise ops, 8 inputs) at 1e4, 1e5
and 8e5 elements, and the 5-op chain ``relu(x*w + b)*0.5 + x`` at 16M elements, all
float32.  Columns (median ms): hand-written numpy, the group's ops one by one
(``FusedKernel.run_unfused``), fused-blocked (numpy, cache-blocked, threads), fused-numba
(the kernel with ``enable_numba()``), torch.jit.script of the same Python function, the
memory-bandwidth bound (the group's bytes read and written, timed as a numpy copy of that
many bytes at the row's size, in a worker of its own interleaved with the columns), each column's ratio to torch.jit and numba's ratio to
the bound.

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
back: too small, or numba missing); the notes under the table say what ran and why.  The
workers also send a checksum of their result: a column that computes something else
(e.g. inputs passed in the wrong order) is reported, not timed silently.

Two settings of the environment decide results more than the kernels do, so they are
explicit (see ``OMP_POLICIES`` and ``MALLOC`` below): the OpenMP columns (torch.jit and
numba) run once per ``OMP_WAIT_POLICY`` and the table shows the faster, and every worker
gets the same glibc malloc settings.

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
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_fusion_worker import COLUMNS, COPY, KERNEL_PATH, ROOT, worker_main

CASES = [("ratio_iou", 10_000), ("ratio_iou", 100_000), ("ratio_iou", 800_000), ("5-op chain", 16_000_000)]
SWEEP_CASES = [("ratio_iou", 800_000), ("5-op chain", 16_000_000)]
SWEEP_BLOCKS = [16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10]
N_INPUTS = {"ratio_iou": 8, "5-op chain": 3}
# torch.jit and the numba fuser (its "omp" threading layer) run on libgomp, whose idle
# threads spin before they sleep.  Measured here, each alone in its process: on quiet cores
# spinning wins (torch.jit ratio_iou 1e5, median 0.18 ms spinning vs 1.4 ms PASSIVE); with
# other jobs on the two cores, a thread spinning for a descheduled peer wastes whole time
# slices (ratio_iou 8e5, median 148 ms spinning vs 3.8 ms PASSIVE).  Neither is right for
# every run, so by default each OpenMP column runs in two workers, one per policy, and the
# table shows the faster median (both are reported under it).
OMP_POLICIES = {"default": {}, "PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"}}
OMP_COLUMNS = ("fused-numba", "torch.jit")
# glibc's malloc (2.36 here) gave the large temporaries of these processes back to the
# kernel on every free, so each call re-faulted them: hand-written numpy took ~10K page
# faults per ratio_iou 8e5 call (29 ms instead of 6 ms) and torch.jit 141 ms instead of
# 24 ms on the 16M chain.  That measures the allocator's heuristics, not the kernels, and a
# warm long-running process does not pay it.  "steady" (the default) keeps freed memory in
# the heap, for every worker alike; "default" leaves glibc as it is.
COPY_VARIANTS = {"1 thread": {"threads": 1}, "2 threads": {"threads": 2}}
MALLOC = {"steady": {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 31)},
          "default": {}}


class Settings:
    def __init__(self, rounds: int, block_ms: float, min_repeats: int, max_repeats: int, scale: int, gap_s: float):
        self.rounds, self.block_ms, self.gap_s, self.scale = rounds, block_ms, gap_s, scale
        self.min_repeats, self.max_repeats = min_repeats, max_repeats

    def repeats(self, call_ms: float) -> int:
        """Calls per block: enough for ``block_ms``, within the bounds."""
        return max(self.min_repeats, min(self.max_repeats, math.ceil(self.block_ms / max(call_ms, 1e-3))))


FULL = Settings(rounds=7, block_ms=250, min_repeats=5, max_repeats=400, scale=1, gap_s=0.05)
QUICK = Settings(rounds=3, block_ms=60, min_repeats=2, max_repeats=200, scale=1, gap_s=0.02)
SMOKE = Settings(rounds=1, block_ms=0, min_repeats=1, max_repeats=1, scale=100, gap_s=0.0)


def size_label(n: int) -> str:
    """1e4, 8e5, 1.6e5, 16M: how the issue names sizes."""
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    exponent = math.floor(math.log10(n))
    return f"{n / 10 ** exponent:g}e{exponent}"


def best_copy_seconds(n_bytes: int, repeats: int) -> dict[str, float]:
    """Best time of a numpy copy of ``n_bytes`` (so ``2 * n_bytes`` of traffic) on one
    thread and on two threads copying a half each (numpy releases the GIL in copyto)."""
    a = np.ones(max(n_bytes // 4, 2), np.float32)
    b = np.empty_like(a)
    half = a.size // 2

    def two() -> None:
        t = threading.Thread(target=np.copyto, args=(b[half:], a[half:]))
        t.start()
        np.copyto(b[:half], a[:half])
        t.join()

    result = {}
    for name, fn in (("1 thread", lambda: np.copyto(b, a)), ("2 threads", two)):
        fn()  # faults the pages in
        best = math.inf
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t)
        result[name] = best
    return result


class Worker:
    """One column's process (``name`` tells apart two workers of one column) and the
    parent's end of its pipe."""

    def __init__(self, ctx: Any, column: str, env: dict[str, str], name: str | None = None):
        self.column, self.name, self.env = column, name or column, env
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=worker_main, args=(child, column), name=f"bench-{self.name}", daemon=True)
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)  # a spawned process starts with the parent's environment of the moment
        try:
            self.process.start()
        finally:
            for k, v in saved.items():
                if v is None:
                    del os.environ[k]
                else:
                    os.environ[k] = v
        child.close()

    def send(self, *message: Any) -> None:
        self.conn.send(message)

    def receive(self) -> dict[str, Any]:
        answer = self.conn.recv()
        if "error" in answer:
            raise RuntimeError(f"the {self.name} worker failed:\n{answer['error']}")
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
            slot = results.setdefault((worker.name, variant), {"times": [], "calls": 0, "paths": {}, "reasons": {}})
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


def run_case(workers: list[Worker], case: str, n: int, settings: Settings, sweep: bool) -> dict[str, Any]:
    variants = {w.name: {"default": {}} for w in workers if w.column != COPY}
    variants.update({w.name: COPY_VARIANTS for w in workers if w.column == COPY})
    blocked = next((w for w in workers if w.name == "fused-blocked"), None)
    if sweep and blocked is not None:
        for block in SWEEP_BLOCKS:
            variants[blocked.name][f"max_block={block}"] = {"min_block": SWEEP_BLOCKS[0], "max_block": block}
    for worker in workers:  # the workers set up in parallel
        worker.send("setup", case, n, variants[worker.name])
    setups = {w.name: w.receive() for w in workers}
    jobs = [(w, name, settings.repeats(setups[w.name][name]["call_ms"])) for w in workers for name in variants[w.name]]
    results = interleave(jobs, settings)
    columns = [w for w in workers if w.column != COPY]
    cells = {w.name: summarize(w.column, results[(w.name, "default")], setups[w.name]["default"]) for w in columns}
    row: dict[str, Any] = {"case": case, "n": n, "label": f"{case} n={size_label(n)}", "columns": {}, "omp": {}}
    row["copy_ms"] = {name: {"median_ms": statistics.median(r["times"]), "min_ms": min(r["times"])}
                      for (worker, name), r in results.items() if worker == COPY}
    row["bound_ms"] = min((c["median_ms"] for c in row["copy_ms"].values()), default=math.nan)
    for worker in columns:  # of two workers of a column, the faster median goes in the table
        cell = cells[worker.name]
        best = row["columns"].get(worker.column)
        if best is None or cell["median_ms"] < best["median_ms"]:
            row["columns"][worker.column] = {**cell, "worker": worker.name}
        if worker.column in OMP_COLUMNS:
            row["omp"][worker.name] = {"median_ms": cell["median_ms"], "min_ms": cell["min_ms"]}
    row["bytes"] = (N_INPUTS[case] + 1) * n * 4
    row["checksum_problems"] = _checksum_problems(cells)
    if sweep and blocked is not None:
        names = list(variants[blocked.name])  # the sweep runs after the main rounds, in the same worker
        setup = setups[blocked.name]
        jobs = [(blocked, name, settings.repeats(setup[name]["call_ms"])) for name in names]
        sweep_results = interleave(jobs, settings)
        row["sweep"] = {name: summarize("fused-blocked", sweep_results[(blocked.name, name)], setup[name])
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


def main_table(rows: list[dict[str, Any]]) -> list[str]:
    head = [*COLUMNS, "bandwidth bound", "numba / bound"]
    lines = ["| case | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
    notes: list[str] = []
    for row in rows:
        cells, bound = row["columns"], row["bound_ms"]
        ref = cells["torch.jit"]["median_ms"] if "torch.jit" in cells else None
        numba = cells.get("fused-numba")
        vs_bound = f"{numba['median_ms'] / bound:.2f}x" if numba and numba.get("took_path") else "n/a"
        lines.append(f"| {row['label']} | " + " | ".join(_cell(cells.get(c), ref) for c in COLUMNS)
                     + f" | {bound:.3f} | {vs_bound} |")
        for column, cell in cells.items():
            notes += [f"- {row['label']}, {column}: {note}" for note in cell["notes"]]
        notes += [f"- {row['label']}: RESULTS DIFFER: {p}" for p in row["checksum_problems"]]
    return lines + (["", "Notes (†: the kernel did not take the path its column names):", *notes] if notes else [])


def omp_table(rows: list[dict[str, Any]]) -> list[str]:
    """Median (min) ms of each OpenMP column's worker per wait policy, when there were two."""
    names = list(dict.fromkeys(name for row in rows for name in row["omp"]))
    if len(names) <= len({n.split(" (")[0] for n in names}):
        return []
    lines = ["", "## OpenMP wait policy: median (min) ms per worker; the table above shows the faster median", "",
             "| case | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for row in rows:
        cells = [row["omp"].get(name) for name in names]
        lines.append(f"| {row['label']} | " + " | ".join(
            "n/a" if c is None else f"{c['median_ms']:.3f} ({c['min_ms']:.3f})" for c in cells) + " |")
    return lines


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


def header(meta: dict[str, Any]) -> list[str]:
    """The lines above the table: what was run, where, and how each column was set up."""
    info = meta["workers"]
    by_column = {i["column"]: i for i in reversed(list(info.values()))}  # the first worker of each column
    torch_info, numba_info = by_column.get("torch.jit", {}), by_column.get("fused-numba", {})
    pool = by_column.get("fused-blocked", {}).get("fusion_threads")
    policies = " and ".join(sorted({i["omp_wait_policy"] for i in info.values() if "omp_wait_policy" in i})) or "-"
    load = [" / ".join(f"{x:.1f}" for x in meta[k]) for k in ("load_before", "load_after")]
    malloc = " ".join(f"{k}={v}" for k, v in MALLOC[meta["malloc"]].items()) or "no MALLOC_ variables"
    return [
        "# Fused kernels vs torch.jit",
        "",
        (f"`{meta['command']}` at {meta['when']} on {meta['git']}; {os.cpu_count()} cores; load average "
         f"(1/5/15 min) {load[0]} before, {load[1]} after; {meta['seconds']:.0f} s."),
        "",
        (f"- Each column runs in its own worker process; {meta['rounds']} round(s) of one block per column, in an "
         "order rotated each round (a block: one untimed call, then R timed calls, R per column for "
         f"~{meta['block_ms']:g} ms).  Cells are median ms (ratio to torch.jit: below 1 is faster); minima are "
         "in the JSON file."),
        (f"- torch {torch_info.get('torch', 'absent')}: {torch_info.get('torch_threads', '-')} threads (its "
         f"default); numba {numba_info.get('numba', 'absent')}: {numba_info.get('numba_threads', '-')} threads, "
         f"layer {numba_info.get('numba_layer', '-')}; irvm fusion pool: {pool} threads.  OMP_WAIT_POLICY "
         f"{policies} (see below)."),
        f"- glibc malloc: {meta['malloc']} in every worker ({malloc}; see --malloc).",
        ("- Bandwidth bound: the median time of a numpy copy moving the group's bytes ((inputs + 1 output) "
         "x n x 4, read + written), on 1 or 2 threads (the faster), timed in a worker of its own interleaved with "
         "the columns at each row's size (a row whose data fits in the last-level cache gets a cache-speed "
         f"bound); a 256 MB copy runs at {meta['dram_gbps']:.1f} GB/s."),
        "",
    ]


def report(rows: list[dict[str, Any]], meta: dict[str, Any], out: Path) -> str:
    lines = [*header(meta), *main_table(rows)]
    lines += omp_table(rows)
    if any("sweep" in row for row in rows):
        lines += ["", f"## Block sweep: fused-blocked median ms by max_block (min_block {SWEEP_BLOCKS[0] >> 10}K)",
                  "", *sweep_table(rows), "",
                  ("The fuser may use blocks smaller than max_block when n is small (it splits the "
                   "elements over its threads); the JSON has every cell's minimum and path counts.")]
    text = "\n".join(lines) + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    return text


def git_state() -> str:
    """The commit measured, and whether vm/ or compiler/ differ from it."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], check=False, cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "(no git)"
    dirty = git("status", "--porcelain", "--", "vm", "compiler")
    return f"commit {commit}" + (" with uncommitted changes in vm/ or compiler/" if dirty else "")


def dram_bandwidth(n_bytes: int) -> float:
    """GB/s of the best warm numpy copy of ``n_bytes`` (read + written), on 1 or 2 threads,
    measured before the workers start: the machine's streaming bandwidth, for the header."""
    return 2 * n_bytes / min(best_copy_seconds(n_bytes, 5).values()) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="3 rounds of ~60 ms blocks (under a minute)")
    mode.add_argument("--smoke", action="store_true", help="1/100 sizes, 1 round of 1 call, no sweep")
    parser.add_argument("--sweep-blocks", action="store_true", help="also time fused-blocked over max_block")
    parser.add_argument("--omp-wait", choices=["both", *OMP_POLICIES], default="both",
                        help="OMP_WAIT_POLICY of the torch.jit and fused-numba workers (both: one worker "
                             "per policy, the faster median is shown)")
    parser.add_argument("--malloc", choices=list(MALLOC), default="steady",
                        help="glibc malloc settings of every worker (see MALLOC in the source)")
    parser.add_argument("--out", default=str(ROOT / "bench_results" / "fusion.md"))
    args = parser.parse_args()
    settings = SMOKE if args.smoke else QUICK if args.quick else FULL
    started, load_before = time.perf_counter(), os.getloadavg()
    cases = [(case, n // settings.scale) for case, n in CASES]
    sweep_cases = [] if args.smoke or not args.sweep_blocks else SWEEP_CASES
    dram = dram_bandwidth(32 << 20 if args.smoke else 256 << 20)
    columns = [c for c in COLUMNS if c != "torch.jit" or importlib.util.find_spec("torch") is not None]
    policies = list(OMP_POLICIES) if args.omp_wait == "both" else [args.omp_wait]
    ctx = mp.get_context("spawn")
    malloc = MALLOC[args.malloc]
    workers = [Worker(ctx, c, malloc) for c in columns if c not in OMP_COLUMNS]
    workers += [Worker(ctx, c, {**malloc, **OMP_POLICIES[p]}, f"{c} ({p})")
                for c in columns if c in OMP_COLUMNS for p in policies]
    workers.append(Worker(ctx, COPY, malloc))
    try:
        rows = []
        for case, n in cases:
            row = run_case(workers, case, n, settings, (case, n) in sweep_cases)
            rows.append(row)
            print(f"{row['label']}: " + ", ".join(f"{c} {v['median_ms']:.3f} ms" for c, v in row["columns"].items())
                  + f"; bound {row['bound_ms']:.3f} ms", flush=True)
        info = {w.name: w.ask("describe") for w in workers}
        for w in workers:
            if w.column in OMP_COLUMNS:
                info[w.name]["omp_wait_policy"] = w.env.get("OMP_WAIT_POLICY", "default")
    finally:
        for worker in workers:
            worker.stop()
    meta = {"command": "python tools/bench_fusion.py " + " ".join(sys.argv[1:]), "git": git_state(),
            "when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "seconds": time.perf_counter() - started, "load_before": load_before, "load_after": os.getloadavg(),
            "malloc": args.malloc, "rounds": settings.rounds, "block_ms": settings.block_ms, "dram_gbps": dram, "workers": info}
    print(report(rows, meta, Path(args.out)))


if __name__ == "__main__":
    main()
