"""The walk of `irvm run PROGRAM --backend static` up to the first operator, counted.

    python3 tools/walk_crossings.py ROOT PROGRAM INPUTS.npz OUT.npz

ROOT is the irvm tree to measure (a worktree, or main).  Every call whose callee's top
package (vm/ or compiler/) differs from its caller's is a crossing; the tool prints how
many there were, the vm -> compiler ones by caller and callee, and those that reach
beyond the compiler's IR data model and its read-only analyses (a pass, the pipeline,
overload resolution, a front door).  Counting stops at the first operator kernel the
static runtime's first call runs.
"""
import os
import sys

root = sys.argv[1]
sys.path.insert(0, root)
crossings = []
stop = [False]
def pkg(frame):
    f = frame.f_code.co_filename
    if not f.startswith(root):
        return None
    rel = os.path.relpath(f, root).split(os.sep)
    return rel[0] if rel[0] in ("vm", "compiler") else None
def prof(frame, event, arg):
    if stop[0] or event != "call":
        return
    callee = pkg(frame)
    caller = pkg(frame.f_back) if frame.f_back else None
    if callee and caller and callee != caller:
        crossings.append(f"{caller}->{callee}: {frame.f_back.f_code.co_name} -> {os.path.relpath(frame.f_code.co_filename, root)}:{frame.f_code.co_name}")
    if callee == "vm" and "vm/ops/" in frame.f_code.co_filename and frame.f_code.co_name not in ("<module>",) and started[0]:
        stop[0] = True
started = [False]
import vm.cli
from vm.static import runtime as R

real_call = R.StaticRuntime.__call__
def call(self, *a, **k):
    started[0] = True
    return real_call(self, *a, **k)
R.StaticRuntime.__call__ = call
sys.setprofile(prof)
try:
    vm.cli.main(["run", sys.argv[2], "--inputs", sys.argv[3], "--backend", "static", "--output", sys.argv[4], "--force"])
except SystemExit:
    pass
sys.setprofile(None)
vc = [c for c in crossings if c.startswith("vm->compiler")]
from collections import Counter

print(len(crossings), "crossings,", len(vc), "vm->compiler")
for c, n in Counter(vc).most_common():
    print("  ", n, c)
data = ("compiler/ir.py", "compiler/analysis/", "compiler/program_tables.py", "compiler/progress.py", "compiler/resolve.py:constant_value")
beyond = [c for c in vc if not any(d in c for d in data)]
print("beyond the data model:", len(beyond), sorted(set(beyond)))
