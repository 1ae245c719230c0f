"""The measured programs: each returns (step, sync) for one warm iteration of an example.

They import the example modules unchanged, so fieldsim and Taichi run identical source. The
`*_adj` programs launch a compiled forward first, so their first call measures the adjoint's
compile (frontend + reverse AD + LLVM), and their warm time is the adjoint launch alone.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "simulation"))


def mpm88_substep(ti):
    import mpm88
    mpm88.setup(8192, 128)
    mpm88.reset()
    return mpm88.substep, ti.sync


def _gravity(ti):
    import ad_gravity as g
    g.setup(2048)
    g.x.from_numpy(g.initial_state(2048)[0].astype(g.x.to_numpy().dtype))
    return g


def gravity_fwd(ti):
    g = _gravity(ti)
    return g.compute_U, ti.sync


def gravity_adj(ti):
    g = _gravity(ti)
    g.compute_U()
    g.U.grad[None] = 1.0
    return g.compute_U.grad, ti.sync


def _mpm_pair(ti):
    import diffmpm as d
    d.setup()
    d.init_state()
    d.compute_actuation(0)
    return d


def mpm_pair_fwd(ti):
    d = _mpm_pair(ti)

    def run():
        d.clear_grid()
        d.p2g(0)
        d.grid_op()
        d.g2p(0)
    return run, ti.sync


def mpm_pair_adj(ti):
    d = _mpm_pair(ti)
    d.clear_grid()
    d.p2g(0)
    d.grid_op()
    d.g2p(0)
    d.x.grad.from_numpy(np.ones(d.x.grad.to_numpy().shape, dtype=d.x.to_numpy().dtype))

    def run():
        d.g2p.grad(0)
        d.grid_op.grad()
        d.p2g.grad(0)
    return run, ti.sync


def diffmpm_iter(ti):
    import diffmpm as d
    d.setup()
    W, b = d.initial_params(0)
    d.set_params(W, b)
    return d.loss_and_grad, ti.sync


# DiffTaichi's full size (issue #13): 6418 particles on the 64^2 grid, 512 steps
# (diffmpm.FULL_SIZE: the example's robot sampled 8.9 particles per dx instead of 2).

def _mpm_pair_full(ti):
    import diffmpm as d
    d.setup(**d.FULL_SIZE)
    d.init_state()
    d.compute_actuation(0)
    return d


def mpm_pair_full_fwd(ti):
    d = _mpm_pair_full(ti)

    def run():
        d.clear_grid()
        d.p2g(0)
        d.grid_op()
        d.g2p(0)
    return run, ti.sync


def mpm_pair_full_adj(ti):
    d = _mpm_pair_full(ti)
    d.clear_grid()
    d.p2g(0)
    d.grid_op()
    d.g2p(0)
    d.x.grad.from_numpy(np.ones(d.x.grad.to_numpy().shape, dtype=d.x.to_numpy().dtype))

    def run():
        d.g2p.grad(0)
        d.grid_op.grad()
        d.p2g.grad(0)
    return run, ti.sync


def diffmpm_full_iter(ti):
    import diffmpm as d
    d.setup(**d.FULL_SIZE)
    W, b = d.initial_params(0)
    d.set_params(W, b)
    return d.loss_and_grad, ti.sync


PROGRAMS = {f.__name__: f for f in (mpm88_substep, gravity_fwd, gravity_adj, mpm_pair_fwd,
                                     mpm_pair_adj, diffmpm_iter, mpm_pair_full_fwd,
                                     mpm_pair_full_adj, diffmpm_full_iter)}
