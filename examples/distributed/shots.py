"""shots: one small optimisation, the unit of work that ray_sweep.py runs N of.

A ball is thrown from the origin through air with quadratic drag; gradient descent through
fs.ad.Tape finds the launch velocity that lands it on a target at the final time step
(loss = |x[T] - target|^2). `optimise(config)` is a pure function of its config (target from
the seed, iterations, steps, learning rate): the same config gives bit-identical results in any
process, because the runtime uses one thread (no reordered float sums) and starts from the same
state every call. A process sets up its fields and compiles the kernels once (`_ensure_setup`),
through fieldsim's offline cache, and reuses them for every config it is given.
"""
import os
import signal
import time

import numpy as np

import fieldsim as fs

DT = 0.01
GRAVITY = 9.8
DRAG = 0.1
LR = 0.3

_state = {}  # the current process's runtime, fields and step count
x = v = init_v = target = loss = None


def _ensure_setup(steps):
    """fs.init and the fields, once per process (and again only if `steps` changes)."""
    global x, v, init_v, target, loss
    if _state.get("steps") == steps and _state.get("rt") is fs.lang.runtime._current:
        return False
    rt = fs.init(arch=fs.cpu, default_fp=fs.f64, cpu_max_num_threads=1, random_seed=0)
    x = fs.Vector.field(2, fs.f64, shape=steps + 1, needs_grad=True, name="x")
    v = fs.Vector.field(2, fs.f64, shape=steps + 1, needs_grad=True, name="v")
    init_v = fs.Vector.field(2, fs.f64, shape=(), needs_grad=True, name="init_v")
    target = fs.Vector.field(2, fs.f64, shape=(), name="target")
    loss = fs.field(fs.f64, shape=(), needs_grad=True, name="loss")
    _state.update(steps=steps, rt=rt)
    return True


@fs.kernel
def _launch():
    x[0] = fs.Vector([0.0, 0.0])
    v[0] = init_v[None]


@fs.kernel
def _step(t: fs.i32):
    for _ in range(1):  # locals inside a loop stay registers (top-level ones are kernel state)
        vel = v[t - 1]
        acc = fs.Vector([0.0, -GRAVITY]) - DRAG * vel.norm() * vel
        v[t] = vel + DT * acc
        x[t] = x[t - 1] + DT * v[t]


@fs.kernel
def _loss(steps: fs.i32):
    loss[None] = (x[steps] - target[None]).norm_sqr()


def _forward(steps):
    _launch()
    for t in range(1, steps + 1):
        _step(t)
    _loss(steps)


def target_for(seed):
    rng = np.random.default_rng(seed)
    return np.array([rng.uniform(1.0, 3.0), rng.uniform(-0.5, 1.0)])


def optimise(config):
    """Run one optimisation. config: {"seed", "iters", "steps"} (and for fault-tolerance tests
    "crash_marker": a path; the first process to reach the middle of the run creates it and
    kills itself). Returns a dict of plain numbers (picklable, comparable bit for bit)."""
    steps, iters, seed = int(config["steps"]), int(config["iters"]), int(config["seed"])
    t0 = time.perf_counter()
    compiled_here = _ensure_setup(steps)
    goal = target_for(seed)
    target[None] = goal.tolist()
    vel = np.array([3.0, 3.0])
    losses = []
    for it in range(iters):
        init_v[None] = vel.tolist()
        with fs.ad.Tape(loss=loss):
            _forward(steps)
        losses.append(float(loss[None]))
        g = init_v.grad.to_numpy()
        vel = vel - LR * g
        marker = config.get("crash_marker")
        if marker and it == iters // 2 and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)  # a worker dying mid-run
    init_v[None] = vel.tolist()
    _forward(steps)
    losses.append(float(loss[None]))
    stats = fs.lang.runtime.get().stats
    return {"seed": seed, "target": goal.tolist(), "velocity": vel.tolist(), "losses": losses,
            "pid": os.getpid(), "compiled_here": compiled_here,
            "llvm_compiles": int(stats.get("llvm_compiles", 0)),
            "cache_hits": int(stats.get("cache_hits", 0)),
            "seconds": time.perf_counter() - t0}
