"""Under fast-math the CPU rounds a product before adding it, as Taichi 1.7.4's x64 backend does
(it never emits FMA): `a * b - c` equals numpy's float32 `(a * b) - c` bit for bit, not the
fused result. An ill-conditioned CG solve (a GitHub stable-fluid program) kept Taichi's exact
residual only this way. `fs.init(fp_contract=True)` opts in to fused multiply-adds."""
import llvmlite.binding as llvm
import numpy as np

import fieldsim as fs


def _multiply_subtract(seed, **init):
    """(fieldsim's a * b - c under `init`, numpy's rounded-twice result, numpy's fused one)."""
    fs.init(arch=fs.cpu, fast_math=True, offline_cache=False, **init)
    n = 4096
    rng = np.random.default_rng(seed)
    a, b, c = (rng.random(n).astype(np.float32) for _ in range(3))
    fa, fb, fc, out = (fs.field(fs.f32, shape=n) for _ in range(4))
    for f, v in ((fa, a), (fb, b), (fc, c)):
        f.from_numpy(v)

    @fs.kernel
    def mad():
        for i in fa:
            out[i] = fa[i] * fb[i] - fc[i]

    mad()
    got = out.to_numpy()
    fs.init(arch=fs.cpu)
    return got, (a * b).astype(np.float32) - c, (a.astype(np.float64) * b - c).astype(np.float32)


def test_multiply_then_add_is_rounded_twice_under_fast_math():
    got, separate, fused = _multiply_subtract(0)
    assert (separate != fused).sum() > 100  # the data tells the two apart
    np.testing.assert_array_equal(got, separate)


def test_fp_contract_opts_in_to_fused_multiply_adds():
    """`fs.init(fp_contract=True)` (fieldsim's own): fast-math may fuse `a * b - c` into one
    rounding where the CPU has FMA units."""
    got, separate, fused = _multiply_subtract(1, fp_contract=True)
    has_fma = "+fma" in llvm.get_host_cpu_features().flatten().split(",")
    np.testing.assert_array_equal(got, fused if has_fma else separate)
