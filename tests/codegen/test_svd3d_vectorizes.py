"""A struct-for calling the 3x3 `ti.svd` / `ti.polar_decompose` vectorizes across its elements:
McAdams' Jacobi sweeps are unrolled at compile time, so the particle loop holds no inner loop
and LLVM's loop vectorizer takes it (a runtime sweep loop left it scalar: 12x slower per
SVD at 20,000 matrices, as slow as Taichi 1.7.4's own runtime loop)."""
import numpy as np

import fieldsim as fs

N = 256


def _optimised(kernel, monkeypatch, capfd) -> str:
    monkeypatch.setenv("FIELDSIM_PRINT_LLVM", "1")
    capfd.readouterr()
    kernel()
    text = capfd.readouterr().out
    return text[text.index("define"):]


def test_svd3d_struct_for_is_vectorized(monkeypatch, capfd):
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=1)
    F = fs.Matrix.field(3, 3, fs.f32, N)
    sig = fs.Vector.field(3, fs.f32, N)
    rot = fs.Matrix.field(3, 3, fs.f32, N)

    @fs.kernel
    def decompose():
        for i in F:
            _, s, _ = fs.svd(F[i])
            sig[i] = fs.Vector([s[0, 0], s[1, 1], s[2, 2]])
            rot[i], _ = fs.polar_decompose(F[i])

    a = np.eye(3) + 0.15 * np.random.default_rng(0).standard_normal((N, 3, 3))
    assert (np.linalg.det(a) > 0).all()  # U V^T is then the rotation polar_decompose gives
    F.from_numpy(a.astype(np.float32))
    text = _optimised(decompose, monkeypatch, capfd)
    assert "vector.body" in text  # LLVM's loop vectorizer took the loop over elements
    want = np.linalg.svd(a, compute_uv=False)  # sorted descending, as McAdams' (det > 0 here)
    got = np.sort(np.abs(sig.to_numpy()), axis=1)[:, ::-1]
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    u, _, vt = np.linalg.svd(a)
    np.testing.assert_allclose(rot.to_numpy(), u @ vt, atol=5e-5)
