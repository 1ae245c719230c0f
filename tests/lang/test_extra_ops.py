"""`fs.static_assert`, `fs.raw_div`, `fs.raw_mod`, `fs.bit_shr`: C semantics checked against
Python's own arithmetic on the same integers, in kernels and Python scope."""
import math

import numpy as np
import pytest

import fieldsim as fs

PAIRS = [(7, 2), (-7, 2), (7, -2), (-7, -2), (6, 3), (0, 5)]


def test_raw_div_and_raw_mod_truncate_toward_zero():
    a = fs.field(fs.i32, shape=len(PAIRS))
    b = fs.field(fs.i32, shape=len(PAIRS))
    q = fs.field(fs.i32, shape=len(PAIRS))
    r = fs.field(fs.i32, shape=len(PAIRS))
    a.from_numpy(np.array([p[0] for p in PAIRS], np.int32))
    b.from_numpy(np.array([p[1] for p in PAIRS], np.int32))

    @fs.kernel
    def k():
        for i in a:
            q[i] = fs.raw_div(a[i], b[i])
            r[i] = fs.raw_mod(a[i], b[i])

    k()
    for i, (x, y) in enumerate(PAIRS):
        want_q = int(x / y)  # truncation toward zero
        assert q[i] == want_q
        assert r[i] == x - y * want_q == fs.raw_mod(x, y)
        # on two Python ints Taichi 1.7.4 folds raw_div with Python's floor `//` (its c_div)
        assert fs.raw_div(x, y) == x // y


def test_raw_mod_of_floats_is_fmod():
    @fs.kernel
    def k(x: fs.f64, y: fs.f64) -> fs.f64:
        return fs.raw_mod(x, y)

    for x, y in [(7.5, 2.0), (-7.5, 2.0), (7.5, -2.0)]:
        assert k(x, y) == pytest.approx(math.fmod(x, y))
        assert fs.raw_mod(x, y) == pytest.approx(math.fmod(x, y))


def test_bit_shr_is_a_logical_shift():
    @fs.kernel
    def shr(a: fs.i32, b: fs.i32) -> fs.i32:
        return fs.bit_shr(a, b)

    for s in range(1, 5):
        want = ((-256) & 0xFFFFFFFF) >> s
        assert shr(-256, s) == want == fs.bit_shr(-256, s)
    assert shr(256, 3) == 32


def test_static_assert():
    x = fs.Vector.field(4, fs.f32, shape=())

    @fs.kernel
    def ok():
        fs.static_assert(x.n == 4)

    @fs.kernel
    def bad():
        fs.static_assert(x.n == 3, "needs a 3-vector")

    @fs.kernel
    def runtime_cond():
        v = 1
        fs.static_assert(v, "no")

    ok()
    with pytest.raises(fs.FieldsimCompilationError, match="needs a 3-vector"):
        bad()
    with pytest.raises(fs.FieldsimTypeError, match="non-static condition"):
        runtime_cond()


def test_raw_div_of_python_int_constants_in_a_kernel_folds_as_taichi_does():
    # Taichi 1.7.4: floor division for two Python ints (folded), C division for kernel values
    n = -7

    @fs.kernel
    def k(d: fs.i32) -> fs.types.vector(4, fs.i32):
        return fs.Vector([fs.raw_div(n, 2), fs.raw_mod(n, 2), fs.raw_div(n, d), fs.raw_mod(n, d)])

    assert k(2).to_list() == [-4, -1, -3, -1]
