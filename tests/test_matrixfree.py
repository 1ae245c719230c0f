"""`fs.linalg.MatrixFreeCG` / `MatrixFreeBICGSTAB` with a `LinearOperator` kernel: solutions
checked against numpy's dense solve of the same matrix."""
import numpy as np
import pytest

import fieldsim as fs

N = 12


def _laplacian_2d(dtype):
    """The 5-point Laplacian plus a shift on an N x N grid (SPD), as a kernel and densely."""
    @fs.kernel
    def apply(v: fs.template(), out: fs.template()):
        for i, j in v:
            acc = 4.5 * v[i, j]
            if i > 0:
                acc -= v[i - 1, j]
            if i < N - 1:
                acc -= v[i + 1, j]
            if j > 0:
                acc -= v[i, j - 1]
            if j < N - 1:
                acc -= v[i, j + 1]
            out[i, j] = acc

    dense = np.zeros((N * N, N * N))
    for i in range(N):
        for j in range(N):
            k = i * N + j
            dense[k, k] = 4.5
            for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                if 0 <= i + di < N and 0 <= j + dj < N:
                    dense[k, (i + di) * N + j + dj] = -1.0
    return apply, dense


@pytest.mark.parametrize("dtype,tol,rtol", [(fs.f64, 1e-10, 1e-9), (fs.f32, 1e-4, 1e-4)])
def test_cg_solves_an_spd_system(dtype, tol, rtol):
    fs.init(arch=fs.cpu)
    apply, dense = _laplacian_2d(dtype)
    rhs = np.cos(np.arange(N * N) * 0.3).reshape(N, N)
    b, x = fs.field(dtype, shape=(N, N)), fs.field(dtype, shape=(N, N))
    b.from_numpy(rhs)
    assert fs.linalg.MatrixFreeCG(fs.linalg.LinearOperator(apply), b, x, tol=tol)
    want = np.linalg.solve(dense, rhs.ravel()).reshape(N, N)
    np.testing.assert_allclose(x.to_numpy(), want, rtol=rtol, atol=rtol)


def test_bicgstab_solves_a_nonsymmetric_system():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    n = 40

    @fs.kernel
    def advect(v: fs.template(), out: fs.template()):  # 3 on the diagonal, -1.5 below, +0.5 above
        for i in v:
            acc = 3.0 * v[i]
            if i > 0:
                acc -= 1.5 * v[i - 1]
            if i < n - 1:
                acc += 0.5 * v[i + 1]
            out[i] = acc

    dense = 3 * np.eye(n) - 1.5 * np.eye(n, k=-1) + 0.5 * np.eye(n, k=1)
    rhs = np.linspace(-1, 1, n)
    b, x = fs.field(fs.f64, shape=n), fs.field(fs.f64, shape=n)
    b.from_numpy(rhs)
    assert fs.linalg.MatrixFreeBICGSTAB(fs.linalg.LinearOperator(advect), b, x, tol=1e-11)
    np.testing.assert_allclose(x.to_numpy(), np.linalg.solve(dense, rhs), rtol=1e-9, atol=1e-10)


def test_too_few_iterations_report_failure_and_bad_fields_are_refused(capsys):
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    apply, _ = _laplacian_2d(fs.f64)
    b, x = fs.field(fs.f64, shape=(N, N)), fs.field(fs.f64, shape=(N, N))
    b.fill(1.0)
    A = fs.linalg.LinearOperator(apply)
    assert not fs.linalg.MatrixFreeCG(A, b, x, tol=1e-12, maxiter=2, quiet=False)
    assert "Initial residual" in capsys.readouterr().out
    with pytest.raises(fs.FieldsimTypeError, match="b is f64 but x is f32"):
        fs.linalg.MatrixFreeCG(A, b, fs.field(fs.f32, shape=(N, N)))
    with pytest.raises(fs.FieldsimRuntimeError, match=r"b has shape \(12, 12\) but x \(3,\)"):
        fs.linalg.MatrixFreeBICGSTAB(A, b, fs.field(fs.f64, shape=3))
    with pytest.raises(fs.FieldsimRuntimeError, match="shape"):
        A.matvec(b, fs.field(fs.f64, shape=3))


@pytest.mark.parametrize("solver", ["MatrixFreeCG", "MatrixFreeBICGSTAB"])
def test_a_breakdown_reports_failure_and_bad_arguments_name_themselves(solver):
    fs.init(arch=fs.cpu)

    @fs.kernel
    def zero(v: fs.template(), out: fs.template()):
        for i in v:
            out[i] = 0.0

    b, x = fs.field(fs.f32, shape=4), fs.field(fs.f32, shape=4)
    b.fill(1.0)
    solve = getattr(fs.linalg, solver)
    # A = 0: p.Ap (CG) / r0.v (BiCGSTAB) is 0 at the first step (Taichi: ZeroDivisionError)
    with pytest.raises(ZeroDivisionError, match=r"(p\.Ap|r0\.v) is 0 at iteration 0") as err:
        solve(fs.linalg.LinearOperator(zero), b, x, maxiter=10)
    assert isinstance(err.value, fs.FieldsimError) and err.value.loc.file == __file__
    assert np.array_equal(x.to_numpy(), np.zeros(4, np.float32))
    with pytest.raises(fs.FieldsimTypeError, match="b must be a ti.field; got ndarray") as err:
        solve(fs.linalg.LinearOperator(zero), np.ones(4, np.float32), x)
    assert "test_matrixfree.py" in str(err.value)
    with pytest.raises(fs.FieldsimTypeError, match="LinearOperator takes a kernel"):
        fs.linalg.LinearOperator(None)


def test_dot_products_sum_in_f64_and_f32_solves_warn_nothing():
    # the solvers' dot products add in f64 for any field type: with default_fp f32, a bare
    # `total = 0.0` summed f64 fields in f32 (1e8 + 1 - 1e8 gave 0), and the solvers' own
    # f64-coefficient updates of f32 fields warned "may lose precision" about fieldsim's code
    import warnings

    from fieldsim import matrixfree
    fs.init(arch=fs.cpu, cpu_max_num_threads=1)
    p, q = fs.field(fs.f64, shape=3), fs.field(fs.f64, shape=3)
    p.from_numpy(np.array([1e8, 1.0, -1e8]))
    q.fill(1.0)
    assert matrixfree._dot(p, q) == 1.0
    apply, dense = _laplacian_2d(fs.f32)
    b = fs.field(fs.f32, shape=(N, N))
    x = fs.field(fs.f32, shape=(N, N))
    b.from_numpy(np.linspace(-1.0, 1.0, N * N, dtype=np.float32).reshape(N, N))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fs.linalg.MatrixFreeCG(fs.linalg.LinearOperator(apply), b, x, tol=1e-5, maxiter=500)
    want = np.linalg.solve(dense, b.to_numpy().reshape(-1).astype(np.float64))
    np.testing.assert_allclose(x.to_numpy().reshape(-1), want, rtol=1e-3, atol=1e-4)
