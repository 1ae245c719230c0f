"""A corpus of small differentiable kernels, one entry per AD rule or control-flow shape.

Each entry is registered with `@entry(...)` on a builder. After `fs.init(default_fp=...)`
the builder creates its fields (`float` means the default fp), kernels and a `Case`:

- `inputs`: {name: field} with `needs_grad`; their initial values come from the
  entry's specs (`U` uniform, `V` explicit), drawn with a numpy seed fixed per entry;
- `loss`: a 0-D field with `needs_grad`;
- `run()`: the kernel launches computing the loss (what goes inside the Tape);
- `reset()`: optional, restores non-input state before every forward (outside the Tape);
- `extra`: other fields an analytic gradient may read.

`analytic(v, case)` (optional) returns the exact gradients from the float64 input
values `v` actually stored in the fields. `beyond` says why Taichi 1.7 gets the entry
wrong (those are xfail under FIELDSIM_AS_TAICHI=1, skipped there when `taichi_crash`, and
have a dedicated test in test_beyond.py or are the dedicated test). `taichi_opts` are extra `ti.init` options used only under Taichi
(Taichi needs `ad_stack_size` raised by hand; fieldsim must size its AD stack itself).

Every kernel obeys the global data access rules (API.md): no element is written after
it was read, and an element written more than once is only ever atomically added to.
"""
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dc_field

import numpy as np

import fieldsim as fs

N = 4  # elements per input field: few, so that finite differences stay cheap

CORPUS = []


@dataclass
class U:
    """Uniform values in [lo, hi] (times a random sign when `signed`)."""

    lo: float
    hi: float
    shape: tuple = (N,)
    signed: bool = False

    def draw(self, rng):
        v = rng.uniform(self.lo, self.hi, self.shape)
        if self.signed:
            v *= rng.choice([-1.0, 1.0], self.shape)
        return v


@dataclass
class V:
    """Explicit values (kept away from kinks by hand) plus a little noise."""

    values: list
    noise: float = 0.01

    def draw(self, rng):
        v = np.asarray(self.values, dtype=np.float64)
        return v + rng.uniform(-self.noise, self.noise, v.shape)


@dataclass
class Case:
    inputs: dict
    loss: object
    run: Callable[[], None]
    reset: Callable[[], None] | None = None
    extra: dict = dc_field(default_factory=dict)


@dataclass
class Entry:
    name: str
    build: Callable[[], Case]
    specs: dict
    analytic: Callable | None = None
    beyond: str | None = None
    fd: bool = True
    fd_eps: float | None = None
    tol: str | None = None  # "f32": compare at f32 tolerances even in f64
    taichi_opts: dict = dc_field(default_factory=dict)
    taichi_crash: bool = False  # Taichi aborts the interpreter on it: skipped, not xfail, there

    def values(self):
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        return {name: spec.draw(rng) for name, spec in self.specs.items()}

    def __repr__(self):
        return self.name


def entry(specs, analytic=None, **kw):
    def register(build):
        CORPUS.append(Entry(build.__name__, build, specs, analytic, **kw))
        return build

    return register


def scalar_loss():
    return fs.field(float, shape=(), needs_grad=True, name="loss")


def vec(name, n=N):
    return fs.field(float, shape=n, needs_grad=True, name=name)


def _sum_rows(g, idx, n):
    out = np.zeros(n)
    np.add.at(out, idx, g)
    return out


# --------------------------------------------------------------------------- arithmetic


@entry({"x": U(0.2, 1.0, signed=True), "y": U(0.2, 1.0, signed=True)},
       analytic=lambda v, c: {"x": 2 * v["x"] - v["y"], "y": -v["x"] - 4 * v["y"]})
def add_sub_mul():
    x, y, loss = vec("x"), vec("y"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += (x[i] + y[i]) * (x[i] - 2.0 * y[i])

    return Case({"x": x, "y": y}, loss, k)


@entry({"x": U(0.3, 1.0, signed=True), "y": U(0.5, 1.5)},
       analytic=lambda v, c: {
           "x": 1 / v["y"] - 1 / (v["x"] ** 2 * v["y"]),
           "y": -v["x"] / v["y"] ** 2 - 1 / (v["x"] * v["y"] ** 2)})
def div():
    x, y, loss = vec("x"), vec("y"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += x[i] / y[i] + 1.0 / (x[i] * y[i])

    return Case({"x": x, "y": y}, loss, k)


@entry({"x": U(0.2, 1.0, signed=True), "y": U(0.2, 1.0, signed=True)},
       analytic=lambda v, c: {"x": -3 * v["x"] ** 2, "y": np.ones(N)})
def neg():
    x, y, loss = vec("x"), vec("y"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            z = -x[i]
            loss[None] += z * z * z - (-y[i])

    return Case({"x": x, "y": y}, loss, k)


@entry({"x": U(0.5, 2.0)},
       analytic=lambda v, c: {"x": 2.5 * v["x"] ** 1.5 - 0.5 * v["x"] ** -1.5})
def pow_float_exponent():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += x[i] ** 2.5 + x[i] ** (-0.5)

    return Case({"x": x}, loss, k)


@entry({"x": U(0.5, 2.0), "y": U(-1.5, 1.5)},
       analytic=lambda v, c: {"x": v["y"] * v["x"] ** (v["y"] - 1),
                              "y": v["x"] ** v["y"] * np.log(v["x"])})
def pow_field_exponent():
    x, y, loss = vec("x"), vec("y"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += fs.pow(x[i], y[i])

    return Case({"x": x, "y": y}, loss, k)


@entry({"x": U(0.5, 1.5, signed=True)},
       analytic=lambda v, c: {"x": 3 * v["x"] ** 2 + 4 * v["x"] - 2 * v["x"] ** -3.0})
def pow_int_exponent():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += x[i] ** 3 + 2.0 * x[i] ** 2 + x[i] ** (-2)

    return Case({"x": x}, loss, k)


# --------------------------------------------------------------------------- math functions


@entry({"x": U(0.3, 2.0), "y": U(0.1, 1.0)},
       analytic=lambda v, c: {
           "x": np.sqrt(v["x"] + v["y"]) / (2 * np.sqrt(v["x"]))
           + np.sqrt(v["x"]) / (2 * np.sqrt(v["x"] + v["y"])),
           "y": np.sqrt(v["x"]) / (2 * np.sqrt(v["x"] + v["y"]))})
def sqrt():
    x, y, loss = vec("x"), vec("y"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += fs.sqrt(x[i]) * fs.sqrt(x[i] + y[i])

    return Case({"x": x, "y": y}, loss, k)


@entry({"x": U(0.0, 3.0, signed=True)}, analytic=lambda v, c: {"x": np.cos(v["x"])})
def sin():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += fs.sin(x[i])

    return Case({"x": x}, loss, k)


@entry({"x": U(0.0, 3.0, signed=True)}, analytic=lambda v, c: {"x": -2 * np.sin(2 * v["x"])})
def cos():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += fs.cos(2.0 * x[i])

    return Case({"x": x}, loss, k)


@entry({"x": U(0.0, 1.2, signed=True)}, analytic=lambda v, c: {"x": 1 / np.cos(v["x"]) ** 2},
       beyond="Taichi 1.7 has no adjoint for tan: RuntimeError 'Not supported' at backward")
def tan():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += fs.tan(x[i])

    return Case({"x": x}, loss, k)


@entry({"x": U(0.05, 0.8, signed=True)},
       analytic=lambda v, c: {"x": 1 / np.sqrt(1 - v["x"] ** 2)})
def asin():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += fs.asin(x[i])

    return Case({"x": x}, loss, k)


@entry({"x": U(0.05, 0.8, signed=True)},
       analytic=lambda v, c: {"x": -1 / np.sqrt(1 - v["x"] ** 2)})
def acos():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += fs.acos(x[i])

    return Case({"x": x}, loss, k)


@entry({"y": V([0.5, -0.7, 0.9, -0.3]), "x": V([0.8, 0.6, -0.5, -0.9])},
       analytic=lambda v, c: {"y": v["x"] / (v["x"] ** 2 + v["y"] ** 2),
                              "x": -v["y"] / (v["x"] ** 2 + v["y"] ** 2)})
def atan2():
    y, x, loss = vec("y"), vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += fs.atan2(y[i], x[i])

    return Case({"y": y, "x": x}, loss, k)


@entry({"x": U(0.0, 2.0, signed=True)}, analytic=lambda v, c: {"x": 1 - np.tanh(v["x"]) ** 2})
def tanh():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += fs.tanh(x[i])

    return Case({"x": x}, loss, k)


@entry({"x": U(0.0, 1.5, signed=True)}, analytic=lambda v, c: {"x": 0.5 * np.exp(0.5 * v["x"])})
def exp():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += fs.exp(0.5 * x[i])

    return Case({"x": x}, loss, k)


@entry({"x": U(0.2, 3.0)}, analytic=lambda v, c: {"x": 1 / v["x"] + 2 * np.log(v["x"]) / v["x"]})
def log():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += fs.log(x[i]) + fs.log(x[i]) ** 2

    return Case({"x": x}, loss, k)


@entry({"x": V([-0.8, -0.3, 0.4, 0.9]), "y": U(0.5, 1.5)},
       analytic=lambda v, c: {"x": np.sign(v["x"]) * v["y"], "y": np.abs(v["x"])})
def abs():
    x, y, loss = vec("x"), vec("y"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += fs.abs(x[i]) * y[i]

    return Case({"x": x, "y": y}, loss, k)


@entry({"x": V([0.1, 0.9, -0.5, 0.3]), "y": V([0.6, 0.2, -0.1, -0.4])},
       analytic=lambda v, c: {"x": np.where(v["x"] < v["y"], 2 * v["x"], 0.0),
                              "y": np.where(v["x"] < v["y"], 0.0, 2 * v["y"])})
def min():
    x, y, loss = vec("x"), vec("y"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            m = fs.min(x[i], y[i])
            loss[None] += m * m

    return Case({"x": x, "y": y}, loss, k)


@entry({"x": V([0.1, 0.9, -0.5, 0.3]), "y": V([0.6, 0.2, -0.1, -0.4])},
       analytic=lambda v, c: {"x": np.where(v["x"] > v["y"], np.cos(v["x"]), 0.0),
                              "y": np.where(v["x"] > v["y"], 0.0, np.cos(v["y"]))})
def max():
    x, y, loss = vec("x"), vec("y"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += fs.sin(fs.max(x[i], y[i]))

    return Case({"x": x, "y": y}, loss, k)


@entry({"x": V([0.1, 0.9, -0.5, 0.3]), "y": V([0.6, 0.2, -0.1, -0.4])},
       analytic=lambda v, c: {"x": np.where(v["x"] > v["y"], 2 * v["x"], 0.0),
                              "y": np.where(v["x"] > v["y"], 0.0, 3.0)})
def select():
    x, y, loss = vec("x"), vec("y"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += fs.select(x[i] > y[i], x[i] * x[i], 3.0 * y[i])

    return Case({"x": x, "y": y}, loss, k)


def _cast_grads(v, c):
    a = v["x"] * v["w"]
    return {"x": 2 * np.cos(a) * v["w"], "w": 2 * np.cos(a) * v["x"]}


@entry({"x": U(0.2, 1.0), "w": U(0.2, 1.0)}, analytic=_cast_grads, tol="f32", fd_eps=1e-3)
def cast_f32_f64():
    # x is f32 and w f64 whatever the default: the chain crosses both casts
    x = fs.field(fs.f32, shape=N, needs_grad=True, name="x")
    w = fs.field(fs.f64, shape=N, needs_grad=True, name="w")
    loss = scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            a = fs.cast(x[i], fs.f64) * w[i]
            b = fs.cast(fs.sin(a), fs.f32)
            loss[None] += 2.0 * b

    return Case({"x": x, "w": w}, loss, k)


def _int_ops_grads(v, c):
    x = v["x"]
    k = np.floor(x * 4.0)
    m = np.trunc(x * 10.0).astype(int) // 3
    branch = np.where(np.trunc(x * 10.0).astype(int) % 2 == 0, 1.0, 2.0)
    return {"x": 2 * x * k + m + branch}


@entry({"x": V([0.13, 0.37, 0.64, 0.86, 1.12, 1.43])}, analytic=_int_ops_grads)
def int_ops_no_grad():
    # floor, int(), // and % only pick constants; comparisons only pick a branch
    x, loss = fs.field(float, shape=6, needs_grad=True, name="x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            kf = fs.floor(x[i] * 4.0)
            ki = int(x[i] * 10.0)
            m = ki // 3
            loss[None] += x[i] * x[i] * kf + x[i] * m
            if ki % 2 == 0:
                loss[None] += x[i]
            else:
                loss[None] += 2.0 * x[i]

    return Case({"x": x}, loss, k)


@fs.func
def _frac(v):
    # Taichi's test_ad_frac
    return v - fs.floor(v) if v > 0.0 else v - fs.ceil(v)


def _frac_mod(v, c):
    x, m = v["x"], v["m"]
    z = 1.7 * x
    fr = np.where(z > 0, z - np.floor(z), z - np.ceil(z))
    return {"x": 2 * fr * 1.7 + 1.0, "m": -np.floor(x / m)}


@entry({"x": V([-1.9, -0.8, 0.45, 1.3, 2.3]), "m": V([0.7, 0.65, 0.7, 0.75, 0.7])}, analytic=_frac_mod)
def frac_and_float_mod():
    # floor/ceil carry no gradient; a % m (floored, as in Python) has d/da = 1, d/dm = -floor(a/m)
    x = fs.field(float, shape=5, needs_grad=True, name="x")
    m = fs.field(float, shape=5, needs_grad=True, name="m")
    loss = scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += _frac(x[i] * 1.7) ** 2 + x[i] % m[i]

    return Case({"x": x, "m": m}, loss, k)


@entry({"x": U(0.3, 1.0, shape=(6,)), "y": U(0.3, 1.0, shape=(6,))},
       analytic=lambda v, c: {"x": np.ones(6), "y": np.arange(6.0)})
def loop_index_as_value():
    # the parallel loop index enters arithmetic (and carries no gradient itself)
    x = fs.field(float, shape=6, needs_grad=True, name="x")
    y = fs.field(float, shape=6, needs_grad=True, name="y")
    loss = scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += x[i] + y[i] * fs.cast(i, float)

    return Case({"x": x, "y": y}, loss, k)


# --------------------------------------------------------------------------- control flow


def _branchy(v, c):
    x, y = v["x"], v["y"]
    gx = np.where(x > 0.8, 2 * x * y, np.where(x > 0.0, np.cos(x) * y, -3 * y))
    gy = np.where(x > 0.8, x * x, np.where(x > 0.0, np.sin(x), -3 * x))
    return {"x": gx, "y": gy}


@entry({"x": V([-1.2, -0.4, 0.3, 0.6, 1.1, 1.4]), "y": U(0.5, 1.5, shape=(6,))}, analytic=_branchy)
def if_elif_else():
    x = fs.field(float, shape=6, needs_grad=True, name="x")
    y = fs.field(float, shape=6, needs_grad=True, name="y")
    loss = scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            v = x[i]
            if v > 0.8:
                loss[None] += v * v * y[i]
            elif v > 0.0:
                loss[None] += fs.sin(v) * y[i]
            else:
                loss[None] += -3.0 * v * y[i]

    return Case({"x": x, "y": y}, loss, k)


def _nested_if(v, c):
    x, y = v["x"], v["y"]
    gx = np.where(x > 0, np.where(y > 0, y, 1.0), np.where(y > 0.5, np.exp(x) * y, 2 * x))
    gy = np.where(x > 0, np.where(y > 0, x, -2 * y), np.where(y > 0.5, np.exp(x), 0.0))
    return {"x": gx, "y": gy}


@entry({"x": V([0.5, 0.7, 0.4, -0.6, -0.3, -0.9, -0.2, 0.9]),
        "y": V([0.6, -0.4, -0.8, 0.9, 0.2, -0.5, 0.7, 0.3])}, analytic=_nested_if)
def nested_if():
    x = fs.field(float, shape=8, needs_grad=True, name="x")
    y = fs.field(float, shape=8, needs_grad=True, name="y")
    loss = scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            r = 0.0
            if x[i] > 0:
                if y[i] > 0:
                    r = x[i] * y[i]
                else:
                    r = x[i] - y[i] * y[i]
            else:
                if y[i] > 0.5:
                    r = fs.exp(x[i]) * y[i]
                else:
                    r = x[i] * x[i]
            loss[None] += r

    return Case({"x": x, "y": y}, loss, k)


def _static_for(v, c):
    x, w = v["x"], v["w"]
    gx = sum((j + 1) * x ** j * w[j] for j in range(3))
    gw = np.array([np.sum(x ** (j + 1)) for j in range(3)])
    return {"x": gx, "w": gw}


@entry({"x": U(0.2, 1.0, signed=True), "w": U(0.5, 1.5, shape=(3,))}, analytic=_static_for)
def static_for():
    x, w, loss = vec("x"), fs.field(float, shape=3, needs_grad=True, name="w"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            s = 0.0
            for j in fs.static(range(3)):
                s += x[i] ** (j + 1) * w[j]
            loss[None] += s

    return Case({"x": x, "w": w}, loss, k)


USE_SIN = True
ORDER = 3


@entry({"x": U(0.0, 1.5, signed=True)},
       analytic=lambda v, c: {"x": np.cos(v["x"]) + 3 * v["x"] ** 2})
def static_if():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            if fs.static(USE_SIN):
                loss[None] += fs.sin(x[i])
            else:
                loss[None] += fs.cos(x[i])
            if fs.static(ORDER > 2):
                loss[None] += x[i] ** ORDER
            else:
                loss[None] += x[i]

    return Case({"x": x}, loss, k)


@entry({"x": U(0.2, 1.0, signed=True)})
def loop_carried_short():
    # 20 serial iterations carrying a non-linear local (fits Taichi's default AD stack)
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            s = 0.0
            for j in range(20):
                s = s * 0.9 + fs.sin(x[i] * j * 0.1 + s * 0.1)
            loss[None] += s

    return Case({"x": x}, loss, k)


@entry({"x": U(0.5, 0.8)}, taichi_opts={"ad_stack_size": 4096})
def loop_carried_1000():
    # 1000 iterations: Taichi needs ad_stack_size raised by hand (it segfaults at its
    # default of 32 entries); fieldsim must size the stack from the loop bound itself
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            s = 0.0
            for j in range(1000):
                s = s * 0.99 + fs.sin(x[i] * j * 0.001 + s * 0.01)
            loss[None] += s

    return Case({"x": x}, loss, k)


@entry({"x": U(0.5, 0.8)},
       analytic=lambda v, c: {"x": np.full(N, sum(0.99 ** (999 - j) * j for j in range(1000)))},
       taichi_opts={"ad_stack_size": 4096})
def loop_carried_linear_1000():
    # s = s * 0.99 + x[i] * k for k < n, n = 1000 given at launch
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k(n: fs.i32):
        for i in x:
            s = 0.0
            for j in range(n):
                s = s * 0.99 + x[i] * j
            loss[None] += s

    return Case({"x": x}, loss, lambda: k(1000))


@entry({"x": U(0.2, 0.9), "y": U(0.1, 1.0)})
def nested_inner_loops():
    x, y, loss = vec("x"), vec("y"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            s = 0.0
            for a in range(4):
                t = x[i]
                for b in range(3):
                    t = t * fs.cos(y[i] * b) + 0.1 * a
                s = s * 0.5 + t * t
            loss[None] += s

    return Case({"x": x, "y": y}, loss, k)


@entry({"x": U(0.3, 0.9)}, taichi_opts={"ad_stack_size": 256})
def loop_dynamic_bound():
    # the trip count is a kernel argument, known only at launch
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k(n: fs.i32):
        for i in x:
            s = x[i]
            for j in range(n):
                s = s * 0.97 + 0.05 * fs.sin(s + j * 0.1)
            loss[None] += s * s

    return Case({"x": x}, loss, lambda: k(60))


@entry({"x": U(0.5, 1.0)},
       beyond="Taichi 1.7 refuses while loops in reverse mode: RuntimeError 'Not supported'")
def while_data_dependent():
    # the trip count depends on x (1 to 5 steps); the carried local is reversed step by step
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            s = x[i]
            while s < 3.0:
                s = s * 1.3 + 0.1 * x[i] * s + 0.2
            loss[None] += s * s

    return Case({"x": x}, loss, k)


@entry({"x": U(0.2, 1.0, signed=True)},
       beyond="Taichi 1.7 refuses while loops in reverse mode: RuntimeError 'Not supported'")
def while_counter():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            s = x[i]
            j = 0
            while j < 12:
                s = fs.sin(s) * 0.8 + x[i] * 0.3
                j += 1
            loss[None] += s

    return Case({"x": x}, loss, k)


@entry({"x": U(0.2, 1.0)},
       beyond="Taichi 1.7 refuses break in reverse mode: RuntimeError 'Not supported'")
def loop_break():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            s = x[i]
            for j in range(20):
                s = s * 1.2 + x[i] * x[i]
                if s > 5.0:
                    break
            loss[None] += s

    return Case({"x": x}, loss, k)


@entry({"x": U(0.1, 0.5)},
       beyond="Taichi 1.7 refuses continue in reverse mode: RuntimeError 'Not supported'")
def loop_continue():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            s = 0.0
            for j in range(10):
                if j % 3 == 0:
                    continue
                if x[i] * j > 2.0:
                    continue
                s = s * 0.9 + fs.sin(x[i] * j)
            loss[None] += s

    return Case({"x": x}, loss, k)


@entry({"x": V([0.35, 0.5, 0.75, 1.05], noise=0.002)})
def loop_carried_branches():
    # carried locals updated in data-dependent branches inside a serial loop
    # (values chosen so that s stays >= 0.03 away from the branch threshold)
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            s = x[i]
            c = 0.0
            for j in range(10):
                if s > 1.0:
                    s = s * 0.7
                    c += s * s
                else:
                    s = s * 1.4 + x[i] * 0.1
            loss[None] += s + c

    return Case({"x": x}, loss, k)


M_READ = 5


@entry({"x": U(0.2, 1.0, signed=True), "a": U(0.2, 1.0, shape=(M_READ,), signed=True),
        "b": U(0.0, 1.0, shape=(M_READ,))})
def inner_loop_field_reads():
    # every thread reads all of a and b inside a carried loop: their adjoints accumulate
    # across threads
    x, loss = vec("x"), scalar_loss()
    a = fs.field(float, shape=M_READ, needs_grad=True, name="a")
    b = fs.field(float, shape=M_READ, needs_grad=True, name="b")

    @fs.kernel
    def k():
        for i in x:
            s = 0.0
            for j in range(M_READ):
                s = s * 0.5 + a[j] * fs.sin(x[i] + b[j])
            loss[None] += s * s

    return Case({"x": x, "a": a, "b": b}, loss, k)


def _matvec_tanh(v, c):
    W, x = v["W"], v["x"]
    y = W @ x
    dy = 1 - np.tanh(y) ** 2
    return {"W": np.outer(dy, x), "x": W.T @ dy}


@entry({"W": U(0.1, 1.0, shape=(3, N), signed=True), "x": U(0.2, 1.0, signed=True)},
       analytic=_matvec_tanh)
def inner_loop_atomic_matvec():
    # y[i] += W[i, j] * x[j] from an inner serial loop, then a second kernel reads y
    W = fs.field(float, shape=(3, N), needs_grad=True, name="W")
    x = vec("x")
    y = fs.field(float, shape=3, needs_grad=True, name="y")
    loss = scalar_loss()

    @fs.kernel
    def matvec():
        for i in y:
            for j in range(N):
                y[i] += W[i, j] * x[j]

    @fs.kernel
    def squash():
        for i in y:
            loss[None] += fs.tanh(y[i])

    def run():
        matvec()
        squash()

    return Case({"W": W, "x": x}, loss, run, reset=lambda: y.fill(0.0))


@entry({"x": U(0.2, 1.0, signed=True), "y": U(0.2, 1.0, signed=True),
        "m": U(0.3, 0.8, shape=(4,), signed=True)},
       beyond="Taichi 1.7 silently drops most of the gradient of a local defined outside "
              "an inner loop and read inside it (M here): see loop_invariant_local")
def loop_carried_vector():
    # a 2-vector carried through 6 iterations of v = M v + c |v|^2, M read from a field
    x, y, loss = vec("x"), vec("y"), scalar_loss()
    m = fs.field(float, shape=4, needs_grad=True, name="m")

    @fs.kernel
    def k():
        for i in x:
            M = fs.Matrix([[m[0], m[1]], [m[2], m[3]]])
            v = fs.Vector([x[i], y[i]])
            for j in range(6):
                v = M @ v + fs.Vector([0.05, -0.1]) * v.norm_sqr()
            loss[None] += v.dot(v)

    return Case({"x": x, "y": y, "m": m}, loss, k)


@entry({"x": U(0.3, 1.0), "m": U(0.7, 1.1, shape=(1,))},
       analytic=lambda v, c: {"x": v["m"][0] ** 3 * np.ones(N),
                              "m": np.full(1, 3 * v["m"][0] ** 2 * np.sum(v["x"]))},
       beyond="Taichi 1.7 keeps only one iteration's share of the adjoint of a local "
              "defined outside an inner loop and read inside it: m.grad is 1/3 of the truth")
def loop_invariant_local():
    # a = m[0] is loaded once, outside the loop; s = a^3 x: d/dm = 3 a^2 x
    x, loss = vec("x"), scalar_loss()
    m = fs.field(float, shape=1, needs_grad=True, name="m")

    @fs.kernel
    def k():
        for i in x:
            a = m[0]
            s = x[i]
            for j in range(3):
                s = a * s
            loss[None] += s

    return Case({"x": x, "m": m}, loss, k)


@entry({"x": V([-0.8, -0.3, 0.4, 0.9])},
       analytic=lambda v, c: {"x": np.where(v["x"] > 0, 2 * v["x"], -1.0)})
def if_expression():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += x[i] * x[i] if x[i] > 0 else -x[i]

    return Case({"x": x}, loss, k)


@entry({"x": U(0.2, 1.0, signed=True), "y": U(0.2, 1.0, shape=(6,), signed=True)},
       analytic=lambda v, c: {"x": 2 * 0.5 * v["x"], "y": 3 * 1.5 * v["y"] ** 2})
def template_args():
    # one kernel specialised for two fields of different shapes
    x = vec("x")
    y = fs.field(float, shape=6, needs_grad=True, name="y")
    loss = scalar_loss()

    @fs.kernel
    def acc(f: fs.template(), w: float, p: fs.template()):
        for i in f:
            loss[None] += w * f[i] ** p

    def run():
        acc(x, 0.5, 2)
        acc(y, 1.5, 3)

    return Case({"x": x, "y": y}, loss, run)


# --------------------------------------------------------------------------- funcs


@fs.func
def _f_scalar(a, b):
    return a * fs.sin(b) + b * b


@entry({"x": U(0.2, 1.0, signed=True), "y": U(0.2, 1.0, signed=True)},
       analytic=lambda v, c: {"x": np.sin(v["y"]), "y": v["x"] * np.cos(v["y"]) + 2 * v["y"]})
def func_scalar():
    x, y, loss = vec("x"), vec("y"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += _f_scalar(x[i], y[i])

    return Case({"x": x, "y": y}, loss, k)


@fs.func
def _rotate(v, c):
    return fs.Vector([v[0] * fs.cos(c) - v[1] * fs.sin(c), v[0] * fs.sin(c) + v[1] * fs.cos(c)])


@fs.func
def _energy(v, c):
    w = _rotate(v, c)
    return w.dot(w) + w[0] * c


@entry({"x": U(0.2, 1.0, signed=True), "y": U(0.2, 1.0, signed=True), "c": U(0.0, 1.5, signed=True)})
def func_vector_nested():
    x, y, c, loss = vec("x"), vec("y"), vec("c"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += _energy(fs.Vector([x[i], y[i]]), c[i])

    return Case({"x": x, "y": y, "c": c}, loss, k)


# --------------------------------------------------------------------------- vectors, matrices


def vfield(name, n=3, shape=N):
    return fs.Vector.field(n, float, shape=shape, needs_grad=True, name=name)


def mfield(name, n=3, m=3, shape=N):
    return fs.Matrix.field(n, m, float, shape=shape, needs_grad=True, name=name)


def _dot_cross_norm(v, c):
    u, w = v["u"], v["v"]
    cr = np.cross(u, w)
    n = np.linalg.norm(cr, axis=1, keepdims=True)
    d = cr / n  # d|u x w| / d(u x w)
    return {"u": np.cross(w, d) + w, "v": np.cross(d, u) + u}


@entry({"u": U(0.2, 1.0, shape=(N, 3), signed=True), "v": U(0.2, 1.0, shape=(N, 3), signed=True)},
       analytic=_dot_cross_norm)
def vec_dot_cross_norm():
    u, w, loss = vfield("u"), vfield("v"), scalar_loss()

    @fs.kernel
    def k():
        for i in u:
            loss[None] += u[i].cross(w[i]).norm() + u[i].dot(w[i])

    return Case({"u": u, "v": w}, loss, k)


@entry({"u": U(0.3, 1.0, shape=(N, 3), signed=True), "v": U(0.2, 1.0, shape=(N, 3), signed=True)})
def vec_normalized():
    u, w, loss = vfield("u"), vfield("v"), scalar_loss()

    @fs.kernel
    def k():
        for i in u:
            loss[None] += u[i].normalized().dot(w[i]) + u[i].norm_sqr() * 0.5

    return Case({"u": u, "v": w}, loss, k)


def _matmul_transpose(v, c):
    A, b = v["A"], v["b"]
    cvec = np.einsum("nij,nj->ni", A, b)
    gA = 2 * np.einsum("ni,nj->nij", cvec, b) + 2 * A
    gb = 2 * np.einsum("nij,ni->nj", A, cvec)
    return {"A": gA, "b": gb}


@entry({"A": U(0.1, 1.0, shape=(N, 3, 3), signed=True), "b": U(0.1, 1.0, shape=(N, 3), signed=True)},
       analytic=_matmul_transpose)
def mat_matmul_transpose():
    A, b, loss = mfield("A"), vfield("b"), scalar_loss()

    @fs.kernel
    def k():
        for i in A:
            cv = A[i] @ b[i]
            loss[None] += cv.dot(cv) + (A[i].transpose() @ A[i]).trace()

    return Case({"A": A, "b": b}, loss, k)


def _near_identity(rng):
    return np.eye(3) + 0.3 * rng.uniform(-1, 1, (N, 3, 3))


class _NearIdentity:
    def draw(self, rng):
        return _near_identity(rng)


def _det_inverse(v, c):
    A, b = v["A"], v["b"]
    inv = np.linalg.inv(A)
    det = np.linalg.det(A)
    gdet = det[:, None, None] * np.transpose(inv, (0, 2, 1))
    # d sum(inv @ b) = -inv^T 1 (inv b)^T
    ones = np.ones((N, 3))
    r = np.einsum("nji,nj->ni", inv, ones)  # inv^T 1
    y = np.einsum("nij,nj->ni", inv, b)
    return {"A": gdet - np.einsum("ni,nj->nij", r, y), "b": r}


@entry({"A": _NearIdentity(), "b": U(0.1, 1.0, shape=(N, 3), signed=True)}, analytic=_det_inverse)
def mat_det_inverse():
    A, b, loss = mfield("A"), vfield("b"), scalar_loss()

    @fs.kernel
    def k():
        for i in A:
            loss[None] += A[i].determinant() + (A[i].inverse() @ b[i]).sum()

    return Case({"A": A, "b": b}, loss, k)


@entry({"A": U(0.2, 1.0, shape=(N, 2, 2), signed=True)})
def mat_2x2_inverse_det():
    A = mfield("A", 2, 2)
    loss = scalar_loss()

    @fs.kernel
    def k():
        for i in A:
            B = A[i] @ A[i].transpose() + fs.Matrix.identity(float, 2)
            loss[None] += B.inverse().trace() * B.determinant()

    return Case({"A": A}, loss, k)


def _outer(v, c):
    u, w = v["u"], v["v"]
    # sum((u w^T)^2) = |u|^2 |w|^2 ; sum(u*w) ; sum(u / (1 + w^2))
    nu, nw = np.sum(u * u, 1, keepdims=True), np.sum(w * w, 1, keepdims=True)
    gu = 2 * u * nw + w + 1 / (1 + w * w)
    gw = 2 * w * nu + u - u * 2 * w / (1 + w * w) ** 2
    return {"u": gu, "v": gw}


@entry({"u": U(0.2, 1.0, shape=(N, 3), signed=True), "v": U(0.2, 1.0, shape=(N, 3), signed=True)},
       analytic=_outer)
def outer_elementwise():
    u, w, loss = vfield("u"), vfield("v"), scalar_loss()

    @fs.kernel
    def k():
        for i in u:
            M = u[i].outer_product(w[i])
            loss[None] += (M * M).sum() + (u[i] * w[i] + u[i] / (1.0 + w[i] * w[i])).sum()

    return Case({"u": u, "v": w}, loss, k)


@entry({"x": U(0.2, 1.0, signed=True), "y": U(0.2, 1.0, signed=True)})
def local_vector_matrix():
    x, y, loss = vec("x"), vec("y"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            v = fs.Vector([x[i], y[i], x[i] * y[i]])
            m = fs.Matrix([[x[i], y[i]], [y[i] * y[i], 1.0]])
            r = m @ fs.Vector([v[0], v[2]])
            z = fs.Vector.zero(float, 2) + r * 2.0
            loss[None] += z.dot(r) + v.norm_sqr() - m[1, 0] * v[1]

    return Case({"x": x, "y": y}, loss, k)


@entry({"u": U(0.2, 1.0, shape=(N, 3), signed=True)},
       analytic=lambda v, c: {"u": 2 * v["u"] * np.array([1.0, 2.0, 3.0])})
def vector_field_components():
    u, loss = vfield("u"), scalar_loss()

    @fs.kernel
    def k():
        for i in u:
            for j in fs.static(range(3)):
                loss[None] += u[i][j] * u[i][j] * (j + 1)

    return Case({"u": u}, loss, k)


@entry({"A": U(0.2, 1.0, shape=(N, 3, 3), signed=True)},
       analytic=lambda v, c: {"A": np.eye(3)[None] * 2 * np.trace(v["A"], axis1=1, axis2=2)[:, None, None]
                              + 2 * v["A"] + 1.0})
def matrix_reductions():
    A, loss = mfield("A"), scalar_loss()

    @fs.kernel
    def k():
        for i in A:
            t = A[i].trace()
            loss[None] += t * t + A[i].norm_sqr() + A[i].sum()

    return Case({"A": A}, loss, k)


# --------------------------------------------------------------------------- atomics, gather, scatter


@entry({"x": U(0.2, 1.0, signed=True), "y": U(0.2, 1.0, signed=True)},
       analytic=lambda v, c: {"x": 2 * v["x"], "y": -1 + 3 * v["y"] ** 2})
def atomic_forms():
    x, y, loss = vec("x"), vec("y"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            fs.atomic_add(loss[None], x[i] * x[i])
            loss[None] -= y[i]
            fs.atomic_sub(loss[None], -y[i] * y[i] * y[i])

    return Case({"x": x, "y": y}, loss, k)


SCATTER_IDX = np.array([2, 0, 2, 1, 3, 0], dtype=np.int32)


def _scatter(v, c):
    y = _sum_rows(v["x"], SCATTER_IDX, N)
    return {"x": (2 * y + np.cos(y))[SCATTER_IDX]}


@entry({"x": U(0.2, 1.0, shape=(6,), signed=True)}, analytic=_scatter)
def scatter():
    x = fs.field(float, shape=6, needs_grad=True, name="x")
    idx = fs.field(fs.i32, shape=6, name="idx")
    y = vec("y")
    loss = scalar_loss()
    idx.from_numpy(SCATTER_IDX)

    @fs.kernel
    def spread():
        for i in x:
            y[idx[i]] += x[i]

    @fs.kernel
    def reduce():
        for j in y:
            loss[None] += y[j] * y[j] + fs.sin(y[j])

    def run():
        spread()
        reduce()

    return Case({"x": x}, loss, run, reset=lambda: y.fill(0.0))


GATHER_IDX = np.array([3, 3, 0, 1, 0, 3], dtype=np.int32)


def _gather(v, c):
    z = v["x"][GATHER_IDX] * v["w"]
    return {"x": _sum_rows(2 * z * v["w"], GATHER_IDX, N), "w": 2 * z * v["x"][GATHER_IDX]}


@entry({"x": U(0.2, 1.0, signed=True), "w": U(0.2, 1.0, shape=(6,))}, analytic=_gather)
def gather():
    x = vec("x")
    w = fs.field(float, shape=6, needs_grad=True, name="w")
    idx = fs.field(fs.i32, shape=6, name="idx")
    z = fs.field(float, shape=6, needs_grad=True, name="z")
    loss = scalar_loss()
    idx.from_numpy(GATHER_IDX)

    @fs.kernel
    def pick():
        for i in z:
            z[i] = x[idx[i]] * w[i]

    @fs.kernel
    def reduce():
        for i in z:
            loss[None] += z[i] * z[i]

    def run():
        pick()
        reduce()

    return Case({"x": x, "w": w}, loss, run)


def _winner(values, pick):
    g = np.zeros_like(values)
    g[pick(values)] = 1.0
    return g


@entry({"x": V([0.5, 0.9, 0.3, 0.7]), "w": V([1.0, 1.1, 0.9, 1.2])},
       analytic=lambda v, c: {"x": _winner(v["x"] * v["w"], np.argmax) * v["w"],
                              "w": _winner(v["x"] * v["w"], np.argmax) * v["x"]},
       beyond="Taichi 1.7 gives every element the gradient (atomic_max treated as an add)")
def atomic_max_winner():
    x, w, loss = vec("x"), vec("w"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            fs.atomic_max(loss[None], x[i] * w[i])

    return Case({"x": x, "w": w}, loss, k)


@entry({"x": V([0.5, 0.9, 0.3, 0.7])},
       analytic=lambda v, c: {"x": _winner(-v["x"] ** 2, np.argmin) * -2 * v["x"]},
       beyond="Taichi 1.7 gives every element the gradient (atomic_min treated as an add)")
def atomic_min_winner():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            fs.atomic_min(loss[None], -x[i] * x[i])

    return Case({"x": x}, loss, k)


# --------------------------------------------------------------------------- 2-D fields


@entry({"x": U(0.2, 1.0, shape=(3, 4), signed=True), "y": U(0.2, 1.0, shape=(4,), signed=True)},
       analytic=lambda v, c: {
           "x": (v["y"][None, :] * (np.sin(v["x"]) + v["x"] * np.cos(v["x"])))
           * (np.arange(3)[:, None] >= 1),
           "y": np.sum((v["x"] * np.sin(v["x"]))[1:], axis=0)})
def ndrange_2d():
    x = fs.field(float, shape=(3, 4), needs_grad=True, name="x")
    y = fs.field(float, shape=4, needs_grad=True, name="y")
    loss = scalar_loss()

    @fs.kernel
    def k():
        for i, j in fs.ndrange((1, 3), 4):
            loss[None] += x[i, j] * y[j] * fs.sin(x[i, j])

    return Case({"x": x, "y": y}, loss, k)


@entry({"x": U(0.2, 1.0, shape=(3, 4), signed=True)},
       analytic=lambda v, c: {"x": 0.5 * np.exp(0.5 * v["x"]) * (np.arange(3)[:, None] + 1)
                              - np.arange(4)[None, :]})
def struct_for_2d():
    x = fs.field(float, shape=(3, 4), needs_grad=True, name="x")
    loss = scalar_loss()

    @fs.kernel
    def k():
        for i, j in x:
            loss[None] += fs.exp(x[i, j] * 0.5) * (i + 1) - x[i, j] * j

    return Case({"x": x}, loss, k)


# --------------------------------------------------------------------------- several kernels


def _two_kernels(v, c):
    x, w = v["x"], v["w"]
    y = np.sin(x) * w
    dy = 2 * y + x
    return {"x": dy * np.cos(x) * w + y, "w": dy * np.sin(x)}


@entry({"x": U(0.2, 1.5, signed=True), "w": U(0.5, 1.5)}, analytic=_two_kernels)
def two_kernels():
    x, w, y, loss = vec("x"), vec("w"), vec("y"), scalar_loss()

    @fs.kernel
    def f():
        for i in x:
            y[i] = fs.sin(x[i]) * w[i]

    @fs.kernel
    def g():
        for i in y:
            loss[None] += y[i] * y[i] + y[i] * x[i]

    def run():
        f()
        g()

    return Case({"x": x, "w": w}, loss, run)


T_STEPS = 5


@entry({"x": U(0.5, 1.0, shape=(T_STEPS + 1, N)), "v": U(0.2, 1.0, shape=(T_STEPS, N), signed=True)})
def time_steps():
    # x[t + 1] = x[t] + dt * f(x[t], v[t]) over T launches; rows t >= 1 are overwritten, so
    # their gradient (Tape and finite differences alike) is zero
    x = fs.field(float, shape=(T_STEPS + 1, N), needs_grad=True, name="x")
    v = fs.field(float, shape=(T_STEPS, N), needs_grad=True, name="v")
    loss = scalar_loss()

    @fs.kernel
    def step(t: fs.i32, dt: float):
        for i in range(N):
            x[t + 1, i] = x[t, i] + dt * (fs.sin(v[t, i]) * x[t, i] + v[t, i] * v[t, i])

    @fs.kernel
    def final():
        for i in range(N):
            loss[None] += x[T_STEPS, i] * x[T_STEPS, i]

    def run():
        for t in range(T_STEPS):
            step(t, 0.1)
        final()

    return Case({"x": x, "v": v}, loss, run)


@entry({"x": V([1.0])},
       analytic=lambda v, c: {"x": np.full(1, 120.0)})
def store_chain_top_level():
    # Taichi's test_ad_global_store_forwarding: plain stores in one kernel without loops;
    # the loss itself is a plain store
    x = fs.field(float, shape=1, needs_grad=True, name="x")
    a = fs.field(float, shape=(), needs_grad=True, name="a")
    b = fs.field(float, shape=(), needs_grad=True, name="b")
    c = fs.field(float, shape=(), needs_grad=True, name="c")
    loss = scalar_loss()

    @fs.kernel
    def k():
        a[None] = x[0]
        b[None] = a[None] * 2
        c[None] = b[None] * 3
        loss[None] = c[None] * 20

    return Case({"x": x}, loss, k)


@entry({"x": U(0.2, 1.0, signed=True)},
       analytic=lambda v, c: {"x": 2 * 0.7 * v["x"] + 3 * v["x"] ** 2 * 0.7})
def kernel_scalar_args():
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k(a: float, p: fs.i32):
        for i in x:
            loss[None] += a * (x[i] ** 2 + x[i] ** p)

    return Case({"x": x}, loss, lambda: k(0.7, 3))


# --------------------------------------------------------------------------- beyond Taichi


@entry({"x": U(0.2, 1.0, signed=True)},
       analytic=lambda v, c: {"x": c.extra["r"].to_numpy() * (1 + 2 * v["x"])},
       fd=False, beyond="Taichi 1.7 refuses fs.random in reverse mode ('RandStmt not supported')")
def random_replayed():
    # the gradient is the random number drawn in the forward, stored in r for checking
    x, loss = vec("x"), scalar_loss()
    r = fs.field(float, shape=N, name="r")

    @fs.kernel
    def k():
        for i in x:
            u = fs.random(float)
            r[i] = u
            loss[None] += x[i] * u + x[i] * x[i] * u

    return Case({"x": x}, loss, k, extra={"r": r})


def _serial(v, c):
    a, x = v["a"], v["x"]
    y = np.zeros(N + 1)
    y[0] = 1.0
    for i in range(N):
        y[i + 1] = y[i] * a[i] + x[i]
    gy = np.zeros(N + 1)
    gy[N] = 2 * y[N]
    gy[1:] += 1.0
    ga, gx = np.zeros(N), np.zeros(N)
    for i in reversed(range(N)):
        ga[i] = gy[i + 1] * y[i]
        gx[i] = gy[i + 1]
        gy[i] += gy[i + 1] * a[i]
    return {"a": ga, "x": gx}


@entry({"a": U(0.5, 1.5), "x": U(0.2, 1.0, signed=True)}, analytic=_serial,
       beyond="Taichi 1.7 runs a serialized loop's adjoint forwards: silently wrong gradients")
def serialized_field_recurrence():
    a, x, loss = vec("a"), vec("x"), scalar_loss()
    y = fs.field(float, shape=N + 1, needs_grad=True, name="y")

    @fs.kernel
    def recur():
        fs.loop_config(serialize=True)
        for i in range(N):
            y[i + 1] = y[i] * a[i] + x[i]

    @fs.kernel
    def total():
        for i in range(1, N + 1):
            loss[None] += y[i]
        for _ in range(1):
            loss[None] += y[N] * y[N]

    def run():
        recur()
        total()

    def reset():
        y.fill(0.0)
        y[0] = 1.0

    return Case({"a": a, "x": x}, loss, run, reset=reset)


def _mixed(v, c):
    x = v["x"]
    g = np.full(N, 2.0 * x[0])  # d(2 x0 x_i)/d x_i
    g[0] += 2.0 * np.sum(x)  # d(2 x0 x_i)/d x0, summed over i
    g[1] += np.cos(x[1])
    return {"x": g}


@entry({"x": U(0.2, 1.0, signed=True)}, analytic=_mixed,
       beyond="Taichi 1.7 refuses kernels mixing loops and top-level statements")
def mixed_top_level_and_loops():
    # s = 2 x0 (top level); loss += s * x[i] (parallel); loss += sin(x1) (top level)
    x, loss = vec("x"), scalar_loss()
    s = fs.field(float, shape=(), needs_grad=True, name="s")

    @fs.kernel
    def k():
        s[None] = x[0] * 2.0
        for i in x:
            loss[None] += s[None] * x[i]
        loss[None] += fs.sin(x[1])

    return Case({"x": x}, loss, k)


_RUNTIME_INDEX_ABORTS = ("Taichi 1.7.4 aborts the process on the adjoint of a runtime-indexed "
                         "local (scalarize.cpp: Assertion failure: matrix_ptr_stmt->offset is "
                         "not a ConstStmt)")


@entry({"x": U(0.3, 0.9, signed=True), "y": U(0.3, 0.9)}, beyond=_RUNTIME_INDEX_ABORTS,
       taichi_crash=True)
def local_vector_runtime_index():
    # a 10-entry local vector written and read at runtime indices (a stack array in the primal
    # program, scalarised for AD): stores overwrite, `+=` reads back, reads mix entries
    x, y, loss = vec("x"), vec("y"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            v = fs.Vector([0.0] * 10)
            for j in range(10):
                v[(j * 3 + i) % 10] = x[i] * (j + 1) + v[(j * 7) % 10] * y[(i + j) % N]
            for j in range(6):
                v[(j + i) % 10] += fs.sin(v[(j * 5 + 1) % 10]) * x[(i + 1) % N]
            s = 0.0
            for j in range(i + 3):
                s += v[(j * 5 + i) % 10] ** 2
            loss[None] += s

    return Case({"x": x, "y": y}, loss, k)


@entry({"x": U(0.3, 0.9, signed=True)}, beyond=_RUNTIME_INDEX_ABORTS,
       taichi_crash=True)
def local_matrix_runtime_index():
    # a 3x4 local matrix at runtime (row, column): `+=` into entries, products of entries
    x, loss = vec("x"), scalar_loss()

    @fs.kernel
    def k():
        for i in x:
            m = fs.Matrix.zero(float, 3, 4)
            for t in range(12):
                m[(t + i) % 3, t % 4] += x[(i + t) % N] * (t + 1) * 0.1
            loss[None] += m[i % 3, i % 4] * m[(i + 1) % 3, 0] + (m @ m.transpose()).trace()

    return Case({"x": x}, loss, k)


BY_NAME = {e.name: e for e in CORPUS}
