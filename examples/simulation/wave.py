"""wave: find the initial displacement whose waves form a picture.

A damped 2D wave equation on an n x n grid (fixed zero boundary), explicit
leapfrog time stepping into a time-indexed field p[t, i, j].  The initial
displacement (interior cells, zero initial velocity) is optimised by gradient
descent so that p at the final step matches a target image drawn with NumPy
(a ring and a dot); loss = mean squared difference.

    python wave.py --iters 100 --out out/wave
    python wave.py --quick
"""
import os
import sys
import time

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from tqdm import tqdm

import fieldsim as ti

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import arch, example_parser, frames_to_gif, plot_loss

# ---------------------------------------------------------------- parameters
N = 96                 # grid cells per side
STEPS = 160            # time steps
ITERS = 100
COURANT2 = 0.25        # (c dt / dx)^2; explicit 2D leapfrog is stable up to 0.5
DAMPING = 0.005        # fraction of the velocity lost per step
LEARNING_RATE = 0.5    # times the number of cells (the loss is a mean); diverges near 1

n = N
steps = STEPS
p = initial = target = loss = None     # fields, created by setup() after ti.init


def target_image(n_):
    """A ring and an off-centre dot, values in [0, 1]."""
    u = (np.arange(n_) + 0.5) / n_
    X, Y = np.meshgrid(u, u, indexing="ij")          # image[i, j]: i is x, j is y
    r = np.hypot(X - 0.45, Y - 0.5)
    ring = np.exp(-((r - 0.25) / 0.04) ** 2)
    dot = np.exp(-(np.hypot(X - 0.75, Y - 0.75) / 0.05) ** 2)
    img = np.clip(ring + dot, 0, 1)
    img[0, :] = img[-1, :] = img[:, 0] = img[:, -1] = 0
    return img


def setup(n_=N, steps_=STEPS):
    """Create the fields (call after ti.init)."""
    global n, steps, p, initial, target, loss
    n, steps = int(n_), int(steps_)
    p = ti.field(dtype=float, name="p")
    initial = ti.field(dtype=float, name="initial")
    target = ti.field(dtype=float, name="target")
    loss = ti.field(dtype=float, name="loss")
    # explicit layout, Taichi style: each field and its gradient placed by hand
    ti.root.dense(ti.ijk, (steps + 1, n, n)).place(p, p.grad)
    ti.root.dense(ti.ij, (n - 2, n - 2)).place(initial, initial.grad)
    ti.root.dense(ti.ij, (n, n)).place(target)
    ti.root.place(loss, loss.grad)
    target.from_numpy(target_image(n).astype(target.to_numpy().dtype))


@ti.kernel
def init_state():
    # initial displacement in the interior, zero initial velocity (p[1] = p[0])
    for i, j in initial:
        p[0, i + 1, j + 1] = initial[i, j]
        p[1, i + 1, j + 1] = initial[i, j]


@ti.kernel
def step(t: int):
    # p[t + 1] from p[t] and p[t - 1]; boundary cells stay zero
    for i, j in ti.ndrange((1, n - 1), (1, n - 1)):
        lap = p[t, i + 1, j] + p[t, i - 1, j] + p[t, i, j + 1] + p[t, i, j - 1] - 4.0 * p[t, i, j]
        p[t + 1, i, j] = ((2.0 - DAMPING) * p[t, i, j] - (1.0 - DAMPING) * p[t - 1, i, j]
                          + COURANT2 * lap)


@ti.kernel
def compute_loss():
    for i, j in target:
        diff = p[steps, i, j] - target[i, j]
        loss[None] += diff * diff / (n * n)


def forward():
    init_state()
    for t in range(1, steps):
        step(t)
    compute_loss()


def loss_and_grad():
    with ti.ad.Tape(loss=loss):
        forward()
    return float(loss[None]), initial.grad.to_numpy().astype(np.float64)


def forward_no_tape():
    loss[None] = 0.0
    forward()
    return float(loss[None])


def train(iters, lr=LEARNING_RATE, progress=True):
    theta = np.zeros((n - 2, n - 2))
    dt_ = initial.to_numpy().dtype
    initial.from_numpy(theta.astype(dt_))
    losses = []
    for _ in tqdm(range(iters), desc="wave", disable=not progress):
        l, g = loss_and_grad()
        losses.append(l)
        theta -= lr * n * n * g
        initial.from_numpy(theta.astype(dt_))
    losses.append(forward_no_tape())
    return losses, theta


def fd_check(param_index=0, eps=1e-4, n_=16, steps_=24, seed=0):
    """Tape gradient vs float64 central finite difference for one interior cell
    of the initial displacement (row-major over the (n-2) x (n-2) interior).
    Returns (ad, fd)."""
    ti.init(arch=ti.cpu, default_fp=ti.f64)
    setup(n_, steps_)
    theta = np.random.default_rng(seed).normal(0, 0.3, (n - 2, n - 2))
    initial.from_numpy(theta)
    _, g = loss_and_grad()
    vals = []
    for sgn in (1, -1):
        th = theta.copy()
        th.flat[param_index] += sgn * eps
        initial.from_numpy(th)
        vals.append(forward_no_tape())
    return float(g.flat[param_index]), (vals[0] - vals[1]) / (2 * eps)


def to_rgb(img, scale=1.0):
    """Diverging colour map (blue - white - red) as float32 RGB in [0, 1]."""
    a = np.clip(img / scale, -1, 1)[..., None]
    white = np.ones(3)
    red, blue = np.array([0.8, 0.1, 0.1]), np.array([0.1, 0.2, 0.8])
    rgb = np.where(a > 0, white + a * (red - white), white - a * (blue - white))
    return rgb.astype(np.float32)


def render(out_dir, every):
    frame_dir = os.path.join(out_dir, "frames")
    os.makedirs(frame_dir, exist_ok=True)
    k = max(1, 384 // n)
    gui = ti.GUI("wave", res=(n * k, n * k), show_gui=False)
    ps = p.to_numpy()
    paths = []
    for t in list(range(0, steps, every)) + [steps]:
        img = np.kron(ps[t], np.ones((k, k)))
        gui.set_image(to_rgb(img, max(1e-6, float(np.abs(ps[t]).max()))))   # per-frame scale
        gui.text(f"t = {t}", (0.03, 0.97), font_size=18, color=0x000000)
        path = os.path.join(frame_dir, f"frame_{len(paths):04d}.png")
        gui.show(path)
        paths.append(path)
    return paths



def main(argv=None):
    ap = example_parser(__doc__, "wave", lr=LEARNING_RATE)
    ap.add_argument("--n", type=int, default=None)
    args = ap.parse_args(argv)
    iters = args.iters if args.iters is not None else (20 if args.quick else ITERS)
    n_ = args.n if args.n is not None else (32 if args.quick else N)
    n_steps = args.steps if args.steps is not None else (48 if args.quick else STEPS)

    ti.init(arch=arch(ti, args.arch), random_seed=args.seed)
    setup(n_, n_steps)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    losses, _theta = train(iters, args.lr)
    elapsed = time.time() - t0

    curve = plot_loss(losses, args.out, "mean squared error at the last step", "wave", log=True)

    final = p.to_numpy()[steps]
    tgt = target.to_numpy()
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.6))
    for ax, img, title in zip(axes, [p.to_numpy()[0], final, tgt],
                              ["optimised initial p[0]", f"p[T] (T = {steps})", "target"]):
        lim = max(1e-6, float(np.abs(img).max()))
        ax.imshow(img.T, origin="lower", cmap="RdBu_r", vmin=-lim, vmax=lim)
        ax.set_title(title)
        ax.axis("off")
    fig.tight_layout()
    compare = os.path.join(args.out, "final_vs_target.png")
    fig.savefig(compare, dpi=100)
    plt.close(fig)

    frames = render(args.out, max(1, n_steps // (8 if args.quick else 40)))
    gif = frames_to_gif(frames, os.path.join(args.out, "wave.gif"), fps=15)
    return {
        "losses": losses,
        "initial_loss": losses[0],
        "final_loss": losses[-1],
        "final_field": final,
        "target": tgt,
        "loss_curve": curve,
        "comparison": compare,
        "frames": frames,
        "gif": gif,
        "seconds": elapsed,
    }


if __name__ == "__main__":
    r = main()
    print(f"loss {r['initial_loss']:.3g} -> {r['final_loss']:.3g} ({r['seconds']:.1f} s of training)")
    print(f"wrote {r['gif']}, {r['loss_curve']}, {r['comparison']} and {len(r['frames'])} frames")
