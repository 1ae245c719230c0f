"""A conditional expression runs only its taken side: `p[i - 1] if i >= 1 else 0.0` never loads
(or, in the adjoint, writes the gradient of) an element outside the field."""
import numpy as np
import pytest

import fieldsim as fs


def _setup(n):
    p = fs.field(fs.f64, shape=n, needs_grad=True)
    out = fs.field(fs.f64, shape=n, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    return p, out, loss


def test_guarded_neighbour_loads_forward_and_gradient():
    n = 16
    p, out, loss = _setup(n)

    @fs.kernel
    def stencil():
        for i in range(n):
            left = p[i - 1] if i >= 1 else 0.0
            far = p[i + 100000] if i + 100000 < n else p[i] * 2.0
            right = p[i + 1] ** 2 if 0 <= i + 1 < n else fs.Vector([1.0, 2.0])[0]
            out[i] = left * 3.0 + far + right

    @fs.kernel
    def total():
        for i in range(n):
            loss[None] += out[i] * (i + 1)

    def forward(vals):
        p.from_numpy(vals)
        loss[None] = 0.0
        stencil()
        total()
        return loss[None]

    rng = np.random.default_rng(1)
    vals = rng.normal(size=n)
    forward(vals)
    expect = np.array([(3 * vals[i - 1] if i >= 1 else 0.0) + 2 * vals[i]
                       + (vals[i + 1] ** 2 if i + 1 < n else 1.0) for i in range(n)])
    assert np.allclose(out.to_numpy(), expect)

    p.from_numpy(vals)
    with fs.Tape(loss):
        stencil()
        total()
    g = p.grad.to_numpy()
    eps = 1e-6
    for k in range(n):
        d = np.zeros(n)
        d[k] = eps
        fd = (forward(vals + d) - forward(vals - d)) / (2 * eps)
        assert g[k] == pytest.approx(fd, rel=1e-6, abs=1e-8)


def test_guard_with_debug_bounds_checks_does_not_trip():
    fs.init(arch=fs.cpu, debug=True)
    n = 8
    p = fs.field(fs.f32, shape=n)
    out = fs.field(fs.f32, shape=n)

    @fs.kernel
    def k():
        for i in range(n):
            out[i] = p[i + 1] if i + 1 < n else -1.0

    p.from_numpy(np.arange(n, dtype=np.float32))
    k()
    assert list(out.to_numpy()) == [1, 2, 3, 4, 5, 6, 7, -1]


def test_pure_conditional_expression_still_works_on_vectors():
    out = fs.Vector.field(2, fs.f32, shape=4)

    @fs.kernel
    def k():
        for i in range(4):
            a = fs.Vector([i, -i])
            out[i] = a if i % 2 == 0 else a * 10.0

    k()
    assert np.allclose(out.to_numpy(), [[0, 0], [10, -10], [2, -2], [30, -30]])
