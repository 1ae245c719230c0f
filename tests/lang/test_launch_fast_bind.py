"""Launches of scalar-parameter kernels skip `bind` once compiled (`KernelObj._fast_bind`): the
values that reach the kernel, the errors and re-initialisation behave as on the full path."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import FieldsimError


def _setup():
    fs.init(arch=fs.cpu, offline_cache=False)
    out = fs.field(fs.f64, shape=2)

    @fs.kernel
    def put(a: fs.f32, n: fs.i32):
        out[0] = a
        out[1] = n

    return put, out


@pytest.mark.parametrize("a,n,want", [
    (1.5, 3, (1.5, 3)),
    (2, 7, (2.0, 7)),                       # an int for a float parameter
    (np.float32(0.25), np.int64(-4), (0.25, -4)),  # numpy scalars: the full conversion
    (True, False, (1.0, 0)),                # bools: the full conversion
    (0.5, 2.0, (0.5, 2)),                   # an integral float for an int parameter
])
def test_values_reach_the_kernel_as_on_the_full_path(a, n, want):
    put, out = _setup()
    put(0.0, 0)  # compiled: later calls may take the fast path
    put(a, n)
    assert tuple(out.to_numpy()) == pytest.approx(want)


@pytest.mark.parametrize("n", [2.9, 2 ** 31, -(2 ** 31) - 1])
def test_a_value_an_i32_cannot_hold_is_refused_on_the_fast_path_too(n):
    put, out = _setup()
    put(0.0, 0)  # compiled: later calls may take the fast path
    with pytest.raises(FieldsimError, match="'n'"):
        put(1.0, n)
    assert tuple(out.to_numpy()) == (0.0, 0.0)


def test_wrong_argument_count_is_a_clear_error():
    put, _ = _setup()
    put(1.0, 1)
    with pytest.raises(FieldsimError, match="put"):
        put(1.0)
    with pytest.raises(FieldsimError, match="put"):
        put("x", 1)


def test_a_new_init_recompiles_against_its_own_fields():
    put, out = _setup()
    put(1.0, 1)
    put2, out2 = _setup()
    assert put2 is not put
    put2(4.0, 5)
    assert tuple(out2.to_numpy()) == (4.0, 5)


G = None


@fs.kernel
def put_global(a: fs.f32):
    G[1] = a


def test_one_kernel_across_inits_writes_the_current_field():
    global G
    for value in (1.0, 2.0):
        fs.init(arch=fs.cpu, offline_cache=False)
        G = fs.field(fs.f32, shape=2)
        put_global(0.0)
        put_global(value)  # the fast path must not reuse the previous init's compiled kernel
        assert G.to_numpy()[1] == value
