"""`fs.get_addr`: element addresses in host memory, in kernels and in Python scope.

Addresses are checked by reading the element back through ctypes and by the byte distance of
neighbouring elements, computed from the dtype and the shapes."""
import ctypes

import numpy as np
import pytest

import fieldsim as fs
from support.backends import host_addresses

_CTYPES = {fs.f32: ctypes.c_float, fs.f64: ctypes.c_double, fs.i32: ctypes.c_int32}


@pytest.mark.parametrize("dtype", [fs.f32, fs.f64, fs.i32])
def test_kernel_addresses_step_by_the_element_size_and_read_back(dtype):
    fs.init(arch=fs.cpu)
    x = fs.field(dtype, shape=(3, 5))
    x.from_numpy(np.arange(15).reshape(3, 5).astype(dtype.np))
    out = fs.field(fs.u64, shape=(3, 5))

    @fs.kernel
    def addresses():
        for i, j in x:
            out[i, j] = fs.get_addr(x, [i, j])

    addresses()
    a = out.to_numpy().astype(np.int64)
    item = np.dtype(dtype.np).itemsize
    assert out.dtype == fs.u64
    np.testing.assert_array_equal(np.diff(a, axis=1), item)
    np.testing.assert_array_equal(np.diff(a, axis=0), 5 * item)
    for i, j in [(0, 0), (1, 3), (2, 4)]:
        if host_addresses():  # on a GPU, a device address
            assert _CTYPES[dtype].from_address(int(a[i, j])).value == 5 * i + j
        assert fs.get_addr(x, [i, j]) == a[i, j]  # Python scope agrees


def test_vector_field_and_snode_and_component_addresses():
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(3, fs.f32, shape=4)
    a = fs.field(fs.i32)
    fs.root.dense(fs.ij, (1, 2)).dense(fs.ij, 2).place(a)
    v[2] = [1.5, 2.5, 3.5]

    @fs.kernel
    def steps() -> fs.types.vector(2, fs.u64):
        return fs.Vector([fs.get_addr(v, 1) - fs.get_addr(v, 0),
                          fs.get_addr(a.snode, [1, 3]) - fs.get_addr(a.snode, [0, 0])])

    assert list(steps()) == [3 * 4, (1 * 4 + 3) * 4]  # a: 2 x 4, stored in C order
    y = v.get_scalar_field(1)
    if host_addresses():
        assert ctypes.c_float.from_address(fs.get_addr(y, 2)).value == 2.5
    assert fs.get_addr(y, 2) - fs.get_addr(v, 2) == 4


def test_get_addr_misuse_is_a_clear_error():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=(2, 2))
    with pytest.raises(fs.FieldsimTypeError, match="has 2 index"):
        fs.get_addr(x, [0])
    with pytest.raises(fs.FieldsimTypeError, match="placed scalar or matrix field"):
        fs.get_addr(3, [0])

    @fs.kernel
    def of_array(a: fs.types.ndarray()) -> fs.u64:
        return fs.get_addr(a, 0)

    with pytest.raises(fs.FieldsimTypeError, match="not an ndarray"):
        of_array(np.zeros(4, np.float32))
