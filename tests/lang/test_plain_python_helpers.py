"""Plain (undecorated) Python helpers a kernel calls with its values, as sorting-network code
found on GitHub writes them: `isinstance(data, ti.lang.expr.Expr)` picks a local vector's length
from `.n`, else a field's `shape[0]`, and `ti.static(helper(data))` needs that length as a
constant. Taichi 1.7.4 runs such a helper in Python on its Expr values. Before the fix
`ti.lang.expr.Expr` and `ti.lang.Vector` were missing, `isinstance` on a kernel value was refused,
and a helper returning from both branches of an if/else gave a runtime variable that
`ti.static` refused."""
import numpy as np
import pytest

import fieldsim as fs


def length(data):
    if isinstance(data, fs.lang.expr.Expr) or isinstance(data, fs.lang.Vector):
        return data.n
    else:
        return data.shape[0]


def kind(v):
    return 1 if isinstance(v, fs.lang.expr.Expr) else 0


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


def test_helper_length_is_a_constant_for_vectors_and_fields():
    out = fs.field(fs.i32, shape=4)
    data = fs.field(fs.f32, shape=7)

    @fs.kernel
    def k():
        v = fs.Vector([3.0, 1.0, 2.0])
        for i in fs.static(range(length(v))):  # 3, unrolled
            out[0] += 1
        out[1] = fs.static(length(data))
        out[2] = fs.static(length(v + 1.0))
        m = fs.Matrix([[1.0, 2.0], [3.0, 4.0]])
        out[3] = fs.static(length(m))

    k()
    assert out.to_numpy().tolist() == [3, 7, 3, 2]


def test_isinstance_expr_tells_kernel_values_from_constants_and_fields():
    out = fs.field(fs.i32, shape=5)
    a = fs.field(fs.f32, shape=2)

    @fs.kernel
    def k(s: fs.i32):
        out[0] = fs.static(kind(a[0]))  # a runtime scalar
        out[1] = fs.static(kind(fs.Vector([s, s])))
        out[2] = fs.static(kind(s + 1))
        out[3] = fs.static(kind(a))  # a field
        out[4] = fs.static(kind(3))

    k(2)
    assert out.to_numpy().tolist() == [1, 1, 1, 0, 0]


def test_runtime_branch_returns_stay_runtime():
    # only a return outside every runtime `if` is the value itself
    out = fs.field(fs.f32, shape=3)

    def pick(x):
        if x > 0.5:
            return x * 2.0
        else:
            return -x

    @fs.kernel
    def k():
        for i in range(3):
            out[i] = pick(fs.f32(i) * 0.5)

    k()
    np.testing.assert_allclose(out.to_numpy(), [0.0, -0.5, 2.0])


def test_expr_is_not_constructed():
    with pytest.raises(TypeError):
        fs.lang.expr.Expr()


def test_user_class_getitem_with_constant_and_runtime_keys():
    # taichi-dev/taichi#3046: a user's lookup object indexed in a kernel (constant keys call it at
    # compile time; runtime keys run its __getitem__ on the kernel values, as Taichi does)
    class Table:
        def __init__(self):
            self.d = {"a": 2, "b": 3}
            self.f = fs.field(fs.f32, shape=(3, 4))

        def __getitem__(self, k):
            if isinstance(k, str):
                return self.d[k]
            return self.f[k] * 2

    tab = Table()
    tab.f.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))

    @fs.kernel
    def k(i: fs.i32, j: fs.i32) -> fs.f32:
        return tab["a"] * tab["b"] + tab[i, j]

    assert k(2, 1) == 6 + 18
