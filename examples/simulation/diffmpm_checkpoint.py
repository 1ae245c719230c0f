"""diffmpm with checkpointing: the same soft robot, its state kept only every k-th step.

Takes the robot, material, controller and kernels of `diffmpm.py` unchanged, but points them at
ring buffers instead of time-indexed fields: x, v, C, F have two slots (the current state in
slot 0, the next one written into slot 1 by `p2g(0)` / `g2p(0)`, copied back by `commit`), and
the actuation of the current step lives in a one-row field. Memory for the particle state is
thus independent of the number of steps; `fs.ad.checkpoint(step, steps, every=k)` keeps one
copy of that state every k steps and, in the backward pass, recomputes each segment of k steps
from its copy before running its adjoints in reverse.

Guarantees: `loss_and_grad()` returns the loss and dloss/d(W, b) that the plain `diffmpm.py`
(every step stored) gives for the same number of steps and parameters, up to rounding (the
parallel atomic adds of p2g make both runs nondeterministic at the last bit); the backward
needs about (steps / k) state copies plus one segment of k steps' per-launch copies.

    python diffmpm_checkpoint.py --steps 2048 --every 64 --out out/diffmpm_checkpoint
    python diffmpm_checkpoint.py --quick

Prints the loss, the gradient w.r.t. the controller weights W, what the checkpoint kept, the
bytes of all fields and the process's peak resident memory (`ru_maxrss`: it counts field
storage, compiled code and LLVM alike), and writes them to `--out DIR` (default
`out/diffmpm_checkpoint`) as result.json, with PNG frames of a forward run under DIR/frames/
and a GIF, like the other examples.
"""
import json
import math
import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import diffmpm as dm
from _common import arch, example_parser, frames_to_gif

import fieldsim as ti

STEPS = 2048
QUICK_STEPS = 128

# the ring buffers and the kernels written here (set by setup())
commit = compute_actuation_now = final_loss = None


def setup(n_grid=dm.N_GRID, steps=STEPS):
    """Create the fields (call after ti.init) and point diffmpm's kernels at them."""
    dm.n_grid, dm.steps = int(n_grid), int(steps)
    dm.dx, dm.inv_dx = 1.0 / dm.n_grid, float(dm.n_grid)
    pos, act = dm.robot_particles(dm.n_grid)
    dm.n_particles = n_p = len(pos)
    dm.x = ti.Vector.field(2, dtype=float, name="x")
    dm.v = ti.Vector.field(2, dtype=float, name="v")
    dm.C = ti.Matrix.field(2, 2, dtype=float, name="C")
    dm.F = ti.Matrix.field(2, 2, dtype=float, name="F")
    ti.root.dense(ti.ij, (2, n_p)).place(dm.x, dm.v, dm.C, dm.F)  # slot 0: now, slot 1: next
    dm.x0 = ti.Vector.field(2, dtype=float, shape=n_p, name="x0")
    dm.actuator_id = ti.field(dtype=ti.i32, shape=n_p, name="actuator_id")
    dm.grid_v_in = ti.Vector.field(2, dtype=float, name="grid_v_in")
    dm.grid_m_in = ti.field(dtype=float, name="grid_m_in")
    dm.grid_v_out = ti.Vector.field(2, dtype=float, name="grid_v_out")
    ti.root.dense(ti.ij, (dm.n_grid, dm.n_grid)).place(dm.grid_v_in, dm.grid_m_in, dm.grid_v_out)
    dm.actuation = ti.field(dtype=float, shape=(1, dm.N_ACTUATORS), name="actuation")  # this step's
    dm.weights = ti.field(dtype=float, shape=(dm.N_ACTUATORS, dm.N_SIN), name="weights")
    dm.bias = ti.field(dtype=float, shape=dm.N_ACTUATORS, name="bias")
    dm.loss = ti.field(dtype=float, shape=(), name="loss")
    ti.root.lazy_grad()
    dm.x0.from_numpy(pos.astype(dm.x0.to_numpy().dtype))
    dm.actuator_id.from_numpy(act)
    _make_kernels(n_p)


def _make_kernels(n_p):
    global commit, compute_actuation_now, final_loss
    x, v, C, F = dm.x, dm.v, dm.C, dm.F
    actuation, weights, bias, loss = dm.actuation, dm.weights, dm.bias, dm.loss
    n_act, n_sin, omega, dt = dm.N_ACTUATORS, dm.N_SIN, dm.OMEGA, dm.DT

    @ti.kernel
    def commit_():
        for p in range(n_p):
            x[0, p] = x[1, p]
            v[0, p] = v[1, p]
            C[0, p] = C[1, p]
            F[0, p] = F[1, p]

    @ti.kernel
    def compute_actuation_now_(t: int):
        # diffmpm.compute_actuation(t), written to row 0 (p2g(0) reads actuation[0, a])
        for a in range(n_act):
            s = bias[a]
            for k in ti.static(range(n_sin)):
                s += weights[a, k] * ti.sin(omega * t * dt + 2 * math.pi / n_sin * k)
            actuation[0, a] = ti.tanh(s)

    @ti.kernel
    def final_loss_():
        for p in range(n_p):
            loss[None] += -x[0, p][0] / n_p

    commit, compute_actuation_now, final_loss = commit_, compute_actuation_now_, final_loss_


def step(t):
    """One substep: state in slot 0 at time t -> slot 0 at time t + 1."""
    compute_actuation_now(t)
    dm.clear_grid()
    dm.p2g(0)
    dm.grid_op()
    dm.g2p(0)
    commit()


def forward(every):
    dm.init_state()
    info = ti.ad.checkpoint(step, dm.steps, every=every, state=[dm.x, dm.v, dm.C, dm.F])
    final_loss()
    return info


def loss_and_grad(every):
    """One forward + backward pass; returns (loss, dloss/dW, dloss/db, CheckpointInfo)."""
    with ti.ad.Tape(loss=dm.loss):
        info = forward(every)
    return float(dm.loss[None]), dm.weights.grad.to_numpy(), dm.bias.grad.to_numpy(), info


def forward_no_tape(every):
    dm.loss[None] = 0.0
    forward(every)
    return float(dm.loss[None])


def field_bytes():
    """Bytes of every field's storage (primal and gradient twins) in the current runtime."""
    from fieldsim.lang import runtime
    return int(sum(math.prod(f.storage_shape) * np.dtype(f.dtype.np).itemsize
                   for f in runtime.get().fields if f.storage is not None))


def peak_rss_bytes():
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # Linux: KiB


def default_every(steps):
    return max(1, round(math.sqrt(steps)))


def render(out_dir, every, n_frames=20):
    """Frames of a forward run (no Tape): the ring buffer keeps no trajectory, so the state in
    slot 0 is drawn as the steps run, about `n_frames` times."""
    frame_dir = os.path.join(out_dir, "frames")
    os.makedirs(frame_dir, exist_ok=True)
    gui = ti.GUI("diffmpm_checkpoint", res=(512, 512), background_color=0xFFFFFF, show_gui=False)
    aid = dm.actuator_id.to_numpy()
    col = np.where(aid >= 0, 0xD05030, 0x404040).astype(np.uint32)
    ground = dm.BOUND / dm.n_grid
    dm.init_state()
    paths = []
    for t in range(dm.steps + 1):
        if t % every == 0 or t == dm.steps:
            gui.line((0.0, ground), (1.0, ground), radius=3, color=0x666666)
            gui.circles(dm.x.to_numpy()[0], radius=2.5, color=col)
            path = os.path.join(frame_dir, f"frame_{len(paths):04d}.png")
            gui.show(path)
            paths.append(path)
        if t < dm.steps:
            step(t)
    return paths


def main(argv=None):
    ap = example_parser(__doc__, "diffmpm_checkpoint")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--every", type=int, default=None, help="steps per checkpoint (default sqrt)")
    ap.add_argument("--n-grid", type=int, default=dm.N_GRID)
    ap.add_argument("--fp", default="f32", choices=["f32", "f64"])
    args = ap.parse_args(argv)
    steps = args.steps if args.steps is not None else (QUICK_STEPS if args.quick else STEPS)
    every = args.every if args.every is not None else default_every(steps)

    ti.init(arch=arch(ti, args.arch), default_fp=getattr(ti, args.fp), random_seed=args.seed)
    setup(args.n_grid, steps)
    dm.set_params(*dm.initial_params(args.seed))
    t0 = time.perf_counter()
    loss, gW, gb, info = loss_and_grad(every)
    seconds = time.perf_counter() - t0
    result = {
        "steps": steps, "every": every, "n_particles": dm.n_particles, "n_grid": dm.n_grid,
        "fp": args.fp, "loss": loss, "grad_W": gW.tolist(), "grad_b": gb.tolist(),
        "n_snapshots": info.n_snapshots, "snapshot_bytes": info.snapshot_bytes,
        "peak_backward_bytes": info.peak_backward_bytes, "field_bytes": field_bytes(),
        "peak_rss_bytes": peak_rss_bytes(), "seconds": seconds,
    }
    print(f"diffmpm_checkpoint: {steps} steps, every {every}, {dm.n_particles} particles, {args.fp}")
    print(f"  loss {loss:.6f}   ({seconds:.2f} s for forward + backward)")
    print("  dloss/dW =\n" + np.array2string(gW, precision=4))
    print(f"  kept {info.n_snapshots} state copies ({info.snapshot_bytes / 2**20:.2f} MiB); backward "
          f"held at most {info.peak_backward_bytes / 2**20:.2f} MiB")
    print(f"  fields {result['field_bytes'] / 2**20:.2f} MiB; peak RSS "
          f"{result['peak_rss_bytes'] / 2**20:.1f} MiB")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "result.json"), "w") as fh:
        json.dump(result, fh, indent=1)
    frames = render(args.out, max(1, steps // (10 if args.quick else 40)))
    result["frames"] = frames
    result["gif"] = frames_to_gif(frames, os.path.join(args.out, "diffmpm_checkpoint.gif"), fps=15)
    print(f"wrote {result['gif']}, {os.path.join(args.out, 'result.json')} and {len(frames)} frames")
    return result


if __name__ == "__main__":
    main()
