"""Small fieldsim programs several tests share."""
from types import SimpleNamespace

import fieldsim as fs


def square_then_sum(n: int) -> SimpleNamespace:
    """x, y, loss (all with gradients) and two kernels, `square` (y = x^2) and `total`
    (loss += sum y): a Tape over both makes two adjoints, so a backward compiles them
    together on the backend's compile threads. d loss / d x = 2 x."""
    x = fs.field(fs.f32, shape=n, needs_grad=True)
    y = fs.field(fs.f32, shape=n, needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def square():
        for i in x:
            y[i] = x[i] * x[i]

    @fs.kernel
    def total():
        for i in y:
            loss[None] += y[i]

    return SimpleNamespace(x=x, y=y, loss=loss, square=square, total=total)
