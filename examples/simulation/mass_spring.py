"""mass_spring: a spring-mass robot that learns to move right.

Nodes joined by springs; the leg springs' rest lengths are modulated by a
small neural controller (inputs: a bank of sinusoids and the node positions
relative to the centre of mass; one tanh hidden layer; tanh outputs).
Sticky ground contact.  All state is time-indexed (x[t, i], v[t, i], ...)
so one ti.ad.Tape over the whole episode gives the gradient of
loss = -(x-coordinate of the centre of mass at the last step)
with respect to the controller weights; gradient descent with step clipping
(the best controller seen is kept).

    python mass_spring.py --iters 40 --out out/mass_spring
    python mass_spring.py --quick
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
DT = 0.004
STEPS = 600
ITERS = 40
GRAVITY = 4.8
STIFFNESS = 1.0e4
DAMPING = 10.0         # velocity damping rate (1/s)
SPRING_ACT = 0.4       # an output of +-1 changes a leg spring's rest length by +-40 %
GROUND = 0.1
N_SIN = 6              # sinusoids fed to the controller
OMEGA = 10.0           # rad / s
N_HIDDEN = 16
POS_SCALE = 0.5        # node offsets from the centre (~0.1) enter weakly: mostly open loop
LEARNING_RATE = 10.0
GRAD_CLIP = 0.5        # at most this step length in parameter space


def robot(spacing=0.05, origin=(0.1, GROUND)):
    """A 7 x 2 lattice body standing on two 2-node feet.
    Returns node positions, springs (a, b) between lattice neighbours and
    diagonals, and each spring's actuation gain (legs actuated, body passive)."""
    cells = [(i, j) for i in range(7) for j in (1, 2)] + [(0, 0), (1, 0), (5, 0), (6, 0)]
    pos = np.array([[origin[0] + i * spacing, origin[1] + j * spacing] for i, j in cells])
    springs, gains = [], []
    for a in range(len(cells)):
        for b in range(a + 1, len(cells)):
            if np.linalg.norm(pos[a] - pos[b]) < spacing * 1.5:
                springs.append((a, b))
                gains.append(SPRING_ACT if min(cells[a][1], cells[b][1]) == 0 else 0.0)
    return pos, np.array(springs, dtype=np.int32), np.array(gains)


NODES0, SPRINGS, GAINS = robot()
N_NODES = len(NODES0)
N_SPRINGS = len(SPRINGS)
N_INPUT = N_SIN + 2 * N_NODES

# fields, created by setup() after ti.init
steps = STEPS
x = v = v_inc = center = hidden = act = None
x0 = spring_a = spring_b = rest = gain = None
w1 = b1 = w2 = b2 = loss = None


def setup(steps_=STEPS):
    """Create the fields (call after ti.init)."""
    global steps, x, v, v_inc, center, hidden, act, x0, spring_a, spring_b, rest, gain
    global w1, b1, w2, b2, loss
    steps = int(steps_)
    x = ti.Vector.field(2, dtype=float, name="x")
    v = ti.Vector.field(2, dtype=float, name="v")
    v_inc = ti.Vector.field(2, dtype=float, name="v_inc")
    ti.root.dense(ti.ij, (steps + 1, N_NODES)).place(x, v, v_inc)
    center = ti.Vector.field(2, dtype=float, shape=steps + 1, name="center")
    hidden = ti.field(dtype=float, shape=(steps + 1, N_HIDDEN), name="hidden")
    act = ti.field(dtype=float, shape=(steps + 1, N_SPRINGS), name="act")
    x0 = ti.Vector.field(2, dtype=float, shape=N_NODES, name="x0")
    spring_a = ti.field(dtype=ti.i32, shape=N_SPRINGS, name="spring_a")
    spring_b = ti.field(dtype=ti.i32, shape=N_SPRINGS, name="spring_b")
    rest = ti.field(dtype=float, shape=N_SPRINGS, name="rest")
    gain = ti.field(dtype=float, shape=N_SPRINGS, name="gain")
    w1 = ti.field(dtype=float, shape=(N_HIDDEN, N_INPUT), name="w1")
    b1 = ti.field(dtype=float, shape=N_HIDDEN, name="b1")
    w2 = ti.field(dtype=float, shape=(N_SPRINGS, N_HIDDEN), name="w2")
    b2 = ti.field(dtype=float, shape=N_SPRINGS, name="b2")
    loss = ti.field(dtype=float, shape=(), name="loss")
    ti.root.lazy_grad()

    fdt = x0.to_numpy().dtype
    x0.from_numpy(NODES0.astype(fdt))
    spring_a.from_numpy(SPRINGS[:, 0].copy())
    spring_b.from_numpy(SPRINGS[:, 1].copy())
    gain.from_numpy(GAINS.astype(fdt))
    rest.from_numpy(np.linalg.norm(NODES0[SPRINGS[:, 0]] - NODES0[SPRINGS[:, 1]], axis=1).astype(fdt))


@ti.kernel
def init_state():
    for i in range(N_NODES):
        x[0, i] = x0[i]
        v[0, i] = [0.0, 0.0]


@ti.kernel
def clear_accumulators():
    for t, i in v_inc:
        v_inc[t, i] = [0.0, 0.0]
    for t in center:
        center[t] = [0.0, 0.0]


@ti.kernel
def compute_center(t: int):
    for i in range(N_NODES):
        center[t] += x[t, i] / N_NODES


@ti.kernel
def controller_hidden(t: int):
    for h in range(N_HIDDEN):
        a = b1[h]
        for k in ti.static(range(N_SIN)):
            a += w1[h, k] * ti.sin(OMEGA * t * DT + 2 * math.pi / N_SIN * k)
        for j in ti.static(range(N_NODES)):
            offset = (x[t, j] - center[t]) * POS_SCALE
            a += w1[h, N_SIN + 2 * j] * offset[0] + w1[h, N_SIN + 2 * j + 1] * offset[1]
        hidden[t, h] = ti.tanh(a)


@ti.kernel
def controller_output(t: int):
    for s in range(N_SPRINGS):
        a = b2[s]
        for h in ti.static(range(N_HIDDEN)):
            a += w2[s, h] * hidden[t, h]
        act[t, s] = ti.tanh(a)


@ti.kernel
def spring_forces(t: int):
    for s in range(N_SPRINGS):
        ia = spring_a[s]
        ib = spring_b[s]
        d = x[t, ia] - x[t, ib]
        length = d.norm() + 1e-4
        target = rest[s] * (1.0 + gain[s] * act[t, s])
        impulse = DT * STIFFNESS * (length - target) / length * d
        v_inc[t, ia] += -impulse
        v_inc[t, ib] += impulse


@ti.kernel
def advance(t: int):
    for i in range(N_NODES):
        vel = v[t - 1, i] * ti.exp(-DT * DAMPING) + v_inc[t - 1, i] + ti.Vector([0.0, -DT * GRAVITY])
        # sticky ground with the time of impact resolved inside the step, so
        # the landing position is continuous in the parameters
        old_x = x[t - 1, i]
        falling = vel[1] < -1e-4
        below = old_x[1] + DT * vel[1] < GROUND
        toi = 0.0
        new_v = vel
        if falling and below:
            toi = ti.max((GROUND - old_x[1]) / vel[1], 0.0)
            new_v = ti.Vector([0.0, 0.0])
        v[t, i] = new_v
        x[t, i] = old_x + toi * vel + (DT - toi) * new_v


@ti.kernel
def compute_loss():
    loss[None] = -center[steps][0]


def forward():
    init_state()
    for t in range(1, steps + 1):
        compute_center(t - 1)
        controller_hidden(t - 1)
        controller_output(t - 1)
        spring_forces(t - 1)
        advance(t)
    compute_center(steps)
    compute_loss()


PARAMS = ("w1", "b1", "w2", "b2")


def get_params():
    return [globals()[n].to_numpy().astype(np.float64) for n in PARAMS]


def set_params(ps):
    for n, p in zip(PARAMS, ps):
        f = globals()[n]
        f.from_numpy(np.asarray(p, dtype=f.to_numpy().dtype))


def get_grads():
    return [globals()[n].grad.to_numpy().astype(np.float64) for n in PARAMS]


def initial_params(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(0, math.sqrt(1.0 / N_INPUT), (N_HIDDEN, N_INPUT)),
            np.zeros(N_HIDDEN),
            rng.normal(0, math.sqrt(1.0 / N_HIDDEN), (N_SPRINGS, N_HIDDEN)),
            np.zeros(N_SPRINGS)]


def loss_and_grad():
    clear_accumulators()   # the += accumulators start from zero (outside the Tape)
    with ti.ad.Tape(loss=loss):
        forward()
    return float(loss[None]), get_grads()


def forward_no_tape():
    clear_accumulators()
    forward()
    return float(loss[None])


def train(iters, lr=LEARNING_RATE, seed=0, progress=True):
    ps = initial_params(seed)
    set_params(ps)
    losses = []
    best = (math.inf, ps)
    for _ in tqdm(range(iters), desc="mass_spring", disable=not progress):
        l, gs = loss_and_grad()
        losses.append(l)
        if l < best[0]:
            best = (l, ps)
        # contact makes the landscape rough: clip the step, keep the best controller
        norm = math.sqrt(sum(float((g ** 2).sum()) for g in gs))
        scale = lr * min(1.0, GRAD_CLIP / (lr * norm + 1e-12))
        ps = [p - scale * g for p, g in zip(ps, gs)]
        set_params(ps)
    final = forward_no_tape()
    if final < best[0]:
        best = (final, ps)
    losses.append(final)
    set_params(best[1])
    return losses, best[1]


def fd_check(param_index=0, eps=1e-4, steps_=100, seed=0):
    """Tape gradient vs float64 central finite difference for one controller
    parameter (numbered through w1, b1, w2, b2 flattened).  Returns (ad, fd)."""
    ti.init(arch=ti.cpu, default_fp=ti.f64)
    setup(steps_)
    ps = initial_params(seed)
    sizes = [p.size for p in ps]
    theta = np.concatenate([p.ravel() for p in ps])

    def put(th):
        out, k = [], 0
        for p, sz in zip(ps, sizes):
            out.append(th[k:k + sz].reshape(p.shape))
            k += sz
        set_params(out)

    put(theta)
    _, gs = loss_and_grad()
    ad = float(np.concatenate([g.ravel() for g in gs])[param_index])
    vals = []
    for sgn in (1, -1):
        th = theta.copy()
        th[param_index] += sgn * eps
        put(th)
        vals.append(forward_no_tape())
    return ad, (vals[0] - vals[1]) / (2 * eps)


def render(out_dir, every):
    frame_dir = os.path.join(out_dir, "frames")
    os.makedirs(frame_dir, exist_ok=True)
    gui = ti.GUI("mass_spring", res=(640, 320), background_color=0xFFFFFF, show_gui=False)
    xs = x.to_numpy()
    acts = act.to_numpy()
    # view: x in [0, 2], y in [0, 1] -> GUI coords
    paths = []
    for t in range(0, steps + 1, every):
        p = xs[t] * np.array([0.5, 1.0])
        a = acts[min(t, steps - 1)]
        r = (0.5 + 0.5 * a) * 255
        col = (r.astype(np.uint32) << 16) + (np.uint32(60) << 8) + (255 - r).astype(np.uint32)
        col[GAINS == 0] = 0x999999          # passive springs
        gui.line((0.0, GROUND), (1.0, GROUND), radius=2, color=0x444444)
        gui.lines(p[SPRINGS[:, 0]], p[SPRINGS[:, 1]], radius=2, color=col)
        gui.circles(p, radius=4, color=0x222222)
        path = os.path.join(frame_dir, f"frame_{len(paths):04d}.png")
        gui.show(path)
        paths.append(path)
    return paths



def main(argv=None):
    ap = example_parser(__doc__, "mass_spring", lr=LEARNING_RATE)
    args = ap.parse_args(argv)
    iters = args.iters if args.iters is not None else (10 if args.quick else ITERS)
    n_steps = args.steps if args.steps is not None else (200 if args.quick else STEPS)

    ti.init(arch=arch(ti, args.arch), random_seed=args.seed)
    setup(n_steps)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    losses, ps = train(iters, args.lr, args.seed)
    elapsed = time.time() - t0
    final_loss = forward_no_tape()       # with the best controller found
    start_x = float(NODES0[:, 0].mean())

    curve = plot_loss(losses, args.out, "loss = -centre x at the last step", "mass_spring")
    frames = render(args.out, max(1, n_steps // (10 if args.quick else 50)))
    gif = frames_to_gif(frames, os.path.join(args.out, "mass_spring.gif"), fps=20)
    return {
        "losses": losses,
        "initial_loss": losses[0],
        "final_loss": final_loss,
        "initial_displacement": -losses[0] - start_x,
        "final_displacement": -final_loss - start_x,
        "params": ps,
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
