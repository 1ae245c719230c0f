"""Small fieldsim programs several tests share."""
from types import SimpleNamespace

import numpy as np

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


def unit_that_overwrites(n: int = 8) -> SimpleNamespace:
    """A `grad_replaced` unit `step` around `overwrite` (x[i] = x[i] ** 2: read, then written
    again, so its adjoint would be wrong; a linear `x[i] *= 2` would be accepted), whose backward calls `overwrite.grad()`, and a
    kernel `total` (loss += sum x + y) after it. A Tape over `step(); total()` is refused: the
    unit's launch is judged when the backward makes the adjoints. x = 0, 1, ..., n - 1."""
    x = fs.field(fs.f32, shape=n, needs_grad=True)
    y = fs.field(fs.f32, shape=n, needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def overwrite():
        for i in x:
            x[i] = x[i] * x[i]

    @fs.kernel
    def total():
        for i in x:
            loss[None] += x[i] + y[i]

    @fs.ad.grad_replaced
    def step():
        overwrite()

    @fs.ad.grad_for(step)
    def step_grad():
        overwrite.grad()

    x.from_numpy(np.arange(n, dtype=np.float32))
    return SimpleNamespace(x=x, y=y, loss=loss, overwrite=overwrite, total=total, step=step)


def cube_sum_through_torch() -> SimpleNamespace:
    """x (4 f64) and y (0-d), both with gradients, and `f = fs.ad.torch_function` of a tensor t:
    x.from_torch(t), y = sum x^3 by a kernel, y.to_torch(). df/dt = 3 t^2 (needs torch)."""
    x = fs.field(fs.f64, shape=4, needs_grad=True)
    y = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def cube_sum():
        for i in x:
            y[None] += x[i] ** 3

    @fs.ad.torch_function
    def f(t):
        x.from_torch(t)
        y.fill(0)
        cube_sum()
        return y.to_torch()
    return SimpleNamespace(x=x, y=y, f=f)


def static_factorial():
    """A real_func recursing on a template argument: unrolled at compile time, never a call."""
    @fs.real_func
    def fact(n: fs.template()) -> fs.i32:
        r = 1
        if fs.static(n > 1):
            r = n * fact(n - 1)
        return r
    return fact


def fibonacci_pairs():
    """`run_fib(n)`, the n-th Fibonacci number as i64, through a `real_func` returning the pair
    (F(n), F(n+1)) that calls itself n deep, and `no_calls()`, a kernel returning 1 that makes
    no real call."""
    @fs.real_func
    def fib_pair(n: fs.i32) -> (fs.i64, fs.i64):
        if n == 0:
            return fs.i64(0), fs.i64(1)
        a, b = fib_pair(n - 1)
        return b, a + b

    @fs.kernel
    def run_fib(n: fs.i32) -> fs.i64:
        a, _ = fib_pair(n)
        return a

    @fs.kernel
    def no_calls() -> fs.i32:
        return 1

    return SimpleNamespace(run_fib=run_fib, no_calls=no_calls)


def run_func_body(body, in_loop: bool) -> None:
    """Runs the `@fs.func` `body` once, from a kernel's top level or from inside a one-trip
    parallel loop (kernel-scope variables and loop-local ones take different paths)."""
    @fs.kernel
    def top():
        body()

    @fs.kernel
    def loop():
        for _ in range(1):
            body()

    (loop if in_loop else top)()
