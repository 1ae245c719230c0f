"""Warp (warp-lang) versions of the benchmark programs of `programs.py`, for `_worker.py warp`.

Takes: nothing at import but `warp` (benchmark environment only: Warp is never a dependency of
fieldsim) and the example modules of examples/simulation, read for their constants and their
NumPy set-up (initial states, robot particles, controller parameters), so the Warp programs
start from exactly the data the fieldsim and Taichi programs start from. Importing an example
imports the fieldsim package (pure Python until a kernel is compiled; no llvmlite needed).
BENCH_ARCH (run.py's `--arch`) picks the device: "cuda:0" for cuda (arrays allocated there,
kernels launched there, `sync` = `wp.synchronize_device`), else "cpu". Runs on Warp 1.2 to 1.19
(the GPU machine's carry limit takes 1.2.2's wheel; BENCHMARKS.md's CPU rows used 1.19).

Guarantees: `PROGRAMS[name]()` returns `(step, sync, checksum)` for each name it has in common
with `programs.PROGRAMS`; `step` does the same work as the fieldsim program of that name,
written the way a Warp user writes it (`wp.kernel`, `wp.launch`, `wp.array`, `wp.Tape` for the
adjoints, `array.zero_()` for clearing); `checksum()` returns the same named numbers as
`programs.CHECKSUMS[name]`, which `run.py` compares across backends.

Differences of idiom, kept on purpose (a Warp user would write them so):
* Warp's Tape cannot overwrite an array it has to differentiate through, so diffmpm keeps one
  grid per substep (`(steps, n_grid, n_grid)` arrays) instead of fieldsim's single grid that is
  cleared and recomputed in the backward pass (checkpointing via `ti.ad.grad_replaced`).
* Warp compiles a module's forward and adjoint kernels together at the first launch, so an
  `_adj` program's compile time (measured after its forward ran) is about zero: Warp's adjoint
  compile is inside the `_fwd` row.
* Each program's kernels live in their own Warp module (`fsbench_<program>`, see `_kernel`), so a
  program compiles only its own kernels, as it would in a user's file. A program loads its
  module first (`wp.load_module`: a compile, or a fetch from the kernel cache) and adds that
  time to `COMPILE_S`, which the worker reports as compile time, apart from allocating arrays.
"""
import inspect
import math
import os
import sys
import time

import numpy as np
import warp as wp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "simulation"))
sys.path.insert(0, HERE)

# the examples: their constants and NumPy set-up only
import ad_gravity as _grav
import diffmpm as _dm
import mass_spring as _ms
import mpm88 as _m88

DEVICE = "cuda:0" if os.environ.get("BENCH_ARCH") == "cuda" else "cpu"  # run.py --arch
COMPILE_S = 0.0  # seconds spent loading (compiling) the programs' modules in this process
# `wp.kernel(module=...)` is newer Warp's (1.19 has it, 1.2-1.4 do not: there a kernel's module
# is its function's `__module__`, which _kernel sets to the same name)
_KERNEL_TAKES_MODULE = "module" in inspect.signature(wp.kernel).parameters


def _kernel(module):
    """`@wp.kernel(module=module)` on any Warp version."""
    if _KERNEL_TAKES_MODULE:
        return wp.kernel(module=module)

    def register(f):
        f.__module__ = module
        return wp.kernel(f)
    return register


def _compile(module):
    global COMPILE_S
    t0 = time.perf_counter()
    wp.load_module(wp.get_module(module), device=DEVICE)
    COMPILE_S += time.perf_counter() - t0


def _launch(kernel, dim, *inputs):
    wp.launch(kernel, dim=dim, inputs=list(inputs), device=DEVICE)


def _sync():
    wp.synchronize_device(DEVICE)


# ------------------------------------------------------------------------------------ mpm88
M88_DT = wp.constant(float(_m88.DT))
M88_GRAVITY = wp.constant(float(_m88.GRAVITY))
M88_BULK = wp.constant(float(_m88.BULK))
M88_BOUND = wp.constant(int(_m88.BOUND))


@wp.func
def bspline_weights(f: float):
    a = 1.5 - f
    b = f - 1.0
    c = f - 0.5
    return wp.vec3(0.5 * a * a, 0.75 - b * b, 0.5 * c * c)


@_kernel("fsbench_mpm88")
def mpm88_p2g(x: wp.array(dtype=wp.vec2), v: wp.array(dtype=wp.vec2), C: wp.array(dtype=wp.mat22),
              J: wp.array(dtype=float), grid_v: wp.array2d(dtype=wp.vec2),
              grid_m: wp.array2d(dtype=float), dx: float, inv_dx: float, p_vol: float,
              p_mass: float):
    p = wp.tid()
    Xp = x[p] * inv_dx
    bx = int(Xp[0] - 0.5)
    by = int(Xp[1] - 0.5)
    fx = Xp - wp.vec2(float(bx), float(by))
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    pressure = -M88_DT * 4.0 * inv_dx * inv_dx * p_vol * M88_BULK * (J[p] - 1.0)
    affine = wp.mat22(pressure, 0.0, 0.0, pressure) + p_mass * C[p]
    mv = p_mass * v[p]
    for i in range(3):
        for j in range(3):
            dpos = (wp.vec2(float(i), float(j)) - fx) * dx
            weight = wx[i] * wy[j]
            wp.atomic_add(grid_v, bx + i, by + j, weight * (mv + affine @ dpos))
            wp.atomic_add(grid_m, bx + i, by + j, weight * p_mass)


@_kernel("fsbench_mpm88")
def mpm88_update_grid(grid_v: wp.array2d(dtype=wp.vec2), grid_m: wp.array2d(dtype=float),
                      n_grid: int):
    i, j = wp.tid()
    m = grid_m[i, j]
    if m > 0.0:
        vel = grid_v[i, j] / m
        vx = vel[0]
        vy = vel[1] - M88_DT * M88_GRAVITY
        if i < M88_BOUND and vx < 0.0:
            vx = 0.0
        if i > n_grid - M88_BOUND and vx > 0.0:
            vx = 0.0
        if j < M88_BOUND and vy < 0.0:
            vy = 0.0
        if j > n_grid - M88_BOUND and vy > 0.0:
            vy = 0.0
        grid_v[i, j] = wp.vec2(vx, vy)


@_kernel("fsbench_mpm88")
def mpm88_g2p(x: wp.array(dtype=wp.vec2), v: wp.array(dtype=wp.vec2), C: wp.array(dtype=wp.mat22),
              J: wp.array(dtype=float), grid_v: wp.array2d(dtype=wp.vec2), dx: float,
              inv_dx: float):
    p = wp.tid()
    Xp = x[p] * inv_dx
    bx = int(Xp[0] - 0.5)
    by = int(Xp[1] - 0.5)
    fx = Xp - wp.vec2(float(bx), float(by))
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    new_v = wp.vec2(0.0, 0.0)
    new_C = wp.mat22(0.0, 0.0, 0.0, 0.0)
    for i in range(3):
        for j in range(3):
            dpos = (wp.vec2(float(i), float(j)) - fx) * dx
            weight = wx[i] * wy[j]
            g_v = grid_v[bx + i, by + j]
            new_v += weight * g_v
            new_C += (4.0 * inv_dx * inv_dx * weight) * wp.outer(g_v, dpos)
    v[p] = new_v
    x[p] = x[p] + M88_DT * new_v
    J[p] = J[p] * (1.0 + M88_DT * wp.trace(new_C))
    C[p] = new_C


def mpm88_substep():
    _compile("fsbench_mpm88")
    n, g = 8192, 128
    dx, inv_dx = 1.0 / g, float(g)
    p_vol = (dx * 0.5) ** 2
    p_mass = p_vol * _m88.RHO
    pos, vel, _ = _m88.initial_state(n, 0)
    x = wp.array(pos, dtype=wp.vec2, device=DEVICE)
    v = wp.array(vel, dtype=wp.vec2, device=DEVICE)
    C = wp.zeros(n, dtype=wp.mat22, device=DEVICE)
    J = wp.array(np.ones(n, dtype=np.float32), dtype=float, device=DEVICE)
    grid_v = wp.zeros((g, g), dtype=wp.vec2, device=DEVICE)
    grid_m = wp.zeros((g, g), dtype=float, device=DEVICE)

    def step():
        grid_v.zero_()
        grid_m.zero_()
        _launch(mpm88_p2g, n, x, v, C, J, grid_v, grid_m, dx, inv_dx, p_vol, p_mass)
        _launch(mpm88_update_grid, (g, g), grid_v, grid_m, g)
        _launch(mpm88_g2p, n, x, v, C, J, grid_v, dx, inv_dx)

    def checksum():
        return {"v_abs_sum": float(np.abs(v.numpy()).sum()), "x_sum": float(x.numpy().sum()),
                "J_sum": float(J.numpy().sum())}
    return step, _sync, checksum


# ------------------------------------------------------------------------------------ gravity
# U sums n^2 / 2 float32 terms by one atomic add each: in float32 (fieldsim's and Taichi's field
# type) the sum stops growing once the terms fall under half its ulp (U read -1.23 for -2.61 at
# N=16384, sequentially on Warp's CPU device), where fieldsim and Taichi add partial sums (per
# thread, per GPU warp). So Warp's U is float64, each term still float32.
@_kernel("fsbench_gravity")
def gravity_U(x: wp.array(dtype=wp.vec2), gmm: float, eps2: float, U: wp.array(dtype=wp.float64)):
    i, j = wp.tid()
    if i < j:
        r = x[i] - x[j]
        wp.atomic_add(U, 0, wp.float64(-gmm / wp.sqrt(wp.dot(r, r) + eps2)))


def _gravity(n=2048):
    _compile("fsbench_gravity")
    pos = _grav.initial_state(n)[0]
    x = wp.array(pos, dtype=wp.vec2, device=DEVICE, requires_grad=True)
    U = wp.zeros(1, dtype=wp.float64, device=DEVICE, requires_grad=True)
    mass = _grav.TOTAL_MASS / n
    args = (x, _grav.G * mass * mass, _grav.EPS * _grav.EPS, U)
    return n, x, U, args


def gravity_fwd(n=2048):
    n, _, U, args = _gravity(n)

    def step():
        _launch(gravity_U, (n, n), *args)
    return step, _sync, lambda: {"U": float(U.numpy()[0])}


def gravity_adj(n=2048):
    n, x, U, args = _gravity(n)
    tape = wp.Tape()
    with tape:
        _launch(gravity_U, (n, n), *args)
    U.grad.fill_(1.0)  # seeded once, as the fieldsim program sets U.grad once

    def checksum():
        return {"x_grad_abs_sum": float(np.abs(x.grad.numpy()).sum())}
    return tape.backward, _sync, checksum


def gravity16k_fwd():
    """gravity_fwd at N=16384 (the GPU size)."""
    return gravity_fwd(16384)


def gravity16k_adj():
    return gravity_adj(16384)


def gravity_tape():
    """ad_gravity's step: U from zero and x.grad = dU/dx through a fresh Tape, as `forces()`."""
    n, x, U, args = _gravity()

    def step():
        U.zero_()
        x.grad.zero_()  # as the fieldsim Tape clears gradients on entry
        tape = wp.Tape()
        with tape:
            _launch(gravity_U, (n, n), *args)
        tape.backward(loss=U)
    return step, _sync, lambda: {"U": float(U.numpy()[0]),
                                 "x_grad_abs_sum": float(np.abs(x.grad.numpy()).sum())}


# ------------------------------------------------------------------------------------ diffmpm
DM_N_GRID = wp.constant(int(_dm.N_GRID))
DM_DX = wp.constant(1.0 / _dm.N_GRID)
DM_INV_DX = wp.constant(float(_dm.N_GRID))
DM_DT = wp.constant(float(_dm.DT))
DM_P_VOL = wp.constant(float(_dm.P_VOL))
DM_P_MASS = wp.constant(float(_dm.P_MASS))
DM_MU = wp.constant(float(_dm.MU))
DM_LA = wp.constant(float(_dm.LA))
DM_GRAVITY = wp.constant(float(_dm.GRAVITY))
DM_BOUND = wp.constant(int(_dm.BOUND))
DM_FRICTION = wp.constant(float(_dm.FRICTION))
DM_ACT_STRENGTH = wp.constant(float(_dm.ACT_STRENGTH))
DM_N_SIN = wp.constant(int(_dm.N_SIN))
DM_OMEGA = wp.constant(float(_dm.OMEGA))
DM_PHASE = wp.constant(2.0 * math.pi / _dm.N_SIN)


@wp.func
def polar_rotation(A: wp.mat22):
    """R of A = R S (S symmetric PSD), as fieldsim's and Taichi's 2x2 polar_decompose."""
    a = A[0, 0]
    b = A[0, 1]
    c = A[1, 0]
    d = A[1, 1]
    x = a + d
    y = c - b
    sg = 1.0
    if a * d - b * c < 0.0:  # a reflection, as in Taichi
        x = a - d
        y = b + c
        sg = -1.0
    if x * x + y * y <= 0.0:  # the zero matrix: R = I
        x = 1.0
        y = 0.0
    inv = 1.0 / wp.sqrt(x * x + y * y)
    co = x * inv
    si = y * inv
    return wp.mat22(co, -sg * si, si, sg * co)


@_kernel("fsbench_diffmpm")
def dm_init_state(x0: wp.array(dtype=wp.vec2), x: wp.array2d(dtype=wp.vec2),
                  v: wp.array2d(dtype=wp.vec2), C: wp.array2d(dtype=wp.mat22),
                  F: wp.array2d(dtype=wp.mat22)):
    p = wp.tid()
    x[0, p] = x0[p]
    v[0, p] = wp.vec2(0.0, 0.0)
    C[0, p] = wp.mat22(0.0, 0.0, 0.0, 0.0)
    F[0, p] = wp.mat22(1.0, 0.0, 0.0, 1.0)


@_kernel("fsbench_diffmpm")
def dm_compute_actuation(weights: wp.array2d(dtype=float), bias: wp.array(dtype=float),
                         actuation: wp.array2d(dtype=float), t: int):
    a = wp.tid()
    s = bias[a]
    for k in range(DM_N_SIN):
        s += weights[a, k] * wp.sin(DM_OMEGA * float(t) * DM_DT + DM_PHASE * float(k))
    actuation[t, a] = wp.tanh(s)


@_kernel("fsbench_diffmpm")
def dm_p2g(x: wp.array2d(dtype=wp.vec2), v: wp.array2d(dtype=wp.vec2),
           C: wp.array2d(dtype=wp.mat22), F: wp.array2d(dtype=wp.mat22),
           actuator_id: wp.array(dtype=wp.int32), actuation: wp.array2d(dtype=float),
           grid_v_in: wp.array3d(dtype=wp.vec2), grid_m_in: wp.array3d(dtype=float), f: int,
           s: int):
    p = wp.tid()
    Xp = x[f, p] * DM_INV_DX
    bx = int(Xp[0] - 0.5)
    by = int(Xp[1] - 0.5)
    fx = Xp - wp.vec2(float(bx), float(by))
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    ident = wp.identity(n=2, dtype=float)
    new_F = (ident + DM_DT * C[f, p]) @ F[f, p]
    F[f + 1, p] = new_F
    J = wp.determinant(new_F)
    R = polar_rotation(new_F)
    act = 0.0
    aid = actuator_id[p]
    if aid >= 0:
        act = actuation[f, aid] * DM_ACT_STRENGTH
    A = wp.mat22(0.0, 0.0, 0.0, act)
    tau = ((2.0 * DM_MU) * (new_F - R) @ wp.transpose(new_F) + ident * (DM_LA * (J - 1.0) * J)
           + new_F @ A @ wp.transpose(new_F))
    stress = -(DM_DT * DM_P_VOL * 4.0 * DM_INV_DX * DM_INV_DX) * tau
    affine = stress + DM_P_MASS * C[f, p]
    mv = DM_P_MASS * v[f, p]
    for i in range(3):
        for j in range(3):
            dpos = (wp.vec2(float(i), float(j)) - fx) * DM_DX
            weight = wx[i] * wy[j]
            wp.atomic_add(grid_v_in, s, bx + i, by + j, weight * (mv + affine @ dpos))
            wp.atomic_add(grid_m_in, s, bx + i, by + j, weight * DM_P_MASS)


@_kernel("fsbench_diffmpm")
def dm_grid_op(grid_v_in: wp.array3d(dtype=wp.vec2), grid_m_in: wp.array3d(dtype=float),
               grid_v_out: wp.array3d(dtype=wp.vec2), s: int):
    i, j = wp.tid()
    vel = grid_v_in[s, i, j] / (grid_m_in[s, i, j] + 1e-10)
    vx = vel[0]
    vy = vel[1] - DM_DT * DM_GRAVITY
    if i < DM_BOUND and vx < 0.0:
        vx = 0.0
    if i > DM_N_GRID - DM_BOUND and vx > 0.0:
        vx = 0.0
    if j > DM_N_GRID - DM_BOUND and vy > 0.0:
        vy = 0.0
    if j < DM_BOUND and vy < 0.0:
        # ground: no normal velocity, Coulomb friction on the tangential one
        lit = wp.abs(vx) + 1e-10
        vx = vx * (wp.max(lit + DM_FRICTION * vy, 0.0) / lit)
        vy = 0.0
    grid_v_out[s, i, j] = wp.vec2(vx, vy)


@_kernel("fsbench_diffmpm")
def dm_g2p(x: wp.array2d(dtype=wp.vec2), v: wp.array2d(dtype=wp.vec2),
           C: wp.array2d(dtype=wp.mat22), grid_v_out: wp.array3d(dtype=wp.vec2), f: int, s: int):
    p = wp.tid()
    Xp = x[f, p] * DM_INV_DX
    bx = int(Xp[0] - 0.5)
    by = int(Xp[1] - 0.5)
    fx = Xp - wp.vec2(float(bx), float(by))
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    new_v = wp.vec2(0.0, 0.0)
    new_C = wp.mat22(0.0, 0.0, 0.0, 0.0)
    for i in range(3):
        for j in range(3):
            dpos = wp.vec2(float(i), float(j)) - fx
            g_v = grid_v_out[s, bx + i, by + j]
            weight = wx[i] * wy[j]
            new_v += weight * g_v
            new_C += (4.0 * DM_INV_DX * weight) * wp.outer(g_v, dpos)
    v[f + 1, p] = new_v
    x[f + 1, p] = x[f, p] + DM_DT * new_v
    C[f + 1, p] = new_C


@_kernel("fsbench_diffmpm")
def dm_compute_loss(x: wp.array2d(dtype=wp.vec2), loss: wp.array(dtype=float), steps: int,
                    inv_n: float):
    p = wp.tid()
    wp.atomic_add(loss, 0, -x[steps, p][0] * inv_n)


class DiffMPM:
    """The diffmpm robot in Warp arrays: particles (steps + 1, n), one grid per substep."""

    def __init__(self, pos, act, steps=_dm.STEPS, grid_slots=None, params=True):
        _compile("fsbench_diffmpm")
        n, g = len(pos), _dm.N_GRID
        self.n, self.steps = n, steps
        slots = steps if grid_slots is None else grid_slots

        def arr(shape, dtype):
            return wp.zeros(shape, dtype=dtype, device=DEVICE, requires_grad=True)
        self.x, self.v = arr((steps + 1, n), wp.vec2), arr((steps + 1, n), wp.vec2)
        self.C, self.F = arr((steps + 1, n), wp.mat22), arr((steps + 1, n), wp.mat22)
        self.grid_v_in, self.grid_m_in = arr((slots, g, g), wp.vec2), arr((slots, g, g), float)
        self.grid_v_out = arr((slots, g, g), wp.vec2)
        self.actuation = arr((steps + 1, _dm.N_ACTUATORS), float)
        self.weights = arr((_dm.N_ACTUATORS, _dm.N_SIN), float)
        self.bias = arr(_dm.N_ACTUATORS, float)
        self.loss = arr(1, float)
        self.x0 = wp.array(np.asarray(pos, dtype=np.float32), dtype=wp.vec2, device=DEVICE)
        self.actuator_id = wp.array(np.asarray(act, dtype=np.int32), dtype=wp.int32, device=DEVICE)
        if params:  # the optimisation's start; the fieldsim pair programs keep W = b = 0
            W, b = _dm.initial_params(0)
            self.weights.assign(W.astype(np.float32))
            self.bias.assign(b.astype(np.float32))

    def substep(self, f, s):
        _launch(dm_p2g, self.n, self.x, self.v, self.C, self.F, self.actuator_id, self.actuation,
                self.grid_v_in, self.grid_m_in, f, s)
        _launch(dm_grid_op, (_dm.N_GRID, _dm.N_GRID), self.grid_v_in, self.grid_m_in,
                self.grid_v_out, s)
        _launch(dm_g2p, self.n, self.x, self.v, self.C, self.grid_v_out, f, s)

    def init_state(self):
        _launch(dm_init_state, self.n, self.x0, self.x, self.v, self.C, self.F)

    def actuate(self, t):
        _launch(dm_compute_actuation, _dm.N_ACTUATORS, self.weights, self.bias, self.actuation, t)

    def loss_and_grad(self):
        """One forward + backward pass on a fresh Tape; returns (loss, dloss/dW, dloss/db)."""
        self.grid_v_in.zero_()
        self.grid_m_in.zero_()
        self.loss.zero_()
        tape = wp.Tape()
        with tape:
            self.init_state()
            for s in range(self.steps):
                self.actuate(s)
                self.substep(s, s)
            _launch(dm_compute_loss, self.n, self.x, self.loss, self.steps, 1.0 / self.n)
        tape.backward(loss=self.loss)
        # copies: on the CPU, numpy() is a view, and tape.zero() clears the gradients
        out = (float(self.loss.numpy()[0]), self.weights.grad.numpy().copy(),
               self.bias.grad.numpy().copy())
        tape.zero()
        return out


def _pair_state(pos, act):
    d = DiffMPM(pos, act, grid_slots=1, params=False)
    d.init_state()
    d.actuate(0)
    return d


def _pair_fwd(pos, act):
    d = _pair_state(pos, act)

    def step():
        d.grid_v_in.zero_()
        d.grid_m_in.zero_()
        d.substep(0, 0)

    def checksum():
        return _particle_sums(d, 1, "")
    return step, _sync, checksum


def _pair_adj(pos, act):
    d = _pair_state(pos, act)
    tape = wp.Tape()
    with tape:
        d.substep(0, 0)
    d.x.grad.fill_(1.0)  # as the fieldsim program: x.grad = 1 at every t, once

    def checksum():
        return _particle_sums(d, 0, ".grad")
    return tape.backward, _sync, checksum


def _particle_sums(d, t, grad):
    out = {}
    for name in ("x", "v", "C", "F"):
        a = getattr(d, name)
        a = a.grad if grad else a
        out[f"{name}{grad}_abs_sum"] = float(np.abs(a.numpy()[t]).sum())
    return out


def _iter(pos, act):
    d = DiffMPM(pos, act)
    last = {}

    def step():
        last["out"] = d.loss_and_grad()

    def checksum():
        loss, gW, gb = last["out"]
        return {"loss": loss, "grad_abs_sum": float(np.abs(gW).sum() + np.abs(gb).sum())}
    return step, _sync, checksum


def _example_robot():
    return _dm.robot_particles(_dm.N_GRID)


def _full_robot():
    import programs  # the full-size particle set is defined once, beside the fieldsim programs
    return programs.diffmpm_full_particles()


def mpm_pair_fwd():
    return _pair_fwd(*_example_robot())


def mpm_pair_adj():
    return _pair_adj(*_example_robot())


def diffmpm_iter():
    return _iter(*_example_robot())


def mpm_pair_full_fwd():
    return _pair_fwd(*_full_robot())


def mpm_pair_full_adj():
    return _pair_adj(*_full_robot())


def diffmpm_full_iter():
    return _iter(*_full_robot())


# ------------------------------------------------------------------------------------ mass_spring
MS_DT = wp.constant(float(_ms.DT))
MS_GRAVITY = wp.constant(float(_ms.GRAVITY))
MS_STIFFNESS = wp.constant(float(_ms.STIFFNESS))
MS_DAMPING = wp.constant(float(_ms.DAMPING))
MS_GROUND = wp.constant(float(_ms.GROUND))
MS_N_SIN = wp.constant(int(_ms.N_SIN))
MS_N_NODES = wp.constant(int(_ms.N_NODES))
MS_N_HIDDEN = wp.constant(int(_ms.N_HIDDEN))
MS_OMEGA = wp.constant(float(_ms.OMEGA))
MS_PHASE = wp.constant(2.0 * math.pi / _ms.N_SIN)
MS_POS_SCALE = wp.constant(float(_ms.POS_SCALE))
# the example unrolls its loops over nodes and hidden units (ti.static): so does Warp here
wp.get_module("fsbench_mass_spring").options["max_unroll"] = 64


@_kernel("fsbench_mass_spring")
def ms_init_state(x0: wp.array(dtype=wp.vec2), x: wp.array2d(dtype=wp.vec2),
                  v: wp.array2d(dtype=wp.vec2)):
    i = wp.tid()
    x[0, i] = x0[i]
    v[0, i] = wp.vec2(0.0, 0.0)


@_kernel("fsbench_mass_spring")
def ms_compute_center(x: wp.array2d(dtype=wp.vec2), center: wp.array(dtype=wp.vec2), t: int):
    i = wp.tid()
    wp.atomic_add(center, t, x[t, i] / float(MS_N_NODES))


@_kernel("fsbench_mass_spring")
def ms_controller_hidden(x: wp.array2d(dtype=wp.vec2), center: wp.array(dtype=wp.vec2),
                         w1: wp.array2d(dtype=float), b1: wp.array(dtype=float),
                         hidden: wp.array2d(dtype=float), t: int):
    h = wp.tid()
    a = b1[h]
    for k in range(MS_N_SIN):
        a += w1[h, k] * wp.sin(MS_OMEGA * float(t) * MS_DT + MS_PHASE * float(k))
    for j in range(MS_N_NODES):
        offset = (x[t, j] - center[t]) * MS_POS_SCALE
        a += w1[h, MS_N_SIN + 2 * j] * offset[0] + w1[h, MS_N_SIN + 2 * j + 1] * offset[1]
    hidden[t, h] = wp.tanh(a)


@_kernel("fsbench_mass_spring")
def ms_controller_output(hidden: wp.array2d(dtype=float), w2: wp.array2d(dtype=float),
                         b2: wp.array(dtype=float), act: wp.array2d(dtype=float), t: int):
    s = wp.tid()
    a = b2[s]
    for h in range(MS_N_HIDDEN):
        a += w2[s, h] * hidden[t, h]
    act[t, s] = wp.tanh(a)


@_kernel("fsbench_mass_spring")
def ms_spring_forces(x: wp.array2d(dtype=wp.vec2), act: wp.array2d(dtype=float),
                     spring_a: wp.array(dtype=wp.int32), spring_b: wp.array(dtype=wp.int32),
                     rest: wp.array(dtype=float), gain: wp.array(dtype=float),
                     v_inc: wp.array2d(dtype=wp.vec2), t: int):
    s = wp.tid()
    ia = spring_a[s]
    ib = spring_b[s]
    d = x[t, ia] - x[t, ib]
    length = wp.length(d) + 1e-4
    target = rest[s] * (1.0 + gain[s] * act[t, s])
    impulse = MS_DT * MS_STIFFNESS * (length - target) / length * d
    wp.atomic_add(v_inc, t, ia, -impulse)
    wp.atomic_add(v_inc, t, ib, impulse)


@_kernel("fsbench_mass_spring")
def ms_advance(v: wp.array2d(dtype=wp.vec2), v_inc: wp.array2d(dtype=wp.vec2),
               x: wp.array2d(dtype=wp.vec2), t: int):
    i = wp.tid()
    vel = (v[t - 1, i] * wp.exp(-MS_DT * MS_DAMPING) + v_inc[t - 1, i]
           + wp.vec2(0.0, -MS_DT * MS_GRAVITY))
    old_x = x[t - 1, i]
    toi = 0.0
    new_v = vel
    # sticky ground, the time of impact resolved inside the step
    if vel[1] < -1e-4 and old_x[1] + MS_DT * vel[1] < MS_GROUND:
        toi = wp.max((MS_GROUND - old_x[1]) / vel[1], 0.0)
        new_v = wp.vec2(0.0, 0.0)
    v[t, i] = new_v
    x[t, i] = old_x + toi * vel + (MS_DT - toi) * new_v


@_kernel("fsbench_mass_spring")
def ms_compute_loss(center: wp.array(dtype=wp.vec2), loss: wp.array(dtype=float), steps: int):
    loss[0] = -center[steps][0]


def mass_spring_iter():
    _compile("fsbench_mass_spring")
    steps, nn, ns = _ms.STEPS, _ms.N_NODES, _ms.N_SPRINGS

    def arr(shape, dtype=float, grad=True):
        return wp.zeros(shape, dtype=dtype, device=DEVICE, requires_grad=grad)
    x, v, v_inc = arr((steps + 1, nn), wp.vec2), arr((steps + 1, nn), wp.vec2), arr((steps + 1, nn), wp.vec2)
    center = arr(steps + 1, wp.vec2)
    hidden, act = arr((steps + 1, _ms.N_HIDDEN)), arr((steps + 1, ns))
    loss = arr(1)
    params = [wp.array(p.astype(np.float32), dtype=float, device=DEVICE, requires_grad=True)
              for p in _ms.initial_params(0)]
    w1, b1, w2, b2 = params

    def const(a, dtype=float):
        return wp.array(a, dtype=dtype, device=DEVICE)
    x0 = const(_ms.NODES0.astype(np.float32), wp.vec2)
    spring_a = const(_ms.SPRINGS[:, 0].copy(), wp.int32)
    spring_b = const(_ms.SPRINGS[:, 1].copy(), wp.int32)
    rest = const(np.linalg.norm(_ms.NODES0[_ms.SPRINGS[:, 0]] - _ms.NODES0[_ms.SPRINGS[:, 1]],
                                axis=1).astype(np.float32))
    gain = const(_ms.GAINS.astype(np.float32))
    last = {}

    def step():
        v_inc.zero_()
        center.zero_()
        tape = wp.Tape()
        with tape:
            _launch(ms_init_state, nn, x0, x, v)
            for t in range(1, steps + 1):
                _launch(ms_compute_center, nn, x, center, t - 1)
                _launch(ms_controller_hidden, _ms.N_HIDDEN, x, center, w1, b1, hidden, t - 1)
                _launch(ms_controller_output, ns, hidden, w2, b2, act, t - 1)
                _launch(ms_spring_forces, ns, x, act, spring_a, spring_b, rest, gain, v_inc, t - 1)
                _launch(ms_advance, nn, v, v_inc, x, t)
            _launch(ms_compute_center, nn, x, center, steps)
            _launch(ms_compute_loss, 1, center, loss, steps)
        tape.backward(loss=loss)
        last["out"] = float(loss.numpy()[0]), [p.grad.numpy().astype(np.float64) for p in params]
        tape.zero()

    def checksum():
        loss_, grads = last["out"]
        return {"loss": loss_, "grad_norm": float(math.sqrt(sum((g ** 2).sum() for g in grads)))}
    return step, _sync, checksum


PROGRAMS = {f.__name__: f for f in (mpm88_substep, gravity_fwd, gravity_adj, gravity_tape,
                                     mpm_pair_fwd, mpm_pair_adj, diffmpm_iter, mpm_pair_full_fwd,
                                     mpm_pair_full_adj, diffmpm_full_iter, mass_spring_iter,
                                     gravity16k_fwd, gravity16k_adj)}
