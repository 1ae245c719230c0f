"""The guard zones around every field's data (CPU `HostStorage` and CUDA device storage).

Kernels do not check indices unless `debug=True`, as in Taichi: an index a little past an
axis lands in the zeroed guard zone beside the data (where Taichi's pool has a neighbouring
field), never in other memory. An access whose index could reach past the guard zone is
checked even without `debug=True` (`llvm.py`, `reaches_past_guard`): it would corrupt or crash
the process. Out of range, such a store or atomic is reported; a load reads the guard zone.
"""
from __future__ import annotations

import math

GUARD_BYTES = 1024  # the least guard zone on each side of a field's data
# ... and the least number of outermost rows in it, as a fraction of the field's rows: a voxel
# scene drawn a few cells past its 128-cell grid (a voxel-challenge Lorenz attractor writes rows
# 128-130) must not reach the next field, as in Taichi, whose pool puts another field there
GUARD_ROWS_FRACTION = 16
# ... up to this many bytes: with transparent huge pages, the 2 MB pages around a field's ends
# commit the guard they cover, and sixteenths of big fields cost diffmpm's full size 15 MB of
# peak memory (3 %); 256 KB still holds the voxel scene's three 48 KB rows
GUARD_FRACTION_MAX_BYTES = 1 << 18


def guard_bytes(shape, item: int, align: int = 64) -> int:
    """The guard zone on each side of a field of `shape` and `item`-byte elements (HostStorage;
    the CUDA backend's device storage has the same): a multiple of `align` bytes, so the data
    keeps its buffer's alignment."""
    n = math.prod(shape)
    row = n // shape[0] if shape and shape[0] else n
    rows = -(-shape[0] // GUARD_ROWS_FRACTION) if shape else 0
    want = max(min(rows * row * item, GUARD_FRACTION_MAX_BYTES), row * item, GUARD_BYTES)
    return -(-want // align) * align
