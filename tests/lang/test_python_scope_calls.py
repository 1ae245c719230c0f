"""A field's Python-scope data calls (`to_numpy`, `from_numpy`, `to_torch`) made from a kernel are
refused where they are written, as Taichi refuses them: run once while the kernel compiled, the
copy would be kept and later launches would read stale values."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


def _line_of(marker):
    with open(__file__) as f:
        return next(n for n, line in enumerate(f, 1) if marker in line and "_line_of" not in line)


def test_to_numpy_in_a_kernel_is_refused_at_its_line():
    x = fs.field(fs.f32, shape=4)
    y = fs.field(fs.f32, shape=4)

    @fs.kernel
    def snapshot():
        a = x.to_numpy()  # marker: to_numpy in kernel
        y[0] = a[1]

    with pytest.raises(fs.TaichiCompilationError, match=r"to_numpy\(\) cannot be called in a kernel") as info:
        snapshot()
    assert info.value.loc.line == _line_of("marker: to_numpy in kernel")
    assert y.to_numpy().tolist() == [0.0] * 4


def test_from_numpy_in_a_helper_a_kernel_calls_is_refused():
    x = fs.field(fs.f32, shape=3)

    def load():
        x.from_numpy(np.ones(3, np.float32))

    @fs.kernel
    def k():
        load()

    with pytest.raises(fs.TaichiCompilationError, match=r"from_numpy\(\) cannot be called"):
        k()
    assert x.to_numpy().tolist() == [0.0] * 3


def test_python_scope_calls_still_work():
    x = fs.Vector.field(2, fs.f32, shape=3)
    x.from_numpy(np.arange(6, dtype=np.float32).reshape(3, 2))
    assert x.to_numpy().sum() == 15.0
