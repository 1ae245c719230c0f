"""`fs.types.ndarray(element_dim=1/2)` (Taichi's older spelling, no element type): the numpy
array's last one or two axes are each element's vector or matrix, sized by the array."""
import numpy as np
import pytest

import fieldsim as fs


def test_element_dim_1_reads_and_writes_pixels_as_vectors():
    @fs.kernel
    def swap_and_scale(img: fs.types.ndarray(element_dim=1), out: fs.types.ndarray(element_dim=1)):
        for i, j in fs.ndrange(img.shape[0], img.shape[1]):
            p = img[i, j]
            out[j, i] = (p * 0.5).cast(fs.u8)

    rng = np.random.default_rng(1)
    img = rng.integers(0, 256, size=(5, 7, 3), dtype=np.uint8)
    out = np.zeros((7, 5, 3), dtype=np.uint8)
    swap_and_scale(img, out)
    np.testing.assert_array_equal(out, (img.swapaxes(0, 1) * 0.5).astype(np.uint8))


def test_element_dim_2_is_a_matrix_per_element():
    @fs.kernel
    def dets(a: fs.types.ndarray(element_dim=2), d: fs.types.ndarray()):
        for i in range(a.shape[0]):
            d[i] = a[i].determinant()

    a = np.arange(12, dtype=np.float32).reshape(3, 2, 2) ** 1.5
    d = np.zeros(3, dtype=np.float32)
    dets(a, d)
    np.testing.assert_allclose(d, np.linalg.det(a.astype(np.float64)), rtol=1e-5)


def test_element_dim_with_ndim_checks_the_rank():
    @fs.kernel
    def touch(img: fs.types.ndarray(ndim=2, element_dim=1)):
        for i, j in fs.ndrange(img.shape[0], img.shape[1]):
            img[i, j][0] = 1

    with pytest.raises(Exception, match="element_dim=1"):
        touch(np.zeros((4, 3), dtype=np.float32))
