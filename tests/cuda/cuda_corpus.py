"""Forward programs the CUDA backend must run as the CPU does: one entry per language area.

Each entry is a builder `build(fs) -> Program`, called after `fs.init` (CPU, emulated CUDA or
CUDA): it makes fields and kernels and says which launches to run and which fields to compare.
`run(program)` stores the inputs, runs the launches in order and returns {name: ndarray}, with
kernel return values under "ret<k>". `tol` is (rtol, atol) for the comparison against the CPU:
(0, 0) means bitwise equal. Float sums of many terms whose order a GPU changes get a tolerance;
integer and random results must match exactly.

No `from __future__ import annotations` here: kernel annotations name the builder's `fs`.
"""
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dc_field

import numpy as np

N = 256


@dataclass
class Program:
    launches: list  # (kernel, args) in launch order
    outputs: dict  # name -> field
    setup: Callable | None = None  # stores the inputs


@dataclass
class Entry:
    name: str
    build: Callable
    tol: tuple = (0.0, 0.0)
    init: dict = dc_field(default_factory=dict)  # extra fs.init options


CORPUS: list[Entry] = []


def entry(tol=(0.0, 0.0), **init):
    def register(fn):
        CORPUS.append(Entry(fn.__name__, fn, tol, init))
        return fn
    return register


def run(program: Program) -> dict:
    if program.setup is not None:
        program.setup()
    out = {}
    for k, (kern, args) in enumerate(program.launches):
        r = kern(*args)
        if r is not None:
            out[f"ret{k}"] = np.asarray(r)
    for name, f in program.outputs.items():
        out[name] = f.to_numpy()
    return out


def _uniform(seed, shape, lo, hi):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


# ---- arithmetic ----------------------------------------------------------------------------------
def _arith(fs, dt):
    a = fs.field(dt, shape=N, name="a")
    b = fs.field(dt, shape=N, name="b")
    out = fs.Vector.field(14, dt, shape=N, name="out")

    @fs.kernel
    def k(s: dt, t: dt):
        for i in a:
            x, y = a[i], b[i]
            out[i] = fs.Vector([x + y * s, x - y, x * y, x / y, x // y, x % y, -x + t, abs(x),
                                fs.min(x, y), fs.max(x, y), fs.select(x < y, x, t),
                                float(x >= y) + float(x == x) * 2 + float(x != y) * 4,  # noqa: PLR0124
                                fs.cast(fs.cast(x * 10, fs.i32), dt), x ** 2 + y ** 3])

    def setup():
        a.from_numpy(_uniform(1, N, -4, 4))
        b.from_numpy(np.where(np.arange(N) % 2, 1, -1) * _uniform(2, N, 0.5, 3))
    return Program([(k, (1.5, 0.25))], {"out": out}, setup)


@entry(tol=(1e-6, 1e-6))
def arith_f32(fs):
    return _arith(fs, fs.f32)


@entry(tol=(1e-14, 1e-14))
def arith_f64(fs):
    return _arith(fs, fs.f64)


@entry()
def int_arith(fs):
    a = fs.field(fs.i32, shape=N, name="a")
    out = fs.Vector.field(12, fs.i32, shape=N, name="out")
    wide = fs.field(fs.i64, shape=N, name="wide")
    uns = fs.field(fs.u32, shape=N, name="uns")

    @fs.kernel
    def k(d: fs.i32):
        for i in a:
            x = a[i]
            y = i % 7 - 3  # includes 0: division by zero gives 0
            out[i] = fs.Vector([x + d, x * y, x // y, x % y, x & 0xF0F, x | y, x ^ y, x << 3,
                                x >> 2, abs(x), fs.min(x, y), fs.max(x, y)])
            wide[i] = fs.cast(x, fs.i64) * 3000000000 + i
            uns[i] = fs.cast(x, fs.u32) * fs.u32(2654435761) >> fs.u32(7)

    def setup():
        a.from_numpy(np.random.default_rng(3).integers(-100000, 100000, N).astype(np.int32))
    return Program([(k, (17,))], {"out": out, "wide": wide, "uns": uns}, setup)


@entry()
def bit_counts(fs):
    """popcnt/clz (LLVM ctpop/ctlz) in the operand's width, and frexp's bit fields."""
    a = fs.field(fs.i32, shape=N, name="a")
    out = fs.Vector.field(4, fs.i32, shape=N, name="out")
    wide = fs.Vector.field(2, fs.i64, shape=N, name="wide")
    uns = fs.Vector.field(2, fs.u32, shape=N, name="uns")
    frac = fs.field(fs.f32, shape=N, name="frac")

    @fs.kernel
    def k():
        for i in a:
            x = a[i]
            m, e = fs.frexp(fs.cast(x, fs.f32) * 0.37)
            out[i] = fs.Vector([fs.math.popcnt(x), fs.math.clz(x), fs.math.clz(x * 0), e])
            w = fs.cast(x, fs.i64) << 20
            wide[i] = fs.Vector([fs.math.popcnt(w), fs.math.clz(w)])
            u = fs.cast(x, fs.u32)
            uns[i] = fs.Vector([fs.math.popcnt(u), fs.math.clz(u)])
            frac[i] = m

    def setup():
        a.from_numpy(np.random.default_rng(11).integers(-2**31, 2**31, N).astype(np.int32))
    return Program([(k, ())], {"out": out, "wide": wide, "uns": uns, "frac": frac}, setup)


@entry()
def small_ints(fs):
    u = fs.field(fs.u8, shape=N, name="u")
    s = fs.field(fs.i8, shape=N, name="s")
    h = fs.field(fs.i16, shape=N, name="h")
    hist = fs.field(fs.u8, shape=4, name="hist")

    @fs.kernel
    def k():
        for i in u:
            u[i] = fs.cast(i * 3, fs.u8)
            s[i] = fs.cast(i - 128, fs.i8)
            h[i] = fs.cast(i * 300, fs.i16)
            hist[i % 4] += fs.cast(1, fs.u8)
    return Program([(k, ())], {"u": u, "s": s, "h": h, "hist": hist})


# ---- math ----------------------------------------------------------------------------------------
def _math(fs, dt):
    x = fs.field(dt, shape=N, name="x")
    out = fs.Vector.field(16, dt, shape=N, name="out")

    @fs.kernel
    def k():
        for i in x:
            v = x[i]  # in (0, 1)
            w = v * 8 - 4
            out[i] = fs.Vector([fs.sin(w), fs.cos(w), fs.tan(v), fs.asin(v * 2 - 1),
                                fs.acos(v * 2 - 1), fs.atan(w), fs.atan2(w, v - 0.5), fs.tanh(w),
                                fs.exp(w), fs.log(v), fs.sqrt(v), fs.pow(v, w), fs.floor(w),
                                fs.ceil(w), fs.round(w * 2), abs(w)])

    def setup():
        vals = _uniform(4, N, 0.01, 0.99)
        vals[:4] = [0.5, 0.25, 0.0625, 0.5625]  # round(w*2) on exact halves: -4, ..., 0.5
        x.from_numpy(vals)
    return Program([(k, ())], {"out": out}, setup)


@entry(tol=(2e-6, 2e-6))
def math_f32(fs):
    return _math(fs, fs.f32)


@entry(tol=(1e-13, 1e-13))
def math_f64(fs):
    return _math(fs, fs.f64)


# ---- atomics -------------------------------------------------------------------------------------
def _float_atomics(fs, dt):
    x = fs.field(dt, shape=N, name="x")
    acc = fs.field(dt, shape=8, name="acc")
    lo = fs.field(dt, shape=8, name="lo")
    hi = fs.field(dt, shape=8, name="hi")
    tot = fs.field(dt, shape=(), name="tot")
    peak = fs.field(dt, shape=(), name="peak")  # min/max into one element: per-thread totals
    low = fs.field(dt, shape=(), name="low")

    @fs.kernel
    def k():
        for i in x:
            v = x[i]
            acc[i % 8] += v  # small integers: exact in any order
            acc[(i + 1) % 8] -= 1.0
            fs.atomic_min(lo[i % 8], v)
            fs.atomic_max(hi[i % 8], v)
            tot[None] += v
            fs.atomic_max(peak[None], v * 0.5)
            fs.atomic_min(low[None], v * 0.5)

    def setup():
        x.from_numpy(np.random.default_rng(5).integers(-50, 50, N).astype(np.float64))
        lo.fill(1e9)
        hi.fill(-1e9)
        peak.fill(-1e9)
        low.fill(1e9)
    return Program([(k, ())], {"acc": acc, "lo": lo, "hi": hi, "tot": tot, "peak": peak,
                               "low": low}, setup)


@entry()
def atomics_f32(fs):
    return _float_atomics(fs, fs.f32)


@entry()
def atomics_f64(fs):
    return _float_atomics(fs, fs.f64)


@entry()
def atomics_int(fs):
    x = fs.field(fs.i32, shape=N, name="x")
    r = fs.Vector.field(6, fs.i32, shape=4, name="r")
    u = fs.Vector.field(2, fs.u32, shape=4, name="u")
    w = fs.field(fs.i64, shape=4, name="w")
    m = fs.field(fs.i32, shape=4, name="m")
    ext = fs.Vector.field(4, fs.i32, shape=(), name="ext")  # one element: per-thread totals
    uext = fs.Vector.field(2, fs.u32, shape=(), name="uext")

    @fs.kernel
    def k():
        for i in x:
            v, j = x[i], i % 4
            fs.atomic_max(ext[None][0], v)
            fs.atomic_min(ext[None][1], v)
            fs.atomic_max(uext[None][0], fs.cast(v + 1000000, fs.u32))
            fs.atomic_min(uext[None][1], fs.cast(v + 1000000, fs.u32))
            fs.atomic_add(r[j][0], v)
            fs.atomic_sub(r[j][1], v)
            fs.atomic_min(r[j][2], v)
            fs.atomic_max(r[j][3], v)
            fs.atomic_or(r[j][4], 1 << (i % 31))
            fs.atomic_xor(r[j][5], v)
            fs.atomic_min(u[j][0], fs.cast(v + 1000000, fs.u32))
            fs.atomic_max(u[j][1], fs.cast(v + 1000000, fs.u32))
            fs.atomic_add(w[j], fs.cast(v, fs.i64) * 100000)
            fs.atomic_and(m[j], ~(1 << (i % 31)))

    def setup():
        x.from_numpy(np.random.default_rng(6).integers(-1000, 1000, N).astype(np.int32))
        r.fill([0, 0, 1 << 30, -(1 << 30), 0, 0])
        u.fill([4000000000, 0])
        m.fill(-1)
        ext.fill([-(1 << 30), 1 << 30, 0, 0])
        uext.fill([0, 4000000000])
    return Program([(k, ())], {"r": r, "u": u, "w": w, "m": m, "ext": ext, "uext": uext}, setup)


@entry()
def atomic_old_values(fs):
    """Returned old values are order-dependent: compare their set, through a histogram."""
    counter = fs.field(fs.i32, shape=(), name="counter")
    seen = fs.field(fs.i32, shape=N, name="seen")
    prod = fs.field(fs.f32, shape=(), name="prod")

    @fs.kernel
    def k():
        for i in range(N):
            old = fs.atomic_add(counter[None], 1)
            seen[old] += 1
            if i < 10:
                fs.atomic_mul(prod[None], 2.0)

    def setup():
        prod[None] = 1.0
    return Program([(k, ())], {"counter": counter, "seen": seen, "prod": prod}, setup)


@entry(tol=(1e-5, 1e-3))
def reduction(fs):
    x = fs.field(fs.f32, shape=4 * N, name="x")
    s = fs.field(fs.f32, shape=(), name="s")
    c = fs.field(fs.i32, shape=(), name="c")

    @fs.kernel
    def k():
        for i in x:
            s[None] += x[i] * x[i]
            c[None] += 1

    def setup():
        x.from_numpy(_uniform(7, 4 * N, -1, 1))
    return Program([(k, ()), (k, ())], {"s": s, "c": c}, setup)


# ---- vectors and matrices -------------------------------------------------------------------------
@entry(tol=(1e-5, 1e-5))
def vector_matrix(fs):
    v = fs.Vector.field(3, fs.f32, shape=N, name="v")
    m = fs.Matrix.field(3, 3, fs.f32, shape=N, name="m")
    out_v = fs.Vector.field(3, fs.f32, shape=N, name="out_v")
    out_m = fs.Matrix.field(3, 3, fs.f32, shape=N, name="out_m")
    out_s = fs.Vector.field(4, fs.f32, shape=N, name="out_s")

    @fs.kernel
    def k():
        for i in v:
            a, A = v[i], m[i] + fs.Matrix.identity(fs.f32, 3) * 3.0
            b = fs.Vector([1.0, 2.0, 3.0])
            out_v[i] = A @ a + a.cross(b) + a.normalized() * 0.5
            out_m[i] = A.inverse() + A.transpose() @ A + a.outer_product(b)
            out_s[i] = fs.Vector([a.dot(b), a.norm(), A.determinant(), A.trace() + A.sum()])

    def setup():
        v.from_numpy(_uniform(8, (N, 3), -1, 1))
        m.from_numpy(_uniform(9, (N, 3, 3), -0.5, 0.5))
    return Program([(k, ())], {"out_v": out_v, "out_m": out_m, "out_s": out_s}, setup)


@entry(tol=(1e-4, 1e-4))
def svd_polar(fs):
    m2 = fs.Matrix.field(2, 2, fs.f32, shape=N, name="m2")
    m3 = fs.Matrix.field(3, 3, fs.f32, shape=N, name="m3")
    r2 = fs.Matrix.field(2, 2, fs.f32, shape=N, name="r2")
    r3 = fs.Matrix.field(3, 3, fs.f32, shape=N, name="r3")

    @fs.kernel
    def k():
        for i in m2:
            U, S, V = fs.svd(m3[i])
            r3[i] = U @ S @ V.transpose()
            R, P = fs.polar_decompose(m2[i])
            r2[i] = R @ P

    def setup():
        m2.from_numpy(_uniform(10, (N, 2, 2), -1, 1) + 2 * np.eye(2))
        m3.from_numpy(_uniform(11, (N, 3, 3), -1, 1) + 2 * np.eye(3))
    return Program([(k, ())], {"r2": r2, "r3": r3}, setup)


# ---- control flow --------------------------------------------------------------------------------
@entry(tol=(1e-6, 1e-6))
def inner_loops(fs):
    g = fs.field(fs.f32, shape=(16, 24), name="g")
    cnt = fs.field(fs.i32, shape=(16, 24), name="cnt")

    @fs.func
    def tri(n):
        t = 0
        for j in range(n):
            t += j
        return t

    @fs.kernel
    def k(reps: fs.i32):
        for a, b in g:
            acc = 0.0
            for r in range(reps):
                for t in range(b):
                    if t % 3 == 0:
                        continue
                    acc += t * 0.5 + r
            g[a, b] = acc
            cnt[a, b] = tri(a + b)
    return Program([(k, (3,))], {"g": g, "cnt": cnt})


@entry()
def while_break(fs):
    steps = fs.field(fs.i32, shape=N, name="steps")
    peak = fs.field(fs.i32, shape=N, name="peak")

    @fs.kernel
    def k(limit: fs.i32):
        for i in steps:
            n, s, p = i + 1, 0, 0
            while n != 1:  # Collatz
                if n % 2 == 0:
                    n = n // 2
                else:
                    n = 3 * n + 1
                p = fs.max(p, n)
                s += 1
                if s >= limit:
                    break
            steps[i] = s
            peak[i] = p
    return Program([(k, (100,))], {"steps": steps, "peak": peak})


@entry(tol=(1e-6, 1e-6))
def if_else(fs):
    x = fs.field(fs.f32, shape=N, name="x")
    y = fs.field(fs.f32, shape=N, name="y")
    kind = fs.field(fs.i32, shape=N, name="kind")

    @fs.kernel
    def k(th: fs.f32):
        for i in x:
            v = x[i]
            if v < -th:
                y[i] = -v * 2
                kind[i] = 0
            elif v > th:
                if i % 2 == 0:
                    y[i] = fs.sqrt(v)
                else:
                    y[i] = v * v
                kind[i] = 1
            else:
                y[i] = 0.0
                kind[i] = 2 + (i % 3 == 0)

    def setup():
        x.from_numpy(_uniform(12, N, -1, 1))
    return Program([(k, (0.3,))], {"y": y, "kind": kind}, setup)


@entry(tol=(0.0, 0.0))
def random_numbers(fs):
    rf = fs.field(fs.f32, shape=(N, 3), name="rf")
    rd = fs.field(fs.f64, shape=N, name="rd")
    ri = fs.field(fs.i32, shape=N, name="ri")
    inner = fs.field(fs.f32, shape=N, name="inner")

    @fs.kernel
    def k():
        for i, j in rf:
            rf[i, j] = fs.random()
        for i in rd:
            rd[i] = fs.random(fs.f64)
            ri[i] = fs.random(fs.i32)
            t = 0.0
            for r in range(i % 5):  # whole numbers: a sum fast-math may reassociate stays exact
                t += fs.floor(fs.random() * 1024.0)
            inner[i] = t
    return Program([(k, ()), (k, ())], {"rf": rf, "rd": rd, "ri": ri, "inner": inner})


@entry(tol=(1e-6, 1e-6))
def serial_tasks(fs):
    x = fs.field(fs.f32, shape=N, name="x")
    pre = fs.field(fs.f32, shape=N, name="pre")
    total = fs.field(fs.f32, shape=(), name="total")
    flag = fs.field(fs.i32, shape=(), name="flag")

    @fs.kernel
    def k():
        flag[None] = 7  # top-level statement: a serial task
        fs.loop_config(serialize=True)
        for i in range(N):  # a serialized loop carrying a dependence through a field
            if i == 0:
                pre[i] = x[i]
            else:
                pre[i] = pre[i - 1] + x[i]
        total[None] = pre[N - 1] * 2

    def setup():
        x.from_numpy(np.random.default_rng(13).integers(0, 10, N).astype(np.float32))
    return Program([(k, ())], {"pre": pre, "total": total, "flag": flag}, setup)


@entry(tol=(1e-5, 1e-4))
def kernel_returns(fs):
    x = fs.field(fs.f32, shape=N, name="x")
    n = fs.field(fs.i32, shape=(), name="n")

    @fs.kernel
    def fsum() -> fs.f32:
        s = 0.0
        for i in x:
            s += x[i]
        return s

    @fs.kernel
    def icount(th: fs.f32) -> fs.i32:
        c = 0
        for i in x:
            if x[i] > th:
                c += 1
        return c

    @fs.kernel
    def f64ret(a: fs.f64) -> fs.f64:
        return a * 3.0 + 0.125

    @fs.kernel
    def plain():
        n[None] = icount_const()

    @fs.func
    def icount_const():
        return 41 + 1

    def setup():
        x.from_numpy(_uniform(14, N, -1, 1))
    return Program([(fsum, ()), (icount, (0.25,)), (f64ret, (1.0 / 3.0,)), (plain, ())],
                   {"n": n}, setup)


@entry(tol=(1e-6, 1e-6))
def ndrange_and_2d(fs):
    g = fs.field(fs.f32, shape=(20, 30), name="g")
    h = fs.field(fs.i32, shape=(5, 6, 7), name="h")

    @fs.kernel
    def k(off: fs.i32):
        for i, j in fs.ndrange((2, 18), (off, 30)):
            g[i, j] = i * 100.0 + j
        for i, j, l in h:
            h[i, j, l] = i * 10000 + j * 100 + l
    return Program([(k, (5,))], {"g": g, "h": h})


@entry(tol=(1e-12, 1e-12))
def many_args(fs):
    out = fs.field(fs.f64, shape=8, name="out")
    iout = fs.field(fs.i64, shape=3, name="iout")

    @fs.kernel
    def k(a: fs.i32, b: fs.f32, c: fs.f64, d: fs.i64, e: fs.u32, f: fs.i32, g: fs.f64, h: fs.f32):
        for i in range(1):
            out[0], out[1], out[2] = a, b, c
            out[3], out[4], out[5] = fs.cast(d, fs.f64), fs.cast(e, fs.f64), f
            out[6], out[7] = g, h
            iout[0], iout[1], iout[2] = d, fs.cast(e, fs.i64), fs.cast(a, fs.i64) * f
    return Program([(k, (-7, 0.5, 1e-300, -(1 << 40), 4000000000, 123456, -2.5, 3.25))],
                   {"out": out, "iout": iout})


@entry(tol=(1e-6, 1e-6))
def large_grid(fs):
    """More iterations than threads: grid-stride loops, a capped grid."""
    n = 1 << 18
    x = fs.field(fs.f32, shape=n, name="x")
    c = fs.field(fs.i32, shape=(), name="c")

    @fs.kernel
    def k(m: fs.i32):
        for i in range(m):
            x[i] = i * 0.5
            c[None] += 1
    return Program([(k, (n - 3,))], {"x": x, "c": c})


@entry(tol=(1e-6, 1e-6))
def data_dependent_bounds(fs):
    """Loop bounds read from a field: the grid size is not known at launch."""
    n = fs.field(fs.i32, shape=(), name="n")
    x = fs.field(fs.f32, shape=N, name="x")

    @fs.kernel
    def k():
        for i in range(n[None]):
            x[i] = i + 0.25

    def setup():
        n[None] = N - 10
    return Program([(k, ())], {"x": x}, setup)


@entry(tol=(1e-6, 1e-6))
def block_dim_config(fs):
    x = fs.field(fs.f32, shape=1000, name="x")

    @fs.kernel
    def k():
        fs.loop_config(block_dim=32)
        for i in x:
            x[i] = fs.sqrt(i * 1.0)
    return Program([(k, ())], {"x": x})


@entry(tol=(1e-6, 1e-6))
def templates_and_funcs(fs):
    a = fs.field(fs.f32, shape=N, name="a")
    b = fs.field(fs.f32, shape=N, name="b")

    @fs.func
    def smooth(v, k: fs.template()):
        r = v
        for _ in fs.static(range(k)):
            r = r * 0.5 + 1.0
        return r

    @fs.kernel
    def k(src: fs.template(), dst: fs.template(), s: fs.f32):
        for i in src:
            dst[i] = smooth(src[i] * s, 3)

    def setup():
        a.from_numpy(_uniform(15, N, 0, 1))
    return Program([(k, (a, b, 2.0)), (k, (b, a, 0.5))], {"a": a, "b": b}, setup)


@entry(tol=(1e-6, 1e-6))
def zero_d_and_fill(fs):
    s = fs.field(fs.f64, shape=(), name="s")
    v = fs.Vector.field(2, fs.f32, shape=N, name="v")

    @fs.kernel
    def k():
        for i in v:
            v[i] += fs.Vector([s[None], 1.0])

    def setup():
        v.fill([1.5, -2.0])
        s[None] = 0.75
    return Program([(k, ()), (k, ())], {"v": v, "s": s}, setup)


@entry()
def local_arrays(fs):
    # runtime-indexed locals of 8+ entries: stack arrays in the thread's local memory
    depth = fs.field(fs.i32, shape=N, name="depth")
    picked = fs.field(fs.f32, shape=N, name="picked")

    @fs.kernel
    def k():
        for i in depth:
            stack = fs.Vector([0] * 16)
            sp, seen, deepest = 1, 0, 0
            while sp > 0:  # a walk of the implicit binary tree below node 0, pruned by i
                sp -= 1
                node = stack[sp]
                seen += 1
                deepest = fs.max(deepest, sp)
                if node < 64 and (node * 7 + i) % 5 != 0:
                    stack[sp] = 2 * node + 1
                    stack[sp + 1] = 2 * node + 2
                    sp += 2
            m = fs.Matrix.zero(fs.f32, 3, 4)
            for t in range(12):
                m[(t + i) % 3, t % 4] += t * 0.5
            depth[i] = seen * 100 + deepest
            picked[i] = m[i % 3, (i // 3) % 4]
    return Program([(k, ())], {"depth": depth, "picked": picked})
