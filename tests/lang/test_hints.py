"""Taichi's kernel hints (`fieldsim/lang/hints.py`): accepted with the arguments Taichi takes,
changing no result."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


def test_no_activate_takes_snodes_as_taichi_does():
    # taichi_elements' g2p2g: `ti.no_activate(self.particle)` on the particles' dynamic node
    particle = fs.root.dynamic(fs.i, 64, chunk_size=16)
    x = fs.field(fs.f32)
    particle.place(x)
    grid = fs.root.pointer(fs.i, 4)
    m = fs.field(fs.f32)
    grid.dense(fs.i, 4).place(m)

    @fs.kernel
    def fill():
        for i in range(10):
            x[i] = i + 0.5

    @fs.kernel
    def scatter():
        fs.no_activate(particle, grid)
        for i in x:
            m[i % 4] += x[i]

    fill()
    m[0] = 0.0  # activates the block holding cells 0..3; the hinted kernel touches only those
    scatter()
    got = m.to_numpy()[:4]
    want = [sum(i + 0.5 for i in range(10) if i % 4 == r) for r in range(4)]
    np.testing.assert_allclose(got, want)


def test_no_activate_refuses_other_values_naming_both_kinds():
    @fs.kernel
    def k():
        fs.no_activate(3)

    with pytest.raises(fs.FieldsimError, match="takes fields or SNodes, got int"):
        k()


def test_block_local_still_takes_fields_only():
    node = fs.root.dense(fs.i, 4)
    y = fs.field(fs.f32)
    node.place(y)

    @fs.kernel
    def k():
        fs.block_local(node)

    with pytest.raises(fs.FieldsimError, match="takes fields, got SNode"):
        k()
