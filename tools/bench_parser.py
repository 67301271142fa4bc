"""Time parsing (line parser, and lark alone) and printing of generated graphs of 1k, 10k
and 100k nodes.

The graphs look like real dumps: constants with source comments, ops with refined tensor
types, list constructions, and a ``prim::If`` with two blocks every 50 nodes.  For each
size the best of ``--repeat`` runs is reported in ms and ms/node; a flat ms/node column
shows that the cost grows linearly with the graph.

    python tools/bench_parser.py                 # 1k, 10k, 100k
    python tools/bench_parser.py --sizes 1000 10000 --repeat 3
"""

from __future__ import annotations

import argparse
import time

from compiler.parser import grammar, parse
from vm.ir.printer import print_module

TYPE = "Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)"


def make_graph(n: int) -> str:
    """A well-formed graph of about ``n`` nodes (nodes inside If blocks included)."""
    lines = ["graph(%x.1 : Tensor,", "      %n.1 : int,", "      %c.1 : bool):"]
    last, const = "%x.1", "%n.1"
    i = 0
    while i < n:
        if i % 50 == 49:
            lines += [
                f"  %v{i} : Tensor = prim::If(%c.1) # model.py:{i}:4",
                "    block0():",
                f"      %a{i} : Tensor = aten::relu({last}) # model.py:{i}:8",
                f"      -> (%a{i})",
                "    block1():",
                f"      %b{i} : Tensor = aten::neg({last})",
                f"      -> (%b{i})",
            ]
            last, i = f"%v{i}", i + 3
            continue
        kind = i % 3
        if kind == 0:
            lines.append(f"  %k{i} : int = prim::Constant[value={i}]() # model.py:{i}:12")
            const = f"%k{i}"
        elif kind == 1:
            lines.append(f"  %v{i} : {TYPE} = aten::add({last}, %x.1, {const}) # model.py:{i}:8")
            last = f"%v{i}"
        else:
            lines.append(f"  %l{i} : int[] = prim::ListConstruct({const}, %n.1)")
        i += 1
    lines.append(f"  return ({last})")
    return "\n".join(lines) + "\n"


def best_of(repeat: int, fn) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    grammar()
    print(f"grammar load (once per process): {(time.perf_counter() - start) * 1e3:.0f} ms")
    print(
        f"{'nodes':>8} {'lines':>8} {'parse ms':>10} {'ms/node':>9} {'lark ms':>10} {'ms/node':>9}"
        f" {'print ms':>10} {'ms/node':>9}"
    )
    for n in args.sizes:
        text = make_graph(n)
        repeat = args.repeat if n <= 10_000 else 1
        module = parse(text)
        nodes = sum(1 for _ in module.main.walk())
        t_parse = best_of(repeat, lambda text=text: parse(text))
        t_lark = best_of(repeat, lambda text=text: parse(text, fast=False))
        t_print = best_of(repeat, lambda module=module: print_module(module))
        print(
            f"{nodes:>8} {text.count(chr(10)):>8} {t_parse * 1e3:>10.1f} {t_parse * 1e3 / nodes:>9.4f}"
            f" {t_lark * 1e3:>10.1f} {t_lark * 1e3 / nodes:>9.4f}"
            f" {t_print * 1e3:>10.1f} {t_print * 1e3 / nodes:>9.4f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
