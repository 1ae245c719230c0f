"""A small differentiable chain for the access-rule relaxation tests (companion reads, free
reads): `x` -> `init` (v, p, y from x) -> the steps under test, launched `launches` times ->
`final` (loss). Gradients by a Tape or by hand are compared with float64 central differences
of the whole chain; a refused step is checked to name its line."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import AccessRuleError

N = 4
X0 = np.array([0.3, -0.7, 1.1, 0.45])


class Chain:
    """`make_steps(x, v, p, y, c)` gives the step kernel(s); `c` is a field without gradient
    (a coefficient, 0.5 + 0.1 i). `y_from_x`: `init` sets y = cos(x), else 0."""

    def __init__(self, make_steps, y_from_x=True):
        fs.init(arch=fs.cpu, default_fp=fs.f64)
        x, v, p, y = (fs.field(fs.f64, N, needs_grad=True) for _ in range(4))
        c = fs.field(fs.f64, N)
        loss = fs.field(fs.f64, (), needs_grad=True)

        @fs.kernel
        def init():
            for i in range(N):
                v[i] = x[i] * 1.3 + 0.1
                p[i] = x[i] * x[i]
                if fs.static(y_from_x):
                    y[i] = fs.cos(x[i])
                else:
                    y[i] = 0.0

        @fs.kernel
        def final():
            for i in range(N):
                loss[None] += fs.sin(p[i]) + y[i] * y[i] + fs.cos(v[i])

        c.from_numpy(0.5 + 0.1 * np.arange(N))
        steps = make_steps(x, v, p, y, c)
        self.steps = list(steps) if isinstance(steps, (list, tuple)) else [steps]
        self.x, self.loss, self.init, self.final = x, loss, init, final

    def forward(self, launches):
        self.init()
        for _ in range(launches):
            for k in self.steps:
                k()
        self.final()

    def value(self, xv, launches) -> float:
        self.x.from_numpy(xv)
        self.loss[None] = 0.0
        self.forward(launches)
        return self.loss[None]

    def differences(self, launches, h=1e-6) -> np.ndarray:
        return np.array([(self.value(X0 + h * e, launches) - self.value(X0 - h * e, launches))
                         / (2 * h) for e in np.eye(N)])

    def _start(self):
        self.x.from_numpy(X0)
        self.x.grad.fill(0.0)
        self.loss[None] = 0.0

    def tape_gradient(self, launches, **tape_options) -> np.ndarray:
        self._start()
        with fs.ad.Tape(self.loss, **tape_options):
            self.forward(launches)
        return self.x.grad.to_numpy()

    def hand_gradient(self, launches) -> np.ndarray:
        """Each kernel's `.grad()` called in reverse launch order, the loss seeded by hand."""
        self._start()
        self.forward(launches)
        self.loss.grad[None] = 1.0
        self.final.grad()
        for _ in range(launches):
            for k in reversed(self.steps):
                k.grad()
        self.init.grad()
        return self.x.grad.to_numpy()

    def assert_refused_at(self, line: str):
        """One launch of the steps on a Tape is refused, the message quoting `line`."""
        self.x.from_numpy(X0)
        with pytest.raises(AccessRuleError) as info, fs.ad.Tape(self.loss):
            self.forward(1)
        assert line in str(info.value)


def assert_matches(gradient, differences):
    np.testing.assert_allclose(gradient, differences, rtol=1e-6, atol=1e-8)
