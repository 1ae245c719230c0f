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


def _gravity(ti, n=2048):
    import ad_gravity as g
    g.setup(n)
    g.x.from_numpy(g.initial_state(n)[0].astype(g.x.to_numpy().dtype))
    return g


def gravity_fwd(ti):
    g = _gravity(ti)
    return g.compute_U, ti.sync


def gravity_adj(ti):
    g = _gravity(ti)
    g.compute_U()
    g.U.grad[None] = 1.0
    return g.compute_U.grad, ti.sync


def gravity_tape(ti):
    """One Tape step as ad_gravity runs it: the energy kernel and its adjoint (x.grad = dU/dx)."""
    g = _gravity(ti)
    return g.forces, ti.sync


def _mpm_pair(ti):
    import diffmpm as d
    d.setup()
    return _pair(d)


def mpm_pair_fwd(ti):
    return _pair_fwd(_mpm_pair(ti), ti)


def mpm_pair_adj(ti):
    return _pair_adj(_mpm_pair(ti), ti)


def diffmpm_iter(ti):
    import diffmpm as d
    d.setup()
    W, b = d.initial_params(0)
    d.set_params(W, b)
    return d.loss_and_grad, ti.sync


PROGRAMS = {f.__name__: f for f in (mpm88_substep, gravity_fwd, gravity_adj, gravity_tape,
                                     mpm_pair_fwd, mpm_pair_adj, diffmpm_iter)}


# ---------------------------------------------------------------- full size, mass-spring (issue #13)
def diffmpm_full_particles():
    """(positions (n, 2), actuator ids (n,)) of the example at DiffTaichi's full size
    (diffmpm.FULL_SIZE: the robot's rectangles on a lattice of 8.9 particles per dx on the 64^2
    grid, 6418 particles). NumPy only, so Warp's programs use the same particles."""
    import diffmpm as d
    return d.robot_particles(d.FULL_SIZE["n_grid_"],
                             particles_per_dx=d.FULL_SIZE["particles_per_dx"])


def _diffmpm_full(ti):
    """The example at full size: `setup(**diffmpm.FULL_SIZE)`."""
    import diffmpm as d
    d.setup(**d.FULL_SIZE)
    return d


def _pair(d):
    d.init_state()
    d.compute_actuation(0)
    return d


def _pair_fwd(d, ti):
    def run():
        d.clear_grid()
        d.p2g(0)
        d.grid_op()
        d.g2p(0)
    return run, ti.sync


def _pair_adj(d, ti):
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


def mpm_pair_full_fwd(ti):
    return _pair_fwd(_pair(_diffmpm_full(ti)), ti)


def mpm_pair_full_adj(ti):
    return _pair_adj(_pair(_diffmpm_full(ti)), ti)


def diffmpm_full_iter(ti):
    d = _diffmpm_full(ti)
    W, b = d.initial_params(0)
    d.set_params(W, b)
    return d.loss_and_grad, ti.sync


def mass_spring_iter(ti):
    """examples/simulation/mass_spring.py as the example trains: one forward + backward."""
    import mass_spring as ms
    ms.setup(ms.STEPS)
    ms.set_params(ms.initial_params(0))
    return ms.loss_and_grad, ti.sync


def gravity16k_fwd(ti):
    """gravity_fwd at N=16384 (the GPU size: 134M pairs)."""
    return _gravity(ti, 16384).compute_U, ti.sync


def gravity16k_adj(ti):
    g = _gravity(ti, 16384)
    g.compute_U()
    g.U.grad[None] = 1.0
    return g.compute_U.grad, ti.sync


PROGRAMS.update({f.__name__: f for f in (mpm_pair_full_fwd, mpm_pair_full_adj, diffmpm_full_iter,
                                          mass_spring_iter, gravity16k_fwd, gravity16k_adj)})


# ---------------------------------------------------------------- checksums across backends
def _abs_sum(field, t=None):
    a = field.to_numpy()
    return float(np.abs(a if t is None else a[t]).sum())


def _particle_sums(t, grad):
    import diffmpm as d
    return {f"{n}{grad}_abs_sum": _abs_sum(getattr(d, n).grad if grad else getattr(d, n), t)
            for n in ("x", "v", "C", "F")}


def _mpm88_check(ti):
    import mpm88
    return {"v_abs_sum": _abs_sum(mpm88.v), "x_sum": float(mpm88.x.to_numpy().sum()),
            "J_sum": float(mpm88.J.to_numpy().sum())}


def _gravity_fwd_check(ti):
    import ad_gravity as g
    return {"U": float(g.U[None])}


def _gravity_adj_check(ti):
    import ad_gravity as g
    return {"x_grad_abs_sum": _abs_sum(g.x.grad)}


def _gravity_tape_check(ti):
    import ad_gravity as g
    return {"U": float(g.U[None]), "x_grad_abs_sum": _abs_sum(g.x.grad)}


def _diffmpm_iter_check(ti):
    import diffmpm as d
    return {"loss": float(d.loss[None]),
            "grad_abs_sum": _abs_sum(d.weights.grad) + _abs_sum(d.bias.grad)}


def _mass_spring_check(ti):
    import mass_spring as ms
    grads = ms.get_grads()
    return {"loss": float(ms.loss[None]),
            "grad_norm": float(np.sqrt(sum((g ** 2).sum() for g in grads)))}


# program -> fn(ti) -> {name: float}, read after the first step; every backend reports the same
# names (warp_programs.py too), and run.py compares them with fieldsim's
CHECKSUMS = {
    "mpm88_substep": _mpm88_check, "gravity_fwd": _gravity_fwd_check,
    "gravity_adj": _gravity_adj_check, "gravity_tape": _gravity_tape_check,
    "gravity16k_fwd": _gravity_fwd_check, "gravity16k_adj": _gravity_adj_check,
    "mpm_pair_fwd": lambda ti: _particle_sums(1, ""),
    "mpm_pair_adj": lambda ti: _particle_sums(0, ".grad"),
    "mpm_pair_full_fwd": lambda ti: _particle_sums(1, ""),
    "mpm_pair_full_adj": lambda ti: _particle_sums(0, ".grad"),
    "diffmpm_iter": _diffmpm_iter_check, "diffmpm_full_iter": _diffmpm_iter_check,
    "mass_spring_iter": _mass_spring_check,
}
