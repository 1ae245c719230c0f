"""A zero adjoint contributes exactly 0, even through an infinite or NaN slope.

An adjoint is exactly 0 where a value never reaches the loss (a diagnostic field that needs a
gradient: `w = sqrt(x - 0.5)` at x = 0.5, `speed = v.norm()` of a zero vector) and where a
`select` routes it away (the branch not taken in `select(x > 0, sqrt(x), 0)` at x <= 0). The
rules multiplied it by the slope: 0 * inf = NaN, which then spread through the backward.
Taichi 1.7.4 gives NaN in every case below (as JAX and PyTorch do); the chain rule gives the
analytic values asserted here. A nonzero adjoint through an infinite slope stays IEEE (inf)."""
import math

import pytest

from ._env import AS_TAICHI, fs

pytestmark = [pytest.mark.skipif(AS_TAICHI, reason="Taichi 1.7.4 gives NaN (beyond Taichi)"),
              pytest.mark.filterwarnings("ignore:Calling non-taichi function")]

FP = ["f32", "f64"]
MODES = [pytest.param({}, id="fast"), pytest.param({"fast_math": False}, id="exact")]


def _setup(fp, options):
    dt = getattr(fs, fp)
    fs.init(arch=fs.cpu, default_fp=dt, **options)
    x = fs.field(dt, shape=(), needs_grad=True)
    w = fs.field(dt, shape=(), needs_grad=True)  # a diagnostic: needs a gradient, no loss
    loss = fs.field(dt, shape=(), needs_grad=True)
    return x, w, loss


def _by_hand(kernels, x, fields):
    for k in kernels:
        k()
    for f in fields:
        f.grad[None] = 0.0
    fields[-1].grad[None] = 1.0
    for k in reversed(kernels):
        k.grad()
    return x.grad[None]


def _on_tape(kernels, x, loss):
    with fs.ad.Tape(loss=loss):
        for k in kernels:
            k()
    return x.grad[None]


@pytest.mark.parametrize("options", MODES)
@pytest.mark.parametrize("fp", FP)
def test_a_value_that_never_reaches_the_loss(fp, options):
    x, w, loss = _setup(fp, options)

    @fs.kernel
    def both():
        w[None] = fs.sqrt(x[None] - 0.5)
        loss[None] = x[None] * x[None]

    @fs.kernel
    def diag():
        w[None] = fs.sqrt(x[None] - 0.5)

    @fs.kernel
    def square():
        loss[None] = x[None] * x[None]

    x[None] = 0.5  # d loss / dx = 2x = 1; sqrt's slope at 0 is inf
    for kernels in ([both], [diag, square]):
        assert _by_hand(kernels, x, [x, w, loss]) == 1.0
        assert _on_tape(kernels, x, loss) == 1.0


# (name, the term at x, d term / dx at X = 0 and at X = -1): the singular branch is not taken
UNTAKEN = {
    "select_sqrt": (lambda x: fs.select(x > 0, fs.sqrt(x), 0.0), 0.0),
    "select_pow_half": (lambda x: fs.select(x > 0, x ** 0.5, 0.0), 0.0),
    "select_log": (lambda x: fs.select(x > 0, fs.log(x), 0.0), 0.0),
    "select_div": (lambda x: fs.select(x > 0, 1.0 / x, 0.0), 0.0),
    "select_asin": (lambda x: fs.select(x > 2.0, fs.asin(x - 2.0), 0.0), 0.0),
    "max_sqrt": (lambda x: fs.max(fs.sqrt(x), -1.0), None),  # sqrt(-1) = NaN loses to -1
    "select_atan2": (lambda x: fs.select(x > 0, fs.atan2(x * 0.0, x * 0.0), 0.0), 0.0),
}


@pytest.mark.parametrize("options", MODES)
@pytest.mark.parametrize("fp", FP)
@pytest.mark.parametrize("name", UNTAKEN)
def test_the_branch_not_taken(name, fp, options):
    x, _w, loss = _setup(fp, options)
    term, slope = UNTAKEN[name]

    @fs.kernel
    def k():
        loss[None] = term(x[None]) + 3.0 * x[None]

    @fs.kernel
    def k_if():
        y = 0.0
        if x[None] > 0:
            y = term(x[None])
        loss[None] = y + 3.0 * x[None]

    for x0 in (0.0, -1.0) if slope is not None else (-1.0,):
        x[None] = x0
        assert _by_hand([k], x, [x, loss]) == 3.0
        assert _on_tape([k], x, loss) == 3.0
        assert _on_tape([k_if], x, loss) == 3.0


@pytest.mark.parametrize("options", MODES)
@pytest.mark.parametrize("fp", FP)
def test_norm_and_normalized_of_a_zero_vector(fp, options):
    dt = getattr(fs, fp)
    fs.init(arch=fs.cpu, default_fp=dt, **options)
    v = fs.Vector.field(3, dt, shape=4)
    speed = fs.field(dt, shape=4)
    unit = fs.Vector.field(3, dt, shape=4)
    loss = fs.field(dt, shape=())
    fs.root.lazy_grad()  # every field needs a gradient, the diagnostics too

    @fs.kernel
    def k():
        for i in v:
            speed[i] = v[i].norm()
            unit[i] = v[i].normalized()
            loss[None] += v[i].dot(fs.Vector([1.0, 2.0, 3.0])) * (i + 1)

    v[1] = [3.0, 0.0, 4.0]  # the others are zero vectors
    with fs.ad.Tape(loss=loss):
        k()
    g = v.grad.to_numpy()
    for i in range(4):
        assert list(g[i]) == [i + 1.0, 2.0 * (i + 1), 3.0 * (i + 1)]
    assert speed[1] == 5.0


@pytest.mark.parametrize("fp", FP)
def test_a_nonzero_adjoint_through_an_infinite_slope_stays_ieee(fp):
    x, _w, loss = _setup(fp, {})

    @fs.kernel
    def root():
        loss[None] = fs.sqrt(x[None] - 0.5)

    @fs.kernel
    def taken():
        loss[None] = fs.select(x[None] >= 0.5, fs.sqrt(x[None] - 0.5), 0.0)

    x[None] = 0.5  # the square root at 0 reaches the loss: d/dx = inf, as Taichi gives
    assert _on_tape([root], x, loss) == math.inf
    assert _by_hand([root], x, [x, loss]) == math.inf
    assert _on_tape([taken], x, loss) == math.inf


def _guards(kernel) -> int:
    """The zero-adjoint guards (`select(adj == 0, 0, ...)`) in `kernel`'s adjoint IR."""
    from support.ir_kit import compiled_ir

    from fieldsim.ad.reverse import make_adjoint
    from fieldsim.ir.ir import Op, walk
    adj = make_adjoint(compiled_ir(kernel))
    zero_tests = {id(s) for s in walk(adj.body) if s.op == Op.EQ}
    return sum(1 for s in walk(adj.body) if s.op == Op.SELECT and id(s.args[0]) in zero_tests)


def test_provably_finite_slopes_and_safeguarded_divisors_get_no_guard():
    """The benchmark adjoints keep their code: gravity's 1 / sqrt(|r|^2 + eps^2), an MPM grid's
    v / (m + 1e-10), a spring's (l - l0) / (|d| + 1e-4), a power with a constant exponent."""
    fs.init(arch=fs.cpu, default_fp=fs.f32)
    n = 4
    x = fs.Vector.field(2, fs.f32, shape=n, needs_grad=True)
    m = fs.field(fs.f32, shape=n, needs_grad=True)
    out = fs.field(fs.f32, shape=n, needs_grad=True)

    @fs.kernel
    def safe():
        for i in x:
            r = x[i] - x[(i + 1) % n]
            out[i] = 1.0 / fs.sqrt(r.norm_sqr() + 1e-4) + (x[i] / (m[i] + 1e-10))[0]
            out[i] += (m[i] - 1.0) / (r.norm() + 1e-4) + m[i] ** 3 + fs.log(m[i] * m[i] + 1.0)

    @fs.kernel
    def singular():
        for i in x:
            out[i] = fs.sqrt(m[i]) + x[i][0] / m[i] + (x[i] * (1.0 / x[i].norm()))[1]

    assert _guards(safe) == 1  # r.norm(): the root of a bare sum of squares, zero at r = 0
    # sqrt, the division (both operands), the product with 1/|x|, 1/|x| and |x|'s root
    assert _guards(singular) == 6


# (name, fp, term at x): a "positive" guard that the kernel's flushing of subnormals (FTZ/DAZ)
# defeats. Each was proved finite by sign and left unguarded, which gave NaN at x = 0.
TINY_GUARDS = [
    ("sqrt_subnormal_const", "f32", lambda x: fs.sqrt(x * x + 1e-45)),  # 1e-45 reads as 0
    ("log_subnormal_const", "f32", lambda x: fs.log(x * x + 1e-45)),
    ("normalized_subnormal_eps", "f32", lambda x: x / fs.sqrt(x * x + 1e-45)),
    ("product_with_inverse_root", "f32", lambda x: x * (1.0 / fs.sqrt(x * x + 1e-45))),
    ("div_square_underflows_f32", "f32", lambda x: 1.0 / (x * x + 1e-20)),  # (1e-20)^2 -> 0
    ("div_square_underflows_f64", "f64", lambda x: 1.0 / (x * x + 1e-160)),
    ("div_product_underflows", "f32", lambda x: 1.0 / ((x * x + 1e-10) * (x * x + 1e-10))),
    ("sqrt_quotient_underflows", "f32", lambda x: fs.sqrt(1e-30 / (x * x + 1e30))),
]


@pytest.mark.parametrize("options", MODES)
@pytest.mark.parametrize("name,fp,term", TINY_GUARDS, ids=[t[0] for t in TINY_GUARDS])
def test_a_tiny_positive_guard_does_not_prove_a_finite_slope(name, fp, term, options):
    """A proof of a finite slope carries a lower bound, not a sign: a subnormal constant, or a
    divisor whose square underflows, leaves the slope infinite, so the zero adjoint is guarded."""
    x, w, loss = _setup(fp, options)

    @fs.kernel
    def diag():
        w[None] = term(x[None])
        loss[None] = x[None] * x[None] + x[None]

    @fs.kernel
    def untaken():
        loss[None] = fs.select(x[None] > 5.0, term(x[None]), 0.0) + x[None] * x[None] + x[None]

    x[None] = 0.0  # d loss / dx = 2x + 1 = 1
    for k in (diag, untaken):
        assert _by_hand([k], x, [x, w, loss]) == 1.0
        assert _on_tape([k], x, loss) == 1.0


def test_normal_safeguards_still_get_no_guard():
    fs.init(arch=fs.cpu, default_fp=fs.f32)
    x = fs.field(fs.f32, shape=4, needs_grad=True)
    out = fs.field(fs.f32, shape=4, needs_grad=True)

    @fs.kernel
    def safe():
        for i in x:
            t = x[i]
            d = t * t + 1e-8
            out[i] = fs.sqrt(t * t + 1e-30) + 1.0 / (t * t + 1e-18) + fs.log(fs.max(t, 1e-30))
            out[i] += 1.0 / (d * d) + 1.0 / ((t * t + 1e-8) * (t * t + 1e-8))

    assert _guards(safe) == 0


@pytest.mark.parametrize("options", MODES)
@pytest.mark.parametrize("fp", FP)
def test_a_whole_number_added_to_an_integer_is_no_safeguard(fp, options):
    """`x / (ti.cast(n, f) + 1.0)` divides by 0 at n = -1 (a natural integer), so its zero
    adjoint is guarded; `+ 1e-10` to the same integer still is a safeguard (never 0)."""
    x, w, loss = _setup(fp, options)
    n = fs.field(fs.i32, shape=())
    dt = getattr(fs, fp)

    @fs.kernel
    def diag():
        w[None] = x[None] / (fs.cast(n[None], dt) + 1.0)
        loss[None] = x[None] * x[None] + x[None]

    @fs.kernel
    def tiny_offset():
        w[None] = x[None] / (fs.cast(n[None], dt) + 1e-10)

    n[None] = -1
    x[None] = 0.0  # d loss / dx = 2x + 1 = 1
    assert _by_hand([diag], x, [x, w, loss]) == 1.0
    assert _on_tape([diag], x, loss) == 1.0
    assert _guards(tiny_offset) == 0
