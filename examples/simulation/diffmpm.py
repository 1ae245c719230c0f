"""diffmpm: teach a soft MLS-MPM robot to walk right, by differentiating the simulator.

The robot is a block of elastic material (fixed-corotated) with a few actuated
regions. Each actuator pulls along the vertical fibre direction with strength
tanh(sum_k W[a, k] sin(omega t + 2 pi k / K) + b[a]).  The whole trajectory is
kept in time-indexed particle fields x[t, p], v[t, p], C[t, p], F[t, p]; the
grid is cleared each substep and rebuilt in the backward pass (checkpointing
through ti.ad.grad_replaced / ti.ad.grad_for).  The loss is minus the mean
x position of the robot at the last step; plain gradient descent on (W, b).

    python diffmpm.py --iters 30 --out out/diffmpm
    python diffmpm.py --quick
"""
import math
import os
import sys
import time

import numpy as np
from tqdm import tqdm

import fieldsim as ti

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import arch, example_parser, frames_to_gif, plot_loss

# ---------------------------------------------------------------- parameters
N_GRID = 64
DT = 1e-3
STEPS = 512            # substeps simulated (and differentiated) per iteration
ITERS = 30
P_VOL = 1.0
P_MASS = 1.0
YOUNG = 40.0
POISSON = 0.25
MU = YOUNG / (2 * (1 + POISSON))
LA = YOUNG * POISSON / ((1 + POISSON) * (1 - 2 * POISSON))
GRAVITY = 4.0
BOUND = 3
FRICTION = 0.5
ACT_STRENGTH = 6.0
N_SIN = 4              # sinusoids in the controller bank
OMEGA = 20.0           # rad / s
LEARNING_RATE = 300.0

# robot: rectangles (x0, y0, width, height, actuator id; -1 = passive)
ROBOT = [
    (0.05, 0.10, 0.20, 0.05, -1),   # body
    (0.05, 0.05, 0.04, 0.05, 0),    # rear leg
    (0.21, 0.05, 0.04, 0.05, 1),    # front leg
    (0.05, 0.15, 0.10, 0.03, 2),    # back muscle, rear half
    (0.15, 0.15, 0.10, 0.03, 3),    # back muscle, front half
]
N_ACTUATORS = 4
# DiffTaichi places 2 particles per dx along each axis (320 particles at 64^2 here); the
# benchmarks' "full size" (issue #13: 6400 particles on the 64^2 grid, 512 steps) is the same
# robot sampled 8.9 particles per dx (6418 particles).
PARTICLES_PER_DX = 2.0
FULL_SIZE = dict(n_grid_=64, steps_=512, particles_per_dx=8.9)

# sizes and fields, set by setup() after ti.init
n_grid = N_GRID
dx = 1.0 / n_grid
inv_dx = float(n_grid)
steps = STEPS
n_particles = 0
x = v = C = F = None
x0 = actuator_id = None
grid_v_in = grid_m_in = grid_v_out = None
actuation = weights = bias = loss = None


def robot_particles(n_grid_, rects=ROBOT, particles_per_dx=PARTICLES_PER_DX):
    """Particles on a lattice of spacing dx/particles_per_dx filling the rectangles."""
    h = 1.0 / (n_grid_ * particles_per_dx)
    pos, act = [], []
    for (x0_, y0_, w_, h_, a) in rects:
        nx, ny = max(1, round(w_ / h)), max(1, round(h_ / h))
        for i in range(nx):
            for j in range(ny):
                pos.append((x0_ + (i + 0.5) * h, y0_ + (j + 0.5) * h))
                act.append(a)
    return np.array(pos, dtype=np.float64), np.array(act, dtype=np.int32)


def setup(n_grid_=N_GRID, steps_=STEPS, particles_per_dx=PARTICLES_PER_DX):
    """Create the fields (call after ti.init); `setup(**FULL_SIZE)` is the benchmarks' full size."""
    global n_grid, dx, inv_dx, steps, n_particles
    global x, v, C, F, x0, actuator_id, grid_v_in, grid_m_in, grid_v_out
    global actuation, weights, bias, loss
    n_grid, steps = int(n_grid_), int(steps_)
    dx = 1.0 / n_grid
    inv_dx = float(n_grid)
    pos, act = robot_particles(n_grid, particles_per_dx=particles_per_dx)
    n_particles = len(pos)

    x = ti.Vector.field(2, dtype=float, name="x")
    v = ti.Vector.field(2, dtype=float, name="v")
    C = ti.Matrix.field(2, 2, dtype=float, name="C")
    F = ti.Matrix.field(2, 2, dtype=float, name="F")
    ti.root.dense(ti.ij, (steps + 1, n_particles)).place(x, v, C, F)
    x0 = ti.Vector.field(2, dtype=float, shape=n_particles, name="x0")
    actuator_id = ti.field(dtype=ti.i32, shape=n_particles, name="actuator_id")
    grid_v_in = ti.Vector.field(2, dtype=float, name="grid_v_in")
    grid_m_in = ti.field(dtype=float, name="grid_m_in")
    grid_v_out = ti.Vector.field(2, dtype=float, name="grid_v_out")
    ti.root.dense(ti.ij, (n_grid, n_grid)).place(grid_v_in, grid_m_in, grid_v_out)
    actuation = ti.field(dtype=float, shape=(steps + 1, N_ACTUATORS), name="actuation")
    weights = ti.field(dtype=float, shape=(N_ACTUATORS, N_SIN), name="weights")
    bias = ti.field(dtype=float, shape=N_ACTUATORS, name="bias")
    loss = ti.field(dtype=float, shape=(), name="loss")
    ti.root.lazy_grad()

    x0.from_numpy(pos.astype(x0.to_numpy().dtype))
    actuator_id.from_numpy(act)


@ti.kernel
def init_state():
    for p in range(n_particles):
        x[0, p] = x0[p]
        v[0, p] = [0.0, 0.0]
        C[0, p] = ti.Matrix([[0.0, 0.0], [0.0, 0.0]])
        F[0, p] = ti.Matrix([[1.0, 0.0], [0.0, 1.0]])


@ti.kernel
def clear_grid():
    for i, j in grid_m_in:
        grid_v_in[i, j] = [0.0, 0.0]
        grid_m_in[i, j] = 0.0
        grid_v_in.grad[i, j] = [0.0, 0.0]
        grid_m_in.grad[i, j] = 0.0
        grid_v_out.grad[i, j] = [0.0, 0.0]


@ti.kernel
def compute_actuation(t: int):
    for a in range(N_ACTUATORS):
        s = bias[a]
        for k in ti.static(range(N_SIN)):
            s += weights[a, k] * ti.sin(OMEGA * t * DT + 2 * math.pi / N_SIN * k)
        actuation[t, a] = ti.tanh(s)


@ti.kernel
def p2g(f: int):
    for p in range(n_particles):
        Xp = x[f, p] * inv_dx
        base = ti.cast(Xp - 0.5, int)
        fx = Xp - ti.cast(base, float)
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
        new_F = (ti.Matrix.identity(float, 2) + DT * C[f, p]) @ F[f, p]
        F[f + 1, p] = new_F
        J = new_F.determinant()
        R, _S = ti.polar_decompose(new_F)
        act = 0.0
        aid = actuator_id[p]
        if aid >= 0:
            act = actuation[f, aid] * ACT_STRENGTH
        # Kirchhoff stress: fixed corotated elasticity + active fibre stress along y
        A = ti.Matrix([[0.0, 0.0], [0.0, act]])
        tau = (2.0 * MU * (new_F - R) @ new_F.transpose()
               + ti.Matrix.identity(float, 2) * (LA * (J - 1.0) * J)
               + new_F @ A @ new_F.transpose())
        stress = -(DT * P_VOL * 4.0 * inv_dx * inv_dx) * tau
        affine = stress + P_MASS * C[f, p]
        for i, j in ti.static(ti.ndrange(3, 3)):
            offset = ti.Vector([i, j])
            dpos = (ti.cast(offset, float) - fx) * dx
            weight = w[i][0] * w[j][1]
            grid_v_in[base + offset] += weight * (P_MASS * v[f, p] + affine @ dpos)
            grid_m_in[base + offset] += weight * P_MASS


@ti.kernel
def grid_op():
    for i, j in grid_m_in:
        vel = grid_v_in[i, j] / (grid_m_in[i, j] + 1e-10)
        vel[1] -= DT * GRAVITY
        if i < BOUND and vel[0] < 0:
            vel[0] = 0.0
        if i > n_grid - BOUND and vel[0] > 0:
            vel[0] = 0.0
        if j > n_grid - BOUND and vel[1] > 0:
            vel[1] = 0.0
        if j < BOUND and vel[1] < 0:
            # ground: remove the normal velocity, Coulomb friction on the tangential one
            vt = vel[0]
            lit = ti.abs(vt) + 1e-10
            scale = ti.max(lit + FRICTION * vel[1], 0.0) / lit
            vel = ti.Vector([vt * scale, 0.0])
        grid_v_out[i, j] = vel


@ti.kernel
def g2p(f: int):
    for p in range(n_particles):
        Xp = x[f, p] * inv_dx
        base = ti.cast(Xp - 0.5, int)
        fx = Xp - ti.cast(base, float)
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
        new_v = ti.Vector([0.0, 0.0])
        new_C = ti.Matrix([[0.0, 0.0], [0.0, 0.0]])
        for i, j in ti.static(ti.ndrange(3, 3)):
            offset = ti.Vector([i, j])
            dpos = ti.cast(offset, float) - fx
            g_v = grid_v_out[base + offset]
            weight = w[i][0] * w[j][1]
            new_v += weight * g_v
            new_C += 4.0 * inv_dx * weight * g_v.outer_product(dpos)
        v[f + 1, p] = new_v
        x[f + 1, p] = x[f, p] + DT * new_v
        C[f + 1, p] = new_C


@ti.kernel
def compute_loss():
    for p in range(n_particles):
        loss[None] += -x[steps, p][0] / n_particles


@ti.ad.grad_replaced
def advance(s):
    clear_grid()
    p2g(s)
    grid_op()
    g2p(s)


@ti.ad.grad_for(advance)
def advance_grad(s):
    # recompute this substep's grid (checkpointing), then walk back through it
    clear_grid()
    p2g(s)
    grid_op()
    g2p.grad(s)
    grid_op.grad()
    p2g.grad(s)


def forward():
    init_state()
    for s in range(steps):
        compute_actuation(s)
        advance(s)
    compute_loss()


def loss_and_grad():
    """One forward + backward pass; returns (loss, dloss/dW, dloss/db)."""
    with ti.ad.Tape(loss=loss):
        forward()
    return float(loss[None]), weights.grad.to_numpy(), bias.grad.to_numpy()


def initial_params(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, 0.3, (N_ACTUATORS, N_SIN)), np.zeros(N_ACTUATORS)


def set_params(W, b):
    dt_ = weights.to_numpy().dtype
    weights.from_numpy(np.asarray(W, dtype=dt_))
    bias.from_numpy(np.asarray(b, dtype=dt_))


def train(iters, lr=LEARNING_RATE, seed=0, progress=True):
    W, b = initial_params(seed)
    set_params(W, b)
    losses = []
    for _ in tqdm(range(iters), desc="diffmpm", disable=not progress):
        l, gW, gb = loss_and_grad()
        losses.append(l)
        W = W - lr * gW
        b = b - lr * gb
        set_params(W, b)
    return losses, W, b


def fd_check(param_index=0, eps=1e-4, n_grid_=N_GRID, steps_=64, seed=0):
    """Tape gradient vs float64 central finite difference for one controller parameter.

    Parameters are numbered W.flat then b.  Returns (ad_grad, fd_grad)."""
    ti.init(arch=ti.cpu, default_fp=ti.f64)
    setup(n_grid_, steps_)
    W, b = initial_params(seed)
    theta = np.concatenate([W.ravel(), b])

    def put(th):
        set_params(th[:W.size].reshape(W.shape), th[W.size:])

    put(theta)
    _, gW, gb = loss_and_grad()
    ad = float(np.concatenate([gW.ravel(), gb])[param_index])
    vals = []
    for sgn in (1, -1):
        th = theta.copy()
        th[param_index] += sgn * eps
        put(th)
        forward_no_tape()
        vals.append(float(loss[None]))
    return ad, (vals[0] - vals[1]) / (2 * eps)


def forward_no_tape():
    loss[None] = 0.0
    forward()
    return float(loss[None])


def render(out_dir, every):
    """Frames of the stored trajectory x[t] (after a forward pass)."""
    frame_dir = os.path.join(out_dir, "frames")
    os.makedirs(frame_dir, exist_ok=True)
    gui = ti.GUI("diffmpm", res=(512, 512), background_color=0xFFFFFF, show_gui=False)
    xs = x.to_numpy()
    acts = actuation.to_numpy()
    aid = actuator_id.to_numpy()
    ground = BOUND / n_grid
    paths = []
    for t in range(0, steps + 1, every):
        a = np.where(aid >= 0, acts[min(t, steps - 1)][np.maximum(aid, 0)], 0.0)
        r = (0.5 + 0.5 * np.clip(a, -1, 1) * (aid >= 0)) * 255
        bcol = (0.5 - 0.5 * np.clip(a, -1, 1) * (aid >= 0)) * 255
        col = (r.astype(np.uint32) << 16) + (np.full_like(r, 80).astype(np.uint32) << 8) + bcol.astype(np.uint32)
        col[aid < 0] = 0x404040
        gui.line((0.0, ground), (1.0, ground), radius=3, color=0x666666)
        gui.circles(xs[t], radius=2.5, color=col)
        path = os.path.join(frame_dir, f"frame_{len(paths):04d}.png")
        gui.show(path)
        paths.append(path)
    return paths



def main(argv=None):
    ap = example_parser(__doc__, "diffmpm", lr=LEARNING_RATE)
    args = ap.parse_args(argv)
    iters = args.iters if args.iters is not None else (6 if args.quick else ITERS)
    n_steps = args.steps if args.steps is not None else (256 if args.quick else STEPS)

    ti.init(arch=arch(ti, args.arch), random_seed=args.seed)
    setup(N_GRID, n_steps)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    losses, W, b = train(iters, args.lr, args.seed)
    elapsed = time.time() - t0

    final_loss = forward_no_tape()
    start_x = float(x0.to_numpy()[:, 0].mean())
    curve = plot_loss(losses + [final_loss], args.out, "loss = -mean x at the last step", "diffmpm")
    frames = render(args.out, max(1, n_steps // (10 if args.quick else 40)))
    gif = frames_to_gif(frames, os.path.join(args.out, "diffmpm.gif"), fps=15)
    return {
        "losses": losses + [final_loss],
        "initial_loss": losses[0],
        "final_loss": final_loss,
        "initial_displacement": -losses[0] - start_x,
        "final_displacement": -final_loss - start_x,
        "weights": W,
        "bias": b,
        "loss_curve": curve,
        "frames": frames,
        "gif": gif,
        "seconds": elapsed,
    }


if __name__ == "__main__":
    r = main()
    print(f"loss {r['initial_loss']:.4f} -> {r['final_loss']:.4f}, displacement to the right "
          f"{r['initial_displacement']:+.4f} -> {r['final_displacement']:+.4f} "
          f"({r['seconds']:.1f} s of training)")
    print(f"wrote {r['gif']}, {r['loss_curve']} and {len(r['frames'])} frames")
