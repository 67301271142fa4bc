"""The static runtime: the optimized IR run as generated straight-line Python.

    StaticModule(program_or_graph, options)   # decide everything once per model
    StaticRuntime(module)(*args)              # one caller's plan and buffers
    RuntimePool(module, size)                 # runtimes for many threads

See README.md beside this file for what it assumes and how it plans memory.
"""

from vm.static.runtime import RuntimePool, StaticModule, StaticOptions, StaticRuntime

__all__ = ["RuntimePool", "StaticModule", "StaticOptions", "StaticRuntime"]
