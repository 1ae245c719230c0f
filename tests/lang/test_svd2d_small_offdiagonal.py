"""2x2 `fs.svd` takes a polar factor with an off-diagonal under 1e-5 as diagonal, as Taichi's
`ti.svd` does: V is the identity (or the quarter turn that sorts the singular values), so
U @ V.T of a near-identity deformation gradient is the identity, not rounding noise of a 45
degree eigenvector angle."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _cpu():
    fs.init(arch=fs.cpu, default_fp=fs.f32)


def _svd(mats):
    n = len(mats)
    A = fs.Matrix.field(2, 2, fs.f32, n)
    U, S, V = (fs.Matrix.field(2, 2, fs.f32, n) for _ in range(3))
    A.from_numpy(np.asarray(mats, dtype=np.float32))

    @fs.kernel
    def run():
        for i in A:
            U[i], S[i], V[i] = fs.svd(A[i])

    run()
    return U.to_numpy(), S.to_numpy(), V.to_numpy()


def test_near_identity_gives_identity_rotations():
    mats = [[[1.0, 0.0], [-1e-12, 1.0]], [[1.0, 3e-7], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]]
    U, S, V = _svd(mats)
    eye = np.eye(2, dtype=np.float32)
    for k in range(len(mats)):
        np.testing.assert_array_equal(V[k], eye)
        np.testing.assert_array_equal(S[k], eye)
        np.testing.assert_allclose(U[k], eye, atol=1e-6)


def test_small_offdiagonal_with_larger_second_value_is_a_quarter_turn():
    A = np.array([[1.0, 0.0], [1e-9, 2.0]])
    U, S, V = _svd([A])
    np.testing.assert_array_equal(V[0], [[0.0, 1.0], [-1.0, 0.0]])
    np.testing.assert_allclose(np.diag(S[0]), np.linalg.svd(A)[1], rtol=1e-6)
    np.testing.assert_allclose(U[0] @ S[0] @ V[0].T, A, atol=1e-6)


def test_general_matrix_unchanged_by_the_threshold():
    rng = np.random.default_rng(3)
    mats = rng.normal(size=(8, 2, 2))
    U, S, V = _svd(mats)
    for k, A in enumerate(mats):
        np.testing.assert_allclose(U[k] @ S[k] @ V[k].T, A, atol=2e-6)
        np.testing.assert_allclose(np.diag(S[k]), np.linalg.svd(A)[1], rtol=1e-5, atol=1e-6)
