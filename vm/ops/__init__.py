"""The operator library: every module in this package registers its kernels on import.

Families: pointwise, reduction, shape, linalg, nn, prim (scalars, lists, dicts, strings,
prim:: ops).  ``vm.ops.registry`` holds the table they fill.
"""

import importlib
import pkgutil

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _info.name.startswith("_") and _info.name != "registry":
        importlib.import_module(f"{__name__}.{_info.name}")
