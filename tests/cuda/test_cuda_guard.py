"""Out-of-range stencil accesses on the CUDA path land in a zeroed guard zone around the field's
device storage, as on the CPU (tests/codegen/test_out_of_range.py checks the CPU): a game of
life reading `alive[i - 1, j]` at i = 0 read whatever lay before the allocation (on a GPU an
illegal address where nothing is mapped there), and a write one row past a field's end reached
memory outside it."""
import numpy as np
import pytest
from cuda_emu import use_emulator

import fieldsim as fs

BACKENDS = ["emu", pytest.param("cuda", marks=pytest.mark.cuda)]


def start(backend):
    if backend == "emu":
        return use_emulator(fs)
    return fs.init(arch=fs.cuda if backend == "cuda" else fs.cpu)


def neighbour_counts(backend):
    start(backend)
    n = 16
    alive = fs.field(fs.i32, (n, n))
    count = fs.field(fs.i32, (n, n))
    after = fs.field(fs.f32, 4)

    @fs.kernel
    def stencil():
        for i, j in alive:
            count[i, j] = (alive[i - 1, j] + alive[i + 1, j] + alive[i, j - 1] + alive[i, j + 1]
                           + alive[i - 1, j - 1] + alive[i + 1, j + 1])

    @fs.kernel
    def past_the_end():
        for j in range(n):
            alive[n, j] = 7  # one row past the end

    alive.from_numpy((np.arange(n * n).reshape(n, n) % 3 == 0).astype(np.int32))
    after.fill(2.0)
    past_the_end()
    stencil()
    return count.to_numpy(), alive.to_numpy(), after.to_numpy()


@pytest.mark.parametrize("backend", BACKENDS)
def test_stencil_past_the_edges_reads_the_guard_as_on_the_cpu(backend):
    want = neighbour_counts("cpu")
    got = neighbour_counts(backend)
    fs.init(arch=fs.cpu)
    a = (np.arange(256).reshape(16, 16) % 3 == 0).astype(np.int32)
    assert (want[1] == a).all() and (want[2] == 2.0).all()
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
