"""The setup of the access-rule tests that read one half of a field and write the other:
`x` (N values), `y` (2N: `fill` writes x^2 into the first half, kernels under test the second),
`loss` (`total` sums y's second half), in f64 (the tests init with default_fp f64)."""
import numpy as np

import fieldsim as fs

N = 4
X0 = np.array([0.3, -0.8, 0.5, 1.1])


def half_fields():
    """(x, y, loss, fill, total), x set to X0."""
    x = fs.field(float, shape=N, needs_grad=True, name="x")
    y = fs.field(float, shape=2 * N, needs_grad=True, name="y")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    x.from_numpy(X0)

    @fs.kernel
    def fill():
        for i in range(N):
            y[i] = x[i] ** 2

    @fs.kernel
    def total():
        for i in range(N):
            loss[None] += y[i + N]

    return x, y, loss, fill, total
