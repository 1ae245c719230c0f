"""A hand-written backward pass over a small 3-D particle-grid scheme, the pattern of DiffTaichi's
diffmpm3d.py / liquid.py (no Tape): zero the gradients, seed ``loss.grad``, then for each step
in reverse re-run the grid kernels (the grid is not stored per step), clear the grid gradients
from inside a kernel, and call the adjoints with the step argument.

The scatter is ``ti.atomic_add(grid[base + offset], vec)`` over a vector-valued 3-D index and
the gather reads ``grid[base[0] + i, ...]``; the per-particle controller enters through a
``tanh``. The gradients of the loss with respect to the controller parameters must match float64
central finite differences of the forward pass.
"""
import numpy as np
import pytest

import fieldsim as fs

N_GRID, N_PART, STEPS, N_ACT = 8, 6, 5, 2
DX = 1.0 / N_GRID
DT = 2e-2


def _build():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    f = {
        "x": fs.Vector.field(3, fs.f64),
        "v": fs.Vector.field(3, fs.f64),
        "gv": fs.Vector.field(3, fs.f64),
        "gm": fs.field(fs.f64),
        "gout": fs.Vector.field(3, fs.f64),
        "act": fs.field(fs.f64),
        "w": fs.field(fs.f64),
        "aid": fs.field(fs.i32),
        "loss": fs.field(fs.f64),
    }
    fs.root.dense(fs.k, STEPS + 1).dense(fs.l, N_PART).place(f["x"], f["v"])
    fs.root.dense(fs.ijk, N_GRID).place(f["gv"], f["gm"], f["gout"])
    fs.root.dense(fs.ij, (STEPS, N_ACT)).place(f["act"])
    fs.root.dense(fs.i, N_ACT).place(f["w"])
    fs.root.dense(fs.i, N_PART).place(f["aid"])
    fs.root.place(f["loss"])
    fs.root.lazy_grad()
    return f


def _kernels(f):
    x, v, gv, gm, gout = f["x"], f["v"], f["gv"], f["gm"], f["gout"]
    act, w, aid, loss = f["act"], f["w"], f["aid"], f["loss"]

    @fs.kernel
    def clear_grid():
        for i, j, k in gm:
            gv[i, j, k] = [0.0, 0.0, 0.0]
            gm[i, j, k] = 0.0
            gv.grad[i, j, k] = [0.0, 0.0, 0.0]
            gm.grad[i, j, k] = 0.0
            gout.grad[i, j, k] = [0.0, 0.0, 0.0]

    @fs.kernel
    def actuate(t: fs.i32):
        for a in range(N_ACT):
            act[t, a] = fs.tanh(w[a] * (t + 1.0))

    @fs.kernel
    def p2g(t: fs.i32):
        for p in range(N_PART):
            base = fs.cast(x[t, p] / DX - 0.5, fs.i32)
            fx = x[t, p] / DX - fs.cast(base, fs.f64)
            wt = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
            push = fs.Vector([0.0, act[t, aid[p]], 0.3 * act[t, aid[p]]])
            for i in fs.static(range(3)):
                for j in fs.static(range(3)):
                    for k in fs.static(range(3)):
                        weight = wt[i][0] * wt[j][1] * wt[k][2]
                        off = fs.Vector([i, j, k])
                        fs.atomic_add(gv[base + off], weight * (v[t, p] + push))
                        fs.atomic_add(gm[base + off], weight)

    @fs.kernel
    def grid_op():
        for i, j, k in gm:
            gout[i, j, k] = gv[i, j, k] / (gm[i, j, k] + 1e-10)

    @fs.kernel
    def g2p(t: fs.i32):
        for p in range(N_PART):
            base = fs.cast(x[t, p] / DX - 0.5, fs.i32)
            fx = x[t, p] / DX - fs.cast(base, fs.f64)
            wt = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
            nv = fs.Vector([0.0, 0.0, 0.0])
            for i in fs.static(range(3)):
                for j in fs.static(range(3)):
                    for k in fs.static(range(3)):
                        weight = wt[i][0] * wt[j][1] * wt[k][2]
                        nv += weight * gout[base[0] + i, base[1] + j, base[2] + k]
            v[t + 1, p] = nv
            x[t + 1, p] = x[t, p] + DT * nv

    @fs.kernel
    def compute_loss():
        for p in range(N_PART):
            fs.atomic_add(loss[None], x[STEPS, p][1] + 0.5 * x[STEPS, p][2] ** 2)

    return clear_grid, actuate, p2g, grid_op, g2p, compute_loss


def _forward(f, ks):
    clear_grid, actuate, p2g, grid_op, g2p, compute_loss = ks
    for t in range(STEPS):
        clear_grid()
        actuate(t)
        p2g(t)
        grid_op()
        g2p(t)
    f["loss"][None] = 0.0
    compute_loss()
    return f["loss"][None]


def _backward(f, ks):
    clear_grid, actuate, p2g, grid_op, g2p, compute_loss = ks
    fs.ad.clear_all_gradients()
    f["loss"].grad[None] = 1.0
    compute_loss.grad()
    for t in reversed(range(STEPS)):
        clear_grid()  # the grid is not stored per step: recompute it, with its gradients zeroed
        p2g(t)
        grid_op()
        g2p.grad(t)
        grid_op.grad()
        p2g.grad(t)
        actuate.grad(t)


def _sim():
    f = _build()
    rng = np.random.default_rng(3)
    x0 = 0.35 + 0.3 * rng.random((N_PART, 3))
    for p in range(N_PART):
        f["x"][0, p] = x0[p].tolist()
        f["v"][0, p] = [0.1, -0.2, 0.05]
        f["aid"][p] = p % N_ACT
    return f, _kernels(f)


def test_user_backward_matches_central_differences():
    f, ks = _sim()
    w = f["w"]
    params = [0.4, -0.7]
    for a, val in enumerate(params):
        w[a] = val
    _forward(f, ks)
    _backward(f, ks)
    grads = [w.grad[a] for a in range(N_ACT)]
    h = 1e-6
    for a, val in enumerate(params):
        w[a] = val + h
        lp = _forward(f, ks)
        w[a] = val - h
        lm = _forward(f, ks)
        w[a] = val
        fd = (lp - lm) / (2 * h)
        assert abs(fd) > 1e-4, "the parameter must influence the loss for the check to mean anything"
        assert grads[a] == pytest.approx(fd, rel=1e-6, abs=1e-10), (a, grads[a], fd)
