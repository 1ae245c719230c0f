"""The examples on a CUDA device against the CPU: mpm88's particle states after 20 substeps,
gravity's energy and its gradient (Tape), diffmpm's loss and parameter gradients (512-step Tape,
the example's size). Float32 on both; the GPU adds in another order (atomics, reductions), so
results agree to float32 rounding grown over the steps, not bitwise.

Marked `cuda`: skipped where no device works (tests/conftest.py). The emulated backend runs the
same launcher in test_cuda_run.py; these need real device arithmetic to mean anything.
"""
import os
import sys

import numpy as np
import pytest

import fieldsim as fs

pytestmark = pytest.mark.cuda
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "simulation")
if EXAMPLES not in sys.path:
    sys.path.insert(0, EXAMPLES)


def on_both(run):
    """run() on the CPU, then on CUDA: ({name: array}, {name: array})."""
    out = []
    for arch in (fs.cpu, fs.cuda):
        fs.init(arch=arch, random_seed=0, offline_cache=False)
        out.append({k: np.asarray(v, dtype=np.float64) for k, v in run().items()})
    fs.init(arch=fs.cpu)
    return out


def assert_close(cpu, gpu, rel):
    for name, ref in cpu.items():
        err = np.linalg.norm(gpu[name] - ref) / max(np.linalg.norm(ref), 1e-30)
        assert np.isfinite(gpu[name]).all(), name
        assert err < rel, f"{name}: relative difference {err:.3g} (tolerance {rel})"


def test_mpm88_states():
    import mpm88

    def run():
        mpm88.setup(4096, 64)
        mpm88.reset()
        for _ in range(20):
            mpm88.substep()
        return {"x": mpm88.x.to_numpy(), "v": mpm88.v.to_numpy(), "C": mpm88.C.to_numpy(),
                "J": mpm88.J.to_numpy()}
    cpu, gpu = on_both(run)
    c_cpu, c_gpu = cpu.pop("C"), gpu.pop("C")
    assert_close(cpu, gpu, 1e-3)
    # C (the velocity gradient) is near 0 where the fluid moves as a block: a sum of rounding
    # errors, so compared on the scale of the velocities' gradients (|v| / dx), not its own
    scale = np.abs(cpu["v"]).max() * 64
    assert np.abs(c_gpu - c_cpu).max() < 1e-3 * scale


@pytest.mark.parametrize("n", [2048, 16384])
def test_gravity_energy_and_gradient(n):
    import ad_gravity as g

    def run():
        g.setup(n)
        g.x.from_numpy(g.initial_state(n)[0].astype(np.float32))
        g.forces()
        return {"U": [g.U[None]], "dU_dx": g.x.grad.to_numpy()}
    cpu, gpu = on_both(run)
    assert_close(cpu, gpu, 1e-4)
    if n == 2048:  # and both against float64 numpy
        u, grad = g.energy_and_grad_numpy(g.initial_state(n)[0].astype(np.float64))
        assert_close({"U": [u], "dU_dx": grad}, gpu, 1e-3)


def test_diffmpm_loss_and_gradients():
    import diffmpm as d

    def run():
        d.setup()
        d.set_params(*d.initial_params(0))
        d.loss_and_grad()
        return {"loss": [d.loss[None]], "dW": d.weights.grad.to_numpy(),
                "db": d.bias.grad.to_numpy()}
    cpu, gpu = on_both(run)
    assert_close(cpu, gpu, 1e-2)
