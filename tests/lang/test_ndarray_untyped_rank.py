"""`fs.types.ndarray(ndim=k)` without a dtype takes a NumPy array or tensor of any rank, as
Taichi 1.7.4 does (it checks the rank of an external array only when the annotation names a
dtype). taichi-nerfs' `raymarching_test_kernel` annotates `ndim=2` and passes (rays, samples,
3) tensors; fieldsim refused it. A dtype, or an fs.ndarray, still has its rank checked."""
import numpy as np
import pytest

import fieldsim as fs


def test_untyped_ndim_takes_the_arrays_rank():
    fs.init(arch=fs.cpu)

    @fs.kernel
    def fill(a: fs.types.ndarray(ndim=2)):
        for i in range(a.shape[0]):
            a[i, 1, 2] = i + 0.5

    @fs.kernel
    def bump(a: fs.types.ndarray(ndim=2)):
        for I in fs.grouped(a):
            a[I] += 1

    @fs.kernel
    def dims(a: fs.types.ndarray(ndim=2)) -> fs.i32:
        return a.shape[2] * 100 + a.shape[1] * 10 + a.shape[0]

    a = np.zeros((3, 4, 5), np.float32)
    fill(a)
    want = np.zeros((3, 4, 5), np.float32)
    want[:, 1, 2] = np.arange(3) + 0.5
    np.testing.assert_array_equal(a, want)
    bump(a)
    np.testing.assert_array_equal(a, want + 1)
    assert dims(a) == 543


def test_typed_or_fieldsim_ndarray_rank_still_checked():
    fs.init(arch=fs.cpu)

    @fs.kernel
    def typed(a: fs.types.ndarray(dtype=fs.f32, ndim=2)):
        a[0, 0, 0] = 1

    @fs.kernel
    def untyped(a: fs.types.ndarray(ndim=2)):
        for I in fs.grouped(a):
            a[I] = 1

    with pytest.raises(ValueError, match=r"kernel 'typed'.*ndim=2, array with 3 dimensions"):
        typed(np.zeros((2, 3, 4), np.float32))
    with pytest.raises(ValueError, match=r"kernel 'untyped'.*ndim=2, array with 3 dimensions"):
        untyped(fs.ndarray(fs.f32, shape=(2, 3, 4)))
