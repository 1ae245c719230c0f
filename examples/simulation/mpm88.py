"""mpm88: a compact 2D MLS-MPM fluid.

Three blocks of weakly compressible fluid drop into a box and splash.
Quadratic B-spline transfers, APIC affine velocity (MLS-MPM), a single
scalar volume ratio J per particle.

    python mpm88.py --frames 60 --out out/mpm88
    python mpm88.py --quick          # a few frames at a small size

Benchmarks can do:  ti.init(...); mpm88.setup(8192, 128); mpm88.reset(); mpm88.substep()
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
N_PARTICLES = 8192
N_GRID = 128
DT = 2e-4              # substep length (s)
SUBSTEPS = 50          # substeps per rendered frame
GRAVITY = 9.8
BULK = 400.0           # bulk modulus of the fluid
BOUND = 3              # grid cells of wall on each side
RHO = 1.0

# derived values; setup() recomputes them for other sizes
n_particles = N_PARTICLES
n_grid = N_GRID
dx = 1.0 / n_grid
inv_dx = float(n_grid)
p_vol = (dx * 0.5) ** 2
p_mass = p_vol * RHO

# fields, created by setup() after ti.init
x = v = C = J = None
grid_v = grid_m = None


def setup(n_part=N_PARTICLES, n_grid_=N_GRID):
    """Create the fields (call after ti.init)."""
    global n_particles, n_grid, dx, inv_dx, p_vol, p_mass
    global x, v, C, J, grid_v, grid_m
    n_particles, n_grid = int(n_part), int(n_grid_)
    dx = 1.0 / n_grid
    inv_dx = float(n_grid)
    p_vol = (dx * 0.5) ** 2
    p_mass = p_vol * RHO
    x = ti.Vector.field(2, dtype=float, shape=n_particles, name="x")
    v = ti.Vector.field(2, dtype=float, shape=n_particles, name="v")
    C = ti.Matrix.field(2, 2, dtype=float, shape=n_particles, name="C")
    J = ti.field(dtype=float, shape=n_particles, name="J")
    grid_v = ti.Vector.field(2, dtype=float, shape=(n_grid, n_grid), name="grid_v")
    grid_m = ti.field(dtype=float, shape=(n_grid, n_grid), name="grid_m")


@ti.kernel
def clear_grid():
    for i, j in grid_m:
        grid_v[i, j] = [0.0, 0.0]
        grid_m[i, j] = 0.0


@ti.kernel
def particle_to_grid():
    for p in x:
        Xp = x[p] * inv_dx
        base = ti.cast(Xp - 0.5, int)
        fx = Xp - base
        # quadratic B-spline weights along each axis
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
        # pressure of a weakly compressible fluid, folded into the affine term
        pressure_term = -DT * 4.0 * inv_dx * inv_dx * p_vol * BULK * (J[p] - 1.0)
        affine = ti.Matrix([[pressure_term, 0.0], [0.0, pressure_term]]) + p_mass * C[p]
        for i, j in ti.static(ti.ndrange(3, 3)):
            offset = ti.Vector([i, j])
            dpos = (offset - fx) * dx
            weight = w[i][0] * w[j][1]
            grid_v[base + offset] += weight * (p_mass * v[p] + affine @ dpos)
            grid_m[base + offset] += weight * p_mass


@ti.kernel
def update_grid():
    for i, j in grid_m:
        m = grid_m[i, j]
        if m > 0:
            vel = grid_v[i, j] / m
            vel[1] -= DT * GRAVITY
            # slip walls: no velocity into the boundary band
            if i < BOUND and vel[0] < 0:
                vel[0] = 0.0
            if i > n_grid - BOUND and vel[0] > 0:
                vel[0] = 0.0
            if j < BOUND and vel[1] < 0:
                vel[1] = 0.0
            if j > n_grid - BOUND and vel[1] > 0:
                vel[1] = 0.0
            grid_v[i, j] = vel


@ti.kernel
def grid_to_particle():
    for p in x:
        Xp = x[p] * inv_dx
        base = ti.cast(Xp - 0.5, int)
        fx = Xp - base
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
        new_v = ti.Vector.zero(float, 2)
        new_C = ti.Matrix.zero(float, 2, 2)
        for i, j in ti.static(ti.ndrange(3, 3)):
            offset = ti.Vector([i, j])
            dpos = (offset - fx) * dx
            weight = w[i][0] * w[j][1]
            g_v = grid_v[base + offset]
            new_v += weight * g_v
            new_C += 4.0 * inv_dx * inv_dx * weight * g_v.outer_product(dpos)
        v[p] = new_v
        x[p] += DT * new_v
        J[p] *= 1.0 + DT * new_C.trace()
        C[p] = new_C


def substep():
    """One MLS-MPM step of length DT."""
    clear_grid()
    particle_to_grid()
    update_grid()
    grid_to_particle()


def initial_state(n, seed=0):
    """Three blocks of fluid at different heights, drifting inwards."""
    rng = np.random.default_rng(seed)
    block = rng.integers(0, 3, size=n)
    corners = np.array([[0.10, 0.45], [0.40, 0.15], [0.62, 0.55]])
    sizes = np.array([[0.28, 0.28], [0.22, 0.22], [0.26, 0.30]])
    pos = corners[block] + rng.random((n, 2)) * sizes[block]
    vel = np.zeros((n, 2))
    vel[block == 0] = [1.0, -0.5]
    vel[block == 2] = [-1.0, -1.0]
    return pos.astype(np.float32), vel.astype(np.float32), block


def reset(seed=0):
    pos, vel, block = initial_state(n_particles, seed)
    x.from_numpy(pos)
    v.from_numpy(vel)
    C.from_numpy(np.zeros((n_particles, 2, 2), dtype=np.float32))
    J.from_numpy(np.ones(n_particles, dtype=np.float32))
    return block


PALETTE = np.array([0x068587, 0xED553B, 0xEEEEF0], dtype=np.uint32)



def main(argv=None):
    ap = example_parser(__doc__, "mpm88")
    ap.add_argument("--frames", type=int, default=None)
    ap.add_argument("--substeps", type=int, default=None)
    args = ap.parse_args(argv)

    if args.quick:
        n_part, n_g, frames, subs = 2048, 64, 4, 25
    else:
        n_part, n_g, frames, subs = N_PARTICLES, N_GRID, 60, SUBSTEPS
    frames = args.frames if args.frames is not None else frames
    subs = args.substeps if args.substeps is not None else subs

    ti.init(arch=arch(ti, args.arch), random_seed=args.seed)
    setup(n_part, n_g)
    block = reset(args.seed)
    colors = PALETTE[block]

    frame_dir = os.path.join(args.out, "frames")
    os.makedirs(frame_dir, exist_ok=True)
    gui = ti.GUI("mpm88", res=(512, 512), background_color=0x112F41, show_gui=False)
    paths = []
    t0 = time.time()
    for f in tqdm(range(frames), desc="mpm88 frames"):
        for _ in range(subs):
            substep()
        pos = x.to_numpy()
        gui.circles(pos, radius=1.5, color=colors)
        path = os.path.join(frame_dir, f"frame_{f:04d}.png")
        gui.show(path)
        paths.append(path)
    elapsed = time.time() - t0
    gif = frames_to_gif(paths, os.path.join(args.out, "mpm88.gif"), fps=20)
    pos = x.to_numpy()
    return {
        "frames": paths,
        "gif": gif,
        "positions": pos,
        "mean_y": float(pos[:, 1].mean()),
        "finite": bool(np.isfinite(pos).all()),
        "seconds": elapsed,
    }


if __name__ == "__main__":
    r = main()
    print(f"{len(r['frames'])} frames in {r['seconds']:.1f} s, mean height {r['mean_y']:.3f}")
    print(f"wrote {r['gif']} and {len(r['frames'])} frames")
