"""The checkpointed diffmpm (examples/simulation/diffmpm_checkpoint.py) against the plain one.

Same robot, steps and controller parameters: the loss and dloss/d(W, b) of the ring-buffer run
under `fs.ad.checkpoint` must equal those of `diffmpm.py`, which stores every step in
time-indexed fields, to 1e-9 in float64 and to float32 tolerance in float32; in float64 they
must also match central finite differences of the forward pass. The checkpoint keeps
ceil(steps / every) state copies, and the fields' size does not grow with the number of steps.
"""
import importlib.util
import json
import math
import os

import numpy as np
import pytest

import fieldsim as fs

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples", "simulation")
STEPS, EVERY, N_GRID = 40, 7, 64  # 7 does not divide 40: the last segment is short
H = 1e-4  # finite-difference step: the gradients are ~1e-5, the loss ~0.1


def _load(name):
    spec = importlib.util.spec_from_file_location(f"_example_{name}", os.path.join(EXAMPLES, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def ck():
    return _load("diffmpm_checkpoint")  # imports diffmpm.py as `diffmpm` (its kernels)


def _params(dm, seed=0):
    W, b = dm.initial_params(seed)
    return W, b + 0.1  # a nonzero bias: the actuators do not start symmetric about zero


def _plain(dm, fp, steps=STEPS):
    fs.init(arch=fs.cpu, default_fp=fp)
    dm.setup(N_GRID, steps)
    dm.set_params(*_params(dm))
    loss, gW, gb = dm.loss_and_grad()
    return loss, np.concatenate([gW.ravel(), gb])


def _checkpointed(ck, fp, steps=STEPS, every=EVERY):
    fs.init(arch=fs.cpu, default_fp=fp)
    ck.setup(N_GRID, steps)
    ck.dm.set_params(*_params(ck.dm))
    loss, gW, gb, info = ck.loss_and_grad(every)
    return loss, np.concatenate([gW.ravel(), gb]), info


def test_f64_equals_plain_diffmpm_and_finite_differences(ck):
    dm = ck.dm
    loss_p, g_p = _plain(dm, fs.f64)
    loss_c, g_c, info = _checkpointed(ck, fs.f64)
    assert np.abs(g_p).max() > 1e-6 and np.count_nonzero(g_p) == g_p.size
    np.testing.assert_allclose(loss_c, loss_p, rtol=1e-12)
    np.testing.assert_allclose(g_c, g_p, rtol=1e-9, atol=1e-9 * np.abs(g_p).max())

    # central differences of the (untaped) checkpointed forward, for W[0, 0], W[3, 1] and b[2]
    W, b = _params(dm)
    theta = np.concatenate([W.ravel(), b])
    for k in (0, 13, 18):
        values = []
        for sign in (1, -1):
            th = theta.copy()
            th[k] += sign * H
            dm.set_params(th[:W.size].reshape(W.shape), th[W.size:])
            values.append(ck.forward_no_tape(EVERY))
        fd = (values[0] - values[1]) / (2 * H)
        np.testing.assert_allclose(g_c[k], fd, rtol=1e-6, atol=1e-8 * np.abs(g_c).max(),
                                   err_msg=f"parameter {k}")

    assert info.n_snapshots == math.ceil(STEPS / EVERY)
    state_bytes = sum(f.to_numpy().nbytes for f in (dm.x, dm.v, dm.C, dm.F))
    assert info.snapshot_bytes == info.n_snapshots * state_bytes
    assert info.recomputed_steps == STEPS
    assert info.peak_backward_bytes > info.snapshot_bytes


def test_f32_equals_plain_diffmpm_to_float32_tolerance(ck):
    loss_p, g_p = _plain(ck.dm, fs.f32)
    loss_c, g_c, _ = _checkpointed(ck, fs.f32)
    np.testing.assert_allclose(loss_c, loss_p, rtol=1e-6)
    np.testing.assert_allclose(g_c, g_p, rtol=1e-4, atol=1e-5 * np.abs(g_p).max())


def test_fields_do_not_grow_with_the_number_of_steps(ck):
    sizes = []
    for steps in (STEPS, 4 * STEPS):
        fs.init(arch=fs.cpu)
        ck.setup(N_GRID, steps)
        sizes.append(ck.field_bytes())
    assert sizes[0] == sizes[1]
    fs.init(arch=fs.cpu)
    ck.dm.setup(N_GRID, STEPS)  # the plain robot's fields hold every step
    assert ck.field_bytes() > sizes[0]


def test_command_line_reports_loss_gradient_and_memory(ck, tmp_path):
    result = ck.main(["--quick", "--steps", "16", "--every", "4", "--out", str(tmp_path)])
    with open(tmp_path / "result.json") as fh:
        saved = json.load(fh)
    assert saved["steps"] == 16 and saved["every"] == 4 and saved["n_snapshots"] == 4
    assert np.isfinite(saved["loss"]) and np.array(saved["grad_W"]).shape == (4, 4)
    assert saved["peak_rss_bytes"] > saved["field_bytes"] > 0
    assert saved["loss"] == result["loss"]
