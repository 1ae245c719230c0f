"""ad_gravity: N-body gravity where the forces come from reverse-mode AD.

Only the potential energy U = sum_{i<j} -G m^2 / sqrt(|x_i - x_j|^2 + eps^2)
is written by hand; each step runs it inside `ti.ad.Tape(loss=U)` and the
force on particle i is -dU/dx_i = -x.grad[i].  Symplectic Euler integration.

    python ad_gravity.py --n 1024 --steps 300 --out out/ad_gravity
    python ad_gravity.py --quick
"""
import os
import sys
import time

import numpy as np
from tqdm import tqdm

import fieldsim as ti

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import arch, example_parser, frames_to_gif

# ---------------------------------------------------------------- parameters
N = 1024               # particles
G = 1.0                # gravitational constant
TOTAL_MASS = 1.0       # each particle has mass TOTAL_MASS / n
EPS = 2e-2             # softening length
DT = 1e-3
STEPS = 300
FRAME_EVERY = 5

n = N
mass = TOTAL_MASS / n

x = v = U = None       # fields, created by setup() after ti.init


def setup(n_particles=N):
    """Create the fields (call after ti.init)."""
    global n, mass, x, v, U
    n = int(n_particles)
    mass = TOTAL_MASS / n
    x = ti.Vector.field(2, dtype=float, shape=n, needs_grad=True, name="x")
    v = ti.Vector.field(2, dtype=float, shape=n, name="v")
    U = ti.field(dtype=float, shape=(), needs_grad=True, name="U")


@ti.kernel
def compute_U():
    for i, j in ti.ndrange(n, n):
        if i < j:
            r = x[i] - x[j]
            U[None] += -G * mass * mass / ti.sqrt(r.norm_sqr() + EPS * EPS)


@ti.kernel
def kick_drift():
    # symplectic Euler: v += dt * F / m with F = -dU/dx, then x += dt * v
    for i in v:
        v[i] += -DT / mass * x.grad[i]
    for i in x:
        x[i] += DT * v[i]


def forces():
    """Fill U[None] and x.grad (= dU/dx) by reverse-mode AD."""
    with ti.ad.Tape(loss=U):
        compute_U()


def step():
    forces()
    kick_drift()


def energy_and_grad(pos):
    """U and dU/dx at positions pos (n, 2) through the fields and the Tape."""
    x.from_numpy(np.asarray(pos, dtype=x.to_numpy().dtype))
    forces()
    return float(U[None]), x.grad.to_numpy()


def energy_and_grad_numpy(pos, eps=EPS, G_=G, total_mass=TOTAL_MASS):
    """Reference float64 U and dU/dx, written directly with NumPy."""
    pos = np.asarray(pos, dtype=np.float64)
    m = total_mass / len(pos)
    d = pos[:, None, :] - pos[None, :, :]            # x_i - x_j
    s = (d ** 2).sum(-1) + eps * eps
    inv = 1.0 / np.sqrt(s)
    iu = np.triu_indices(len(pos), 1)
    energy = -G_ * m * m * inv[iu].sum()
    # d/dx_i of -G m^2 / sqrt(|x_i-x_j|^2+eps^2) = G m^2 (x_i-x_j) / s^{3/2}
    coef = G_ * m * m * inv ** 3
    np.fill_diagonal(coef, 0.0)
    grad = (coef[:, :, None] * d).sum(1)
    return energy, grad


def initial_state(n_particles, seed=0):
    """A rotating disc of particles, roughly in circular orbits."""
    rng = np.random.default_rng(seed)
    r = 0.3 * np.sqrt(rng.random(n_particles))
    th = 2 * np.pi * rng.random(n_particles)
    rel = np.stack([r * np.cos(th), r * np.sin(th)], 1)
    pos = 0.5 + rel
    # speed of a circular orbit inside a uniform disc, slowed a little so it collapses into clumps
    speed = 0.8 * np.sqrt(G * TOTAL_MASS * (r / 0.3) ** 2 / np.maximum(r, 1e-2))
    vel = np.stack([-np.sin(th), np.cos(th)], 1) * speed[:, None]
    return pos.astype(np.float32), vel.astype(np.float32)



def main(argv=None):
    ap = example_parser(__doc__, "ad_gravity")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--frame-every", type=int, default=FRAME_EVERY)
    args = ap.parse_args(argv)
    n_p = args.n if args.n is not None else (32 if args.quick else N)
    steps = args.steps if args.steps is not None else (20 if args.quick else STEPS)

    ti.init(arch=arch(ti, args.arch), random_seed=args.seed)
    setup(n_p)
    pos0, vel0 = initial_state(n, args.seed)

    # check the AD forces against the float64 formula at the initial state
    U_ad, g_ad = energy_and_grad(pos0)
    U_np, g_np = energy_and_grad_numpy(pos0)
    grad_rel_err = float(np.abs(g_ad - g_np).max() / np.abs(g_np).max())

    x.from_numpy(pos0)
    v.from_numpy(vel0)
    frame_dir = os.path.join(args.out, "frames")
    os.makedirs(frame_dir, exist_ok=True)
    gui = ti.GUI("ad_gravity", res=(512, 512), background_color=0x0B0B20, show_gui=False)
    paths, energies = [], []
    t0 = time.time()
    for s in tqdm(range(steps), desc="ad_gravity steps"):
        step()
        if s % args.frame_every == 0 or s == steps - 1:
            kinetic = 0.5 * mass * float((v.to_numpy().astype(np.float64) ** 2).sum())
            energies.append(kinetic + float(U[None]))
            gui.circles(x.to_numpy(), radius=2, color=0xFFD27F)
            path = os.path.join(frame_dir, f"frame_{len(paths):04d}.png")
            gui.show(path)
            paths.append(path)
    elapsed = time.time() - t0
    gif = frames_to_gif(paths, os.path.join(args.out, "ad_gravity.gif"), fps=20)
    pos = x.to_numpy()
    return {
        "positions": pos,
        "velocities": v.to_numpy(),
        "initial_U": U_ad,
        "initial_U_numpy": U_np,
        "grad_rel_err": grad_rel_err,
        "energies": energies,
        "frames": paths,
        "gif": gif,
        "finite": bool(np.isfinite(pos).all()),
        "seconds": elapsed,
    }


if __name__ == "__main__":
    r = main()
    print(f"AD forces vs the NumPy formula: relative error {r['grad_rel_err']:.2g}; "
          f"total energy {r['energies'][0]:.5f} -> {r['energies'][-1]:.5f}")
    print(f"wrote {r['gif']} and {len(r['frames'])} frames")
