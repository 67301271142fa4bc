"""The program's data model, the ground floor both the compiler and the runtimes stand on
(``vm/ir/README.md``).  Importing any module of it registers the printer, so that
``str(module)`` prints wherever a module is (``vm.ir.graph`` does not import its printer)."""

import vm.ir.printer  # noqa: F401  (gives vm.ir.graph.Module its __str__)
