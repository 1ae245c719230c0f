"""torch_mass_spring: a torch MLP controller trained end to end through a fieldsim simulation.

The spring-mass robot of examples/simulation/mass_spring.py (same body, springs and physics),
but its controller is a `torch.nn` MLP and the optimiser is `torch.optim.Adam`. One physics
step is a fieldsim function made differentiable for torch with `fs.ad.torch_function`: it
takes the node positions and velocities and the springs' actuation as tensors (passed to the
kernels in place, no copies) and returns the next positions and velocities. The episode is a
plain torch loop (controller, then physics step), so torch's autograd chains the controller's
gradients through every step's fieldsim adjoint. loss = -(x of the centre of mass at the end).

    python torch_mass_spring.py --iters 30 --out out/torch_mass_spring
    python torch_mass_spring.py --quick
"""
import argparse
import math
import os
import sys
import time

import numpy as np
import torch

import fieldsim as fs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "simulation"))
import mass_spring as ms

vec2 = fs.types.vector(2, fs.f64)
spring_a = spring_b = rest = gain = None


def setup():
    """fs.init and the robot's static data (fields without gradients)."""
    global spring_a, spring_b, rest, gain
    fs.init(arch=fs.cpu, default_fp=fs.f64, random_seed=0)
    spring_a = fs.field(fs.i32, shape=ms.N_SPRINGS, name="spring_a")
    spring_b = fs.field(fs.i32, shape=ms.N_SPRINGS, name="spring_b")
    rest = fs.field(fs.f64, shape=ms.N_SPRINGS, name="rest")
    gain = fs.field(fs.f64, shape=ms.N_SPRINGS, name="gain")
    spring_a.from_numpy(ms.SPRINGS[:, 0].copy())
    spring_b.from_numpy(ms.SPRINGS[:, 1].copy())
    gain.from_numpy(ms.GAINS)
    rest.from_numpy(np.linalg.norm(ms.NODES0[ms.SPRINGS[:, 0]] - ms.NODES0[ms.SPRINGS[:, 1]], axis=1))


@fs.kernel
def spring_forces(x: fs.types.ndarray(dtype=vec2, ndim=1), act: fs.types.ndarray(ndim=1),
                  v_inc: fs.types.ndarray(dtype=vec2, ndim=1)):
    for s in range(ms.N_SPRINGS):
        ia = spring_a[s]
        ib = spring_b[s]
        d = x[ia] - x[ib]
        length = d.norm() + 1e-4
        target = rest[s] * (1.0 + gain[s] * act[s])
        impulse = ms.DT * ms.STIFFNESS * (length - target) / length * d
        v_inc[ia] += -impulse
        v_inc[ib] += impulse


@fs.kernel
def advance(x: fs.types.ndarray(dtype=vec2, ndim=1), v: fs.types.ndarray(dtype=vec2, ndim=1),
            v_inc: fs.types.ndarray(dtype=vec2, ndim=1), x_new: fs.types.ndarray(dtype=vec2, ndim=1),
            v_new: fs.types.ndarray(dtype=vec2, ndim=1)):
    for i in x:
        vel = v[i] * fs.exp(-ms.DT * ms.DAMPING) + v_inc[i] + fs.Vector([0.0, -ms.DT * ms.GRAVITY])
        old_x = x[i]
        falling = vel[1] < -1e-4
        below = old_x[1] + ms.DT * vel[1] < ms.GROUND
        toi = 0.0
        nv = vel
        if falling and below:  # sticky ground, time of impact inside the step (as mass_spring)
            toi = fs.max((ms.GROUND - old_x[1]) / vel[1], 0.0)
            nv = fs.Vector([0.0, 0.0])
        v_new[i] = nv
        x_new[i] = old_x + toi * vel + (ms.DT - toi) * nv


@fs.ad.torch_function
def physics_step(x, v, act):
    """(x, v, act) -> (x', v'): one step of the robot, differentiable for torch."""
    v_inc = torch.zeros_like(x)
    x_new, v_new = torch.empty_like(x), torch.empty_like(v)
    spring_forces(x, act, v_inc)
    advance(x, v, v_inc, x_new, v_new)
    return x_new, v_new


class Controller(torch.nn.Module):
    """mass_spring's controller as a torch MLP: sinusoids and node offsets -> actuation."""

    def __init__(self, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        n_in = ms.N_SIN + 2 * ms.N_NODES
        self.net = torch.nn.Sequential(torch.nn.Linear(n_in, ms.N_HIDDEN), torch.nn.Tanh(),
                                       torch.nn.Linear(ms.N_HIDDEN, ms.N_SPRINGS), torch.nn.Tanh())
        self.double()

    def forward(self, t, x):
        phase = ms.OMEGA * t * ms.DT + 2 * math.pi / ms.N_SIN * torch.arange(ms.N_SIN, dtype=x.dtype)
        offsets = (x - x.mean(0)) * ms.POS_SCALE
        return self.net(torch.cat([torch.sin(phase), offsets.reshape(-1)]))


def episode(controller, steps):
    x = torch.tensor(ms.NODES0, dtype=torch.float64)
    v = torch.zeros_like(x)
    for t in range(steps):
        x, v = physics_step(x, v, controller(t, x))
    return -x[:, 0].mean(), x


def train(iters, steps, lr=0.01, seed=0, progress=True):
    from tqdm import tqdm
    controller = Controller(seed)
    opt = torch.optim.Adam(controller.parameters(), lr=lr)
    losses = []
    for _ in tqdm(range(iters), desc="torch_mass_spring", disable=not progress):
        opt.zero_grad()
        loss, _ = episode(controller, steps)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        losses.append(episode(controller, steps)[0].item())
    return controller, losses


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--out", default=os.path.join("out", "torch_mass_spring"))
    ap.add_argument("--quick", action="store_true", help="a tiny run for tests")
    args = ap.parse_args(argv)
    if args.quick:
        args.iters, args.steps = 4, 120
    setup()
    t0 = time.perf_counter()
    _, losses = train(args.iters, args.steps, args.lr)
    wall = time.perf_counter() - t0
    os.makedirs(args.out, exist_ok=True)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(losses, marker=".")
    ax.set_xlabel("Adam iteration")
    ax.set_ylabel("loss = -x of the centre of mass")
    ax.set_title("torch MLP controller through fieldsim")
    fig.tight_layout()
    curve = os.path.join(args.out, "loss_curve.png")
    fig.savefig(curve, dpi=100)
    plt.close(fig)
    print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f} in {args.iters} iterations ({wall:.1f} s); "
          f"loss curve {curve}")
    return {"losses": losses, "loss_curve": curve, "wall_s": wall}


if __name__ == "__main__":
    main()
