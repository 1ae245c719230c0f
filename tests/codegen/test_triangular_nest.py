"""Triangular nests (loopnest.row_bound): `for i, j in ndrange(n, m): if i < j:` runs only the
columns where the condition holds.

Checks: for each comparison in both operand orders, on one and two threads, the elements and
per-row counts written match NumPy's mask exactly, and the bound was taken; bodies that do
something outside the `if`, or have an `else`, or compare anything but the two indices, keep
every iteration; a pairwise energy's gradient on a Tape (forward and adjoint both trimmed,
the `if` gone from both: no masked-off lane value left in their IR) matches the analytic one
in float64; a `continue` inside the trimmed `if` still skips only its own iteration.
"""
import operator

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.codegen import llvm_nest

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


@pytest.fixture
def bounds(monkeypatch):
    """The row bound of each nest the code generator lowers from now on."""
    seen = []
    real = llvm_nest.row_bound

    def spy(loop, split):
        seen.append(real(loop, split))
        return seen[-1]
    monkeypatch.setattr(llvm_nest, "row_bound", spy)
    return seen


def _kernel(op, mirrored, out, rows):
    cmp = (lambda a, b: OPS[op](b, a)) if mirrored else OPS[op]

    @fs.kernel
    def k():
        for i, j in out:
            if fs.static(cmp)(i, j):
                out[i, j] = 1
                rows[i] += 1
    return k


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mirrored", [False, True])
@pytest.mark.parametrize("op", list(OPS))
def test_each_comparison_runs_exactly_its_triangle(bounds, op, mirrored, threads):
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=threads)
    n, m = 700, 900  # big enough that two threads split the rows into chunks
    out = fs.field(fs.i32, shape=(n, m))
    rows = fs.field(fs.i32, shape=n)
    _kernel(op, mirrored, out, rows)()
    i, j = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")
    want = (OPS[op](j, i) if mirrored else OPS[op](i, j)).astype(np.int32)
    np.testing.assert_array_equal(out.to_numpy(), want)
    np.testing.assert_array_equal(rows.to_numpy(), want.sum(axis=1))
    assert bounds and bounds[-1] is not None


def test_continue_inside_the_trimmed_if(bounds):
    # the `if` is lowered as its body in trimmed rows: a `continue` in it must still skip the
    # rest of that body only for the iterations that take it
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    n, m = 300, 410
    out = fs.field(fs.i32, shape=(n, m))
    rows = fs.field(fs.i32, shape=n)

    @fs.kernel
    def k():
        for i, j in out:
            if i < j:
                out[i, j] = 1
                if (i + j) % 3 == 0:
                    continue
                out[i, j] = 2
                rows[i] += 1

    k()
    i, j = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")
    want = np.where(i < j, np.where((i + j) % 3 == 0, 1, 2), 0)
    np.testing.assert_array_equal(out.to_numpy(), want)
    np.testing.assert_array_equal(rows.to_numpy(), (want == 2).sum(axis=1))
    assert [b[:2] for b in bounds] == [("lo", 1)]


def test_other_bodies_keep_every_iteration(bounds):
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    n = 64
    out = fs.field(fs.i32, shape=(n, n))
    seen = fs.field(fs.i32, shape=(n, n))

    @fs.kernel
    def outside():
        for i, j in out:
            seen[i, j] = 1
            if i < j:
                out[i, j] = 1

    @fs.kernel
    def with_else():
        for i, j in out:
            if i < j:
                out[i, j] = 2
            else:
                out[i, j] = 3

    @fs.kernel
    def shifted():
        for i, j in out:
            if i + 1 < j:
                out[i, j] = 4

    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    outside()
    assert seen.to_numpy().all()
    np.testing.assert_array_equal(out.to_numpy(), (i < j).astype(np.int32))
    with_else()
    np.testing.assert_array_equal(out.to_numpy(), np.where(i < j, 2, 3))
    shifted()
    np.testing.assert_array_equal(out.to_numpy(), np.where(i + 1 < j, 4, np.where(i < j, 2, 3)))
    assert bounds == [None, None, None]


def test_pairwise_energy_gradient_matches_analytic(bounds, llvm_texts):
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    n = 300
    x = fs.Vector.field(2, fs.f32, shape=n, needs_grad=True)
    energy = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def pair_energy():
        for i, j in fs.ndrange(n, n):
            if i < j:
                r = x[i] - x[j]
                energy[None] += 1.0 / fs.sqrt(r.norm_sqr() + 0.01)

    pos = np.random.default_rng(1).uniform(-1, 1, (n, 2))
    x.from_numpy(pos.astype(np.float32))
    with fs.ad.Tape(loss=energy):
        pair_energy()
    p = pos.astype(np.float32).astype(np.float64)
    d = p[:, None, :] - p[None, :, :]
    s = (d ** 2).sum(-1) + 0.01
    upper = np.triu(np.ones((n, n)), 1)
    want_e = (upper / np.sqrt(s)).sum()
    # d/dx_i of 1/sqrt(|x_i - x_j|^2 + eps), over pairs with i < j and j < i
    w = (upper + upper.T) * -(s ** -1.5)
    want_g = (w[:, :, None] * d).sum(axis=1)
    np.testing.assert_allclose(energy[None], want_e, rtol=1e-4)
    np.testing.assert_allclose(x.grad.to_numpy(), want_g, rtol=2e-3, atol=2e-3)
    assert [b[:2] for b in bounds] == [("lo", 1), ("lo", 1)]  # the forward and its adjoint both trimmed
    # -0.0, what a masked-off lane adds (llvm_nest._neutral): the trimmed rows test nothing
    assert len(llvm_texts) == 2 and not any("0x8000000000000000" in t for t in llvm_texts)
