"""``python3 -m vm.ops.compiled``: fill numba's cache with every compiled kernel ahead of the
first run (a machine's first run otherwise compiles each family when it first needs it)."""

from __future__ import annotations

import sys
import time


def main() -> int:
    from vm.ops import compiled

    if not compiled.ENABLED:
        print("compiled kernels are off (IRVM_KERNELS=numpy, or numba is not installed): nothing to fill")
        return 0
    for name in compiled.FAMILIES:
        start = time.perf_counter()
        compiled.family(name)
        print(f"{name}: ready in {time.perf_counter() - start:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
