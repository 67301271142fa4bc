"""``python3 -m vm.ops.compiled [FAMILY ...]``: fill numba's cache with every compiled kernel
(or those of the families named) ahead of the first run.  A process never waits for a
compile (``vm.ops.compiled``: the numpy kernels run while a family loads); filling the cache
ahead only makes the compiled kernels arrive sooner."""

from __future__ import annotations

import sys
import time


def main() -> int:
    from vm.ops import compiled

    if not compiled.ENABLED:
        print("compiled kernels are off (IRVM_KERNELS=numpy, or numba is not installed): nothing to fill")
        return 0
    names = sys.argv[1:] or list(compiled.FAMILIES)
    unknown = [n for n in names if n not in compiled.FAMILIES]
    if unknown:
        print(f"unknown kernel families {', '.join(unknown)} (known: {', '.join(compiled.FAMILIES)})")
        return 2
    for name in names:
        start = time.perf_counter()
        compiled.family(name)
        print(f"{name}: ready in {time.perf_counter() - start:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
