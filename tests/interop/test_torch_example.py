"""examples/interop/torch_mass_spring.py: the fieldsim physics step passes torch's float64
gradcheck (inside the contact-free regime and with ground contact), and a quick Adam run through
the simulation lowers the loss and writes its loss curve."""
import importlib.util
import os
import pathlib

import pytest

torch = pytest.importorskip("torch")

PATH = pathlib.Path(__file__).resolve().parents[2] / "examples" / "interop" / "torch_mass_spring.py"


@pytest.fixture
def example():
    spec = importlib.util.spec_from_file_location("fieldsim_example_torch_mass_spring", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.setup()
    return module


def test_physics_step_gradcheck(example):
    ms = example.ms
    g = torch.Generator().manual_seed(0)
    x = torch.tensor(ms.NODES0, dtype=torch.float64)
    x = (x + 0.002 * torch.randn(x.shape, generator=g, dtype=torch.float64)).requires_grad_()
    v = (0.1 * torch.randn(x.shape, generator=g, dtype=torch.float64)).requires_grad_()
    act = (0.5 * torch.rand(ms.N_SPRINGS, generator=g, dtype=torch.float64)).requires_grad_()
    # nondet_tol: on a GPU, float atomics add in any order, so a backward run twice may differ
    # in the last bits (the CPU backend's are reproducible)
    assert torch.autograd.gradcheck(example.physics_step, (x, v, act), atol=1e-6, rtol=1e-5,
                                    nondet_tol=1e-12)


def test_quick_training_lowers_the_loss(example, tmp_path):
    r = example.main(["--quick", "--out", str(tmp_path)])
    assert r["losses"][-1] < r["losses"][0]
    assert os.path.getsize(r["loss_curve"]) > 1000
