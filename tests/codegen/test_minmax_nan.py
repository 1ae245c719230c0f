"""Float min/max are LLVM's minnum/maxnum, as Taichi's CPU backend: a NaN operand yields the
other operand on either side (a select on `<` returned the second operand's NaN, so
`ti.max(0.0, x)` let a NaN through where Taichi returns 0), in scalar and vectorised loops."""
import numpy as np

import fieldsim as fs


def test_nan_operand_yields_the_other_one():
    fs.init(arch=fs.cpu, fast_math=False)
    n = 64
    a = fs.field(fs.f32, shape=n)
    b = fs.field(fs.f32, shape=n)
    out = fs.Vector.field(5, fs.f32, shape=n)
    av = np.linspace(-2, 2, n).astype(np.float32)
    bv = np.linspace(1, -1, n).astype(np.float32)
    av[::3] = np.nan
    bv[1::4] = np.nan
    a.from_numpy(av)
    b.from_numpy(bv)

    @fs.kernel
    def k():
        for i in a:  # a vectorised loop
            out[i] = fs.Vector([fs.max(a[i], b[i]), fs.max(b[i], a[i]), fs.min(a[i], b[i]),
                                fs.min(b[i], a[i]), fs.math.clamp(a[i], -1.0, 1.0)])

    k()
    o = out.to_numpy()
    np.testing.assert_array_equal(o[:, 0], np.fmax(av, bv))
    np.testing.assert_array_equal(o[:, 1], np.fmax(bv, av))
    np.testing.assert_array_equal(o[:, 2], np.fmin(av, bv))
    np.testing.assert_array_equal(o[:, 3], np.fmin(bv, av))
    np.testing.assert_array_equal(o[:, 4], np.fmin(1.0, np.fmax(-1.0, av)))


def test_scalar_max_of_a_nan_in_a_serial_kernel():
    fs.init(arch=fs.cpu, default_fp=fs.f64, fast_math=False)
    x = fs.field(fs.f64, shape=2)
    out = fs.field(fs.f64, shape=4)
    x.from_numpy(np.array([np.nan, 1.0]))

    @fs.kernel
    def k():
        out[0] = fs.max(x[0], x[1])
        out[1] = fs.max(x[1], x[0])
        out[2] = fs.min(x[1], x[0])
        out[3] = fs.max(0.0, x[0])

    k()
    np.testing.assert_array_equal(out.to_numpy(), [1.0, 1.0, 1.0, 0.0])


def test_serial_min_max_reductions_skip_nans_in_both_modes():
    # a running max/min in an inner loop (a CFL speed, a wave's peak): as LLVM's maxnum
    # intrinsic this made llvmlite's loop vectorizer abort the process (an assertion)
    v = np.linspace(-3, 3, 37).astype(np.float32)
    v[0] = v[17] = np.nan
    for fast in (False, True):
        fs.init(arch=fs.cpu, fast_math=fast)
        x = fs.field(fs.f32, shape=v.size)
        out = fs.field(fs.f32, shape=2)
        x.from_numpy(v)

        @fs.kernel
        def k():
            for _ in range(1):
                s = -1e30
                t = 1e30
                for j in range(v.size):
                    s = fs.max(s, x[j])
                    t = fs.min(t, x[j])
                out[0] = s
                out[1] = t

        k()
        np.testing.assert_array_equal(out.to_numpy(), [np.nanmax(v), np.nanmin(v)])
