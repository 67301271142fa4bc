"""The static runtime: the optimized IR run as generated straight-line Python.

    StaticModule(program, weights, options)   # decide everything once per model (module.py)
    StaticRuntime(module)(*args)              # one caller's plans and buffers (runtime.py)
    RuntimePool(module, size)                 # runtimes for many threads (pool.py)

It runs what the compiler made and compiles nothing: ``vm.StaticModule`` / ``vm.StaticRuntime``
(``vm/api/static.py``, the front door) compile IR text and specialize a program compiled
without its weights before they build these.  See README.md beside this file for what it
assumes and how it plans memory.
"""

from vm.static.module import StaticModule, StaticOptions
from vm.static.pool import RuntimePool
from vm.static.runtime import StaticRuntime

__all__ = ["RuntimePool", "StaticModule", "StaticOptions", "StaticRuntime"]
