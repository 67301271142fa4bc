"""Pause Python's cyclic garbage collector over work that builds big object graphs.

The IR (and a loaded program) is full of reference cycles: a value knows its node and
its users.  While a parse, a pass or a load allocates hundreds of thousands of such
objects, the collector's generation-2 runs rescan the whole growing heap again and
again, which makes big graphs superlinear (about 40% of a 40k-node compile).  Nothing
here frees memory through the collector that matters: the cycles a pass drops (dead
nodes) are collected by the collector's next full run after the work.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Young objects (allocated since the last collection) from which a pause's end moves them
# to the oldest generation; below it the collector's next young run costs less than the check.
_MOVE_FROM = 10_000


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the ``with`` block (or the decorated call);
    re-enable it after, if it was enabled.  Nests: only the outermost pause re-enables."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            # Only a pause that allocated a lot needs the move below, and only such a pause
            # asks whether the caller froze objects: ``gc.get_freeze_count`` walks every
            # frozen object (40 ms for 2M, in a server that froze its heap after start-up).
            if gc.get_count()[0] >= _MOVE_FROM and gc.get_freeze_count() == 0:  # (a caller's own gc.freeze() is left alone)
                # everything allocated in the pause goes to the oldest generation at once
                # (two list splices): re-enabled as it was, the collector would first
                # traverse all of it as young objects, a second on a 40k-node IR
                gc.freeze()
                gc.unfreeze()
            gc.enable()
