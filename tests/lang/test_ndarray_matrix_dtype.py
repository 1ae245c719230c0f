"""A NumPy array or tensor under a vector/matrix annotation with an element dtype is taken with
its own dtype, only its element shape checked, as Taichi 1.7.4 does: taichi-nerfs' f16 hash
encoder annotates `ndarray(vector(2, f16))` and accumulates its gradient into an f32 tensor.
fieldsim refused it ("required array has dtype=f16, array with dtype=f32")."""
import numpy as np
import pytest

import fieldsim as fs

half2 = fs.types.vector(2, fs.f16)


def test_external_array_keeps_its_dtype_under_a_typed_vector():
    fs.init(arch=fs.cpu)

    @fs.kernel
    def scatter(src: fs.types.ndarray(half2), dst: fs.types.ndarray(half2), w: fs.f32):
        for i in range(src.shape[0]):
            dst[i // 2] += w * src[i]

    src = np.array([[0.1, 0.2], [0.3, 0.4], [1 / 3, 2 / 3], [1e-3, 7.0]], np.float32)
    dst = np.zeros((2, 2), np.float32)
    scatter(src, dst, 0.7)
    w = np.float32(0.7)
    want = np.stack([w * src[0] + w * src[1], w * src[2] + w * src[3]])  # f32 throughout
    np.testing.assert_array_equal(dst, want)
    assert dst.dtype == np.float32


def test_element_shape_still_checked():
    fs.init(arch=fs.cpu)

    @fs.kernel
    def k(a: fs.types.ndarray(half2)):
        a[0][0] = 1

    with pytest.raises(ValueError, match=r"kernel 'k'.*element_shape=\(2,\)"):
        k(np.zeros((4, 3), np.float32))
