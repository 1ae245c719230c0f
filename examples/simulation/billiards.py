"""billiards: a combination shot: aim the cue ball so that the ball it strikes
knocks the target ball onto a goal.

Balls roll with a little friction and collide through stiff penalty springs
(a smooth, differentiable contact).  State is time-indexed (x[t, i], v[t, i]),
the cue ball's initial velocity is optimised (gradients w.r.t. its initial
position are computed too), loss = |x[T, target] - goal|^2.  Gradient descent
through ti.ad.Tape.

    python billiards.py --iters 60 --out out/billiards
    python billiards.py --quick
"""
import os
import sys
import time

import numpy as np
from tqdm import tqdm

import fieldsim as ti

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import arch, example_parser, frames_to_gif, plot_loss

# ---------------------------------------------------------------- parameters
RADIUS = 0.03
DT = 0.002
STEPS = 500
ITERS = 60
CONTACT_K = 3.0e5      # penalty stiffness (unit masses)
FRICTION = 1.5         # velocity decay rate (1/s)
GOAL = (0.80, 0.70)
CUE_X0 = (0.15, 0.50)  # initial guesses for the parameters
CUE_V0 = (1.8, 0.0)
LEARNING_RATE = 0.01   # for the cue velocity's y component; x gets SPEED_LR_SCALE times it
SPEED_LR_SCALE = 100.0 # the result is ~10x less sensitive to the speed than to the aim
MAX_STEP = 0.05        # largest change of the cue velocity per iteration

# sizes and fields, set by setup() after ti.init
steps = STEPS
n_balls = 8
target = 2
x = v = impulse = rack = None
init_x = init_v = goal = loss = None


def ball_layout(extra=True):
    """Object balls: a 'carom' ball the cue should strike, the target ball behind
    it, and (unless extra=False) a few bystanders to stay clear of."""
    pos = [(0.45, 0.50),               # ball 1: struck by the cue
           (0.66, 0.53)]               # ball 2: the target, struck by ball 1 (a half-ball hit)
    if extra:
        pos += [(0.30, 0.22), (0.55, 0.20), (0.80, 0.25), (0.35, 0.80), (0.60, 0.86)]
    return np.array(pos)


def setup(extra=True, steps_=STEPS):
    """Create the fields (call after ti.init)."""
    global steps, n_balls, x, v, impulse, rack, init_x, init_v, goal, loss
    steps = int(steps_)
    layout = ball_layout(extra)
    n_balls = 1 + len(layout)
    x = ti.Vector.field(2, dtype=float, shape=(steps + 1, n_balls), needs_grad=True, name="x")
    v = ti.Vector.field(2, dtype=float, shape=(steps + 1, n_balls), needs_grad=True, name="v")
    impulse = ti.Vector.field(2, dtype=float, shape=(steps + 1, n_balls), needs_grad=True, name="impulse")
    rack = ti.Vector.field(2, dtype=float, shape=n_balls, name="rack")
    init_x = ti.Vector.field(2, dtype=float, shape=(), needs_grad=True, name="init_x")
    init_v = ti.Vector.field(2, dtype=float, shape=(), needs_grad=True, name="init_v")
    goal = ti.Vector.field(2, dtype=float, shape=(), name="goal")
    loss = ti.field(dtype=float, shape=(), needs_grad=True, name="loss")
    pos = np.zeros((n_balls, 2))
    pos[1:] = layout
    rack.from_numpy(pos.astype(rack.to_numpy().dtype))
    goal[None] = GOAL


@ti.kernel
def init_state():
    for i in range(n_balls):
        if i == 0:
            x[0, i] = init_x[None]
            v[0, i] = init_v[None]
        else:
            x[0, i] = rack[i]
            v[0, i] = [0.0, 0.0]


@ti.kernel
def clear_impulse():
    for t, i in impulse:
        impulse[t, i] = [0.0, 0.0]


@ti.kernel
def collide(t: int):
    for i, j in ti.ndrange(n_balls, n_balls):
        if i != j:
            d = x[t, i] - x[t, j]
            dist = d.norm()
            if dist < 2 * RADIUS:
                # Hertz-like penalty (overlap^1.5: smooth onset) pushing i away from j
                overlap = 2 * RADIUS - dist
                impulse[t, i] += DT * CONTACT_K * overlap * ti.sqrt(overlap) / dist * d


@ti.kernel
def advance(t: int):
    for i in range(n_balls):
        new_v = v[t - 1, i] * ti.exp(-DT * FRICTION) + impulse[t - 1, i]
        v[t, i] = new_v
        x[t, i] = x[t - 1, i] + DT * new_v


@ti.kernel
def compute_loss():
    loss[None] = (x[steps, target] - goal[None]).norm_sqr()


def forward():
    init_state()
    for t in range(1, steps + 1):
        collide(t - 1)
        advance(t)
    compute_loss()


def get_params():
    return np.concatenate([init_v.to_numpy().ravel(), init_x.to_numpy().ravel()]).astype(np.float64)


def set_params(p):
    init_v[None] = [float(p[0]), float(p[1])]
    init_x[None] = [float(p[2]), float(p[3])]


def loss_and_grad():
    clear_impulse()        # accumulator starts from zero (outside the Tape)
    with ti.ad.Tape(loss=loss):
        forward()
    g = np.concatenate([init_v.grad.to_numpy().ravel(), init_x.grad.to_numpy().ravel()])
    return float(loss[None]), g.astype(np.float64)


def forward_no_tape():
    clear_impulse()
    forward()
    return float(loss[None])


def train(iters, lr=LEARNING_RATE, progress=True):
    p = np.array(CUE_V0 + CUE_X0, dtype=np.float64)
    set_params(p)
    losses = []
    for _ in tqdm(range(iters), desc="billiards", disable=not progress):
        l, g = loss_and_grad()
        losses.append(l)
        # only the cue velocity is optimised (the cut angle is very sensitive to
        # the cue position), with a larger step for the speed than for the aim;
        # the step is clipped for safety near grazing contacts
        step = lr * np.array([SPEED_LR_SCALE, 1.0]) * g[:2]
        step *= min(1.0, MAX_STEP / (np.linalg.norm(step) + 1e-12))
        p[:2] -= step
        set_params(p)
    losses.append(forward_no_tape())
    return losses, p


def fd_check(param_index=0, eps=1e-6, extra=False, steps_=300):
    """Tape gradient vs float64 central finite difference for one parameter
    (0, 1: cue velocity; 2, 3: cue position).  Returns (ad, fd).

    eps defaults to 1e-6 (not 1e-4): the stiff contact gives the loss a large
    curvature (shifting the cue moves the contact onset across time steps), so
    the O(eps^2) error of a central difference is ~1e-2 relative at eps=1e-4 and
    ~1e-6 at eps=1e-6 in float64."""
    ti.init(arch=ti.cpu, default_fp=ti.f64)
    setup(extra, steps_)
    p = np.array(CUE_V0 + CUE_X0, dtype=np.float64)
    set_params(p)
    _, g = loss_and_grad()
    vals = []
    for sgn in (1, -1):
        q = p.copy()
        q[param_index] += sgn * eps
        set_params(q)
        vals.append(forward_no_tape())
    return float(g[param_index]), (vals[0] - vals[1]) / (2 * eps)


def render(out_dir, every, res=512):
    frame_dir = os.path.join(out_dir, "frames")
    os.makedirs(frame_dir, exist_ok=True)
    gui = ti.GUI("billiards", res=(res, res), background_color=0x3C733F, show_gui=False)
    xs = x.to_numpy()
    colors = np.full(n_balls, 0xF2D16B, dtype=np.uint32)
    colors[0] = 0xFFFFFF
    colors[target] = 0xD0312D
    paths = []
    for t in range(0, steps + 1, every):
        gui.circle(GOAL, radius=RADIUS * res * 1.3, color=0x1D3F1F)
        gui.circles(xs[t], radius=RADIUS * res, color=colors)
        path = os.path.join(frame_dir, f"frame_{len(paths):04d}.png")
        gui.show(path)
        paths.append(path)
    return paths



def main(argv=None):
    ap = example_parser(__doc__, "billiards", lr=LEARNING_RATE)
    args = ap.parse_args(argv)
    iters = args.iters if args.iters is not None else (15 if args.quick else ITERS)
    n_steps = args.steps if args.steps is not None else (300 if args.quick else STEPS)

    ti.init(arch=arch(ti, args.arch), random_seed=args.seed)
    setup(not args.quick, n_steps)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    losses, p = train(iters, args.lr)
    elapsed = time.time() - t0

    curve = plot_loss(losses, args.out, "|x_target(T) - goal|^2", "billiards", log=True)
    frames = render(args.out, max(1, n_steps // (10 if args.quick else 60)))
    gif = frames_to_gif(frames, os.path.join(args.out, "billiards.gif"), fps=20)
    return {
        "losses": losses,
        "initial_loss": losses[0],
        "final_loss": losses[-1],
        "cue_velocity": p[:2],
        "cue_position": p[2:],
        "target_final": x.to_numpy()[steps, target],
        "loss_curve": curve,
        "frames": frames,
        "gif": gif,
        "seconds": elapsed,
    }


if __name__ == "__main__":
    r = main()
    print(f"loss {r['initial_loss']:.3g} -> {r['final_loss']:.3g} ({r['seconds']:.1f} s of training)")
    print(f"wrote {r['gif']}, {r['loss_curve']} and {len(r['frames'])} frames")
