"""Loop accumulators (codegen/loop_accumulators.py): an owned element a serial loop only adds to
is summed in a local, loaded before the loop and stored after it.

Checks: an n-body force loop (`force[i] += f` under `if i != j`) gives the bits of the same
loop written with an explicit local, and matches numpy; its unoptimised IR loads the element
into a `loop_acc` local and its optimised inner loop no longer stores to the field; loops
left alone stay right: a loop that also reads the element, one that uses the atomic's old
value, a `break`, a zero-trip loop, nested loops adding to one element, integer `sub`,
vector components; the analysis groups elements by constant component and refuses an index
made inside the loop.
"""
import re

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.codegen.demote import owned_atomics
from fieldsim.codegen.loop_accumulators import loop_accumulators
from fieldsim.ir.ir import Op, walk

N = 257


def _forces_numpy(p):
    diff = p[:, None, :] - p[None, :, :]
    r = np.sqrt((diff ** 2).sum(-1) + 1e-5)  # Taichi's norm(eps): sqrt(|d|^2 + eps)
    f = -diff / r[..., None] ** 3
    f[np.arange(len(p)), np.arange(len(p))] = 0
    return f.sum(1)


def test_nbody_force_loop_sums_in_a_local(llvm_texts, monkeypatch, capfd):
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    pos = fs.Vector.field(2, fs.f32, N)
    force = fs.Vector.field(2, fs.f32, N)
    by_hand = fs.Vector.field(2, fs.f32, N)

    @fs.kernel
    def compute_force():
        for i in range(N):
            p = pos[i]
            for j in range(N):
                if i != j:
                    diff = p - pos[j]
                    r = diff.norm(1e-5)
                    force[i] += -(1.0 / r) ** 3 * diff

    @fs.kernel
    def compute_by_hand():
        for i in range(N):
            p = pos[i]
            acc = by_hand[i]
            for j in range(N):
                if i != j:
                    diff = p - pos[j]
                    r = diff.norm(1e-5)
                    acc += -(1.0 / r) ** 3 * diff
            by_hand[i] = acc

    p = np.random.default_rng(0).random((N, 2)).astype(np.float32)
    pos.from_numpy(p)
    start = np.random.default_rng(1).random((N, 2)).astype(np.float32)
    force.from_numpy(start)
    by_hand.from_numpy(start)
    monkeypatch.setenv("FIELDSIM_PRINT_LLVM", "1")
    capfd.readouterr()
    compute_force()
    optimised = capfd.readouterr().out
    compute_by_hand()
    np.testing.assert_array_equal(force.to_numpy(), by_hand.to_numpy())
    want = start + _forces_numpy(p.astype(np.float64))
    assert np.abs(force.to_numpy() - want).max() < 1e-4 * np.abs(want).max()
    assert "loop_acc" in llvm_texts[0]
    # the optimised task stores to `force` only after its inner loop: one store per i (LLVM 22
    # unrolls the outer loop: then one in each copy, each in an exit block of the inner loop)
    task = optimised[optimised.index("define"):]
    task = task[:task.index("\n}\n")]
    stores = []  # (block label, store), besides the task's MXCSR word (codegen/denormals.py)
    label = "entry"
    for line in task.splitlines():
        block = re.match(r"^([\w.]+):", line)
        label = block.group(1) if block else label
        if re.match(r"^\s+store ", line) and "%mxcsr." not in line:
            stores.append((label, line))
    assert stores and all(label.startswith("for.exit") for label, _ in stores), task


def test_loops_left_alone_or_changed_stay_right():
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    n, m = 64, 37
    x = fs.field(fs.f32, n)
    reread = fs.field(fs.f32, n)
    olds = fs.field(fs.i32, n)
    stop = fs.field(fs.f32, n)
    nested = fs.field(fs.f32, n)
    count = fs.field(fs.i32, n)
    vec = fs.Vector.field(3, fs.f32, n)
    trip = fs.field(fs.i32, ())

    @fs.kernel
    def run():
        for i in range(n):
            for j in range(m):
                reread[i] += x[j] + reread[i] * 0.5  # reads it: not held
                olds[i] = fs.atomic_add(count[i], 0) + 0  # an old value used
                count[i] -= j  # int sub
                if j == i % 7:
                    break  # the store after the loop still runs
                stop[i] += x[j]
            for j in range(trip[None]):  # zero trips: the element keeps its value
                nested[i] += 100.0
            for j in range(3):
                for k in range(m):
                    nested[i] += x[k] * (j + 1)  # held by the outer loop, added by the inner
            for k in range(m):
                for c in fs.static(range(3)):
                    vec[i][c] += x[k] * (c + 1)

    xs = np.random.default_rng(2).random(n).astype(np.float32)
    x.from_numpy(xs)
    run()
    want_reread = np.zeros(n, np.float32)
    want_stop = np.zeros(n, np.float32)
    want_count = np.zeros(n, np.int32)
    for i in range(n):
        for j in range(m):
            want_reread[i] = np.float32(want_reread[i] + np.float32(xs[j] + want_reread[i] * np.float32(0.5)))
            want_count[i] -= j
            if j == i % 7:
                break
            want_stop[i] += xs[j]
    np.testing.assert_allclose(reread.to_numpy(), want_reread, rtol=1e-5)
    np.testing.assert_array_equal(count.to_numpy(), want_count)
    np.testing.assert_allclose(stop.to_numpy(), want_stop, rtol=1e-6)
    np.testing.assert_allclose(nested.to_numpy(), np.full(n, 6 * xs[:m].sum()), rtol=1e-5)
    np.testing.assert_allclose(vec.to_numpy(), np.outer(np.full(n, xs[:m].sum()), [1, 2, 3]),
                               rtol=1e-5)


def test_analysis_groups_by_component_and_refuses_inner_indices():
    fs.init(arch=fs.cpu, offline_cache=False)
    n = 8
    v = fs.Vector.field(2, fs.f32, n)
    g = fs.field(fs.f32, n * n)

    @fs.kernel
    def k():
        for i in range(n):
            for j in range(n):
                v[i][0] += 1.0
                v[i][1] += 2.0
                v[i][0] += 3.0
                g[i * n + j] += 1.0  # the element changes with j: not held

    from fieldsim.lang import runtime
    ir, _ = k.build_ir(runtime.get(), {}, {}, None)
    task = next(s for s in ir.body if s.op == Op.FOR)
    inner = next(s for s in walk(task.body) if s.op == Op.FOR)
    groups = loop_accumulators(inner, owned_atomics(task, []), set())
    assert sorted(len(grp) for grp in groups) == [1, 2]
    assert all(st.field is not g for grp in groups for st in grp)
    assert loop_accumulators(inner, set(), set()) == []  # not demoted: left alone


@pytest.mark.parametrize("threads", [1, 2])
def test_an_element_indexed_by_the_inner_loop_itself_is_not_held(threads):
    """`x[i, j] += ...` inside `for j` touches a new element each iteration: nothing to hold
    (the loop's own index once passed for loop-invariant and broke the LLVM text)."""
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=threads)
    n, m = 5, 7
    x = fs.field(fs.i32, shape=(n, m))

    @fs.kernel
    def on_field():
        for i in range(n):
            for j in range(m):
                x[i, j] += i + j

    @fs.kernel
    def on_array(arr: fs.types.ndarray()):
        for i in range(n):
            for j in range(m):
                arr[i, j] += i * j

    on_field()
    a = np.ones((n, m), np.int32)
    on_array(a)
    i, j = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")
    np.testing.assert_array_equal(x.to_numpy(), i + j)
    np.testing.assert_array_equal(a, 1 + i * j)
