"""Quantized types (`ti.types.quant`, `ti.BitpackedFields`) against numpy models of the
encodings written here from their definitions: ints wrap, fixed rounds half away from zero,
floats are sign x 2^(E - bias) x 1.digits (flushed to zero below the smallest normal), a shared
exponent is the largest of its group's. Kernels and Python scope are both checked."""
import math

import numpy as np
import pytest

import fieldsim as ti
from fieldsim.errors import FieldsimError


@pytest.fixture(autouse=True)
def _cpu():
    ti.init(arch=ti.cpu)


def _packed(*qtypes, n, bits=32, shared=False):
    fields = [ti.field(q) for q in qtypes]
    bp = ti.BitpackedFields(max_num_bits=bits)
    bp.place(*fields, shared_exponent=shared)
    ti.root.dense(ti.i, n).place(bp)
    return fields


def _io(n, dtype):
    src = ti.field(dtype, shape=n)
    out = ti.field(dtype, shape=n)

    @ti.kernel
    def put(f: ti.template()):
        for i in range(n):
            f[i] = src[i]

    @ti.kernel
    def get(f: ti.template()):
        for i in range(n):
            out[i] = f[i]

    def roundtrip(f, values):
        src.from_numpy(np.asarray(values))
        put(f)
        get(f)
        return out.to_numpy()

    return roundtrip


def _wrap(v, bits, signed):
    u = np.mod(v, 2 ** bits)
    return np.where(u >= 2 ** (bits - 1), u - 2 ** bits, u) if signed else u


@pytest.mark.parametrize("signed", [True, False])
@pytest.mark.parametrize("bits", [1, 2, 3, 5, 8])
def test_int_wraps_exhaustively(bits, signed):
    values = np.arange(-2 ** (bits + 1), 2 ** (bits + 1), dtype=np.int32)
    f, = _packed(ti.types.quant.int(bits, signed), n=values.size)
    got = _io(values.size, ti.i32)(f, values)
    np.testing.assert_array_equal(got, _wrap(values, bits, signed))
    f[3] = int(values[-1])  # Python scope stores and reads the same bits
    assert f[3] == _wrap(values[-1], bits, signed)


def test_int_fields_share_a_word_and_keep_each_others_bits():
    a, b, c = _packed(ti.types.quant.int(5, True), ti.types.quant.int(7, False, ti.u16),
                      ti.types.quant.int(20, True), n=4)
    assert a.dtype == ti.i32 and b.dtype == ti.u16
    a[1], b[1], c[1] = -16, -64, -300000
    assert (a[1], b[1], c[1]) == (-16, 64, _wrap(-300000, 20, True))
    a[1] = 15
    assert (a[1], b[1], c[1]) == (15, 64, _wrap(-300000, 20, True))


def _round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


@pytest.mark.parametrize("bits,signed,max_value", [(4, True, 1.0), (6, True, 2.0),
                                                   (6, False, 2.0), (10, True, 100.0)])
def test_fixed_rounds_half_away_from_zero_and_wraps(bits, signed, max_value):
    scale = max_value / 2 ** (bits - 1 if signed else bits)
    digits = np.arange(-2 ** bits if signed else 0, 2 ** (bits + 1))
    # exact steps, halfway points and points between (all exact in f32)
    values = np.concatenate([digits, digits + 0.5, digits + 0.25]) * scale
    f, = _packed(ti.types.quant.fixed(bits, signed, max_value=max_value), n=values.size)
    got = _io(values.size, ti.f32)(f, values.astype(np.float32))
    expect = _wrap(_round_half_away(values / scale), bits, signed) * scale
    np.testing.assert_array_equal(got, expect.astype(np.float32))
    np.testing.assert_array_equal(f.to_numpy(), got)


def _float_model(values, exp, frac, signed):
    """Nearest value of the format (ties away from zero), zero below the smallest normal."""
    d = frac - int(signed)
    bias = 2 ** (exp - 1) - 1
    out = []
    for v in np.asarray(values, dtype=np.float64):
        if v == 0:
            out.append(0.0)
            continue
        e = math.floor(math.log2(abs(v)))
        m = math.floor(abs(v) / 2.0 ** (e - d) + 0.5)  # 1.digits scaled by 2^d, rounded
        if m == 2 ** (d + 1):
            m, e = 2 ** d, e + 1
        out.append(0.0 if e + bias < 1 else math.copysign(m * 2.0 ** (e - d), v))
    return np.array(out)


def _float_grid(exp, frac, signed):
    d = frac - int(signed)
    bias = 2 ** (exp - 1) - 1
    mags = [(1 + m / 2 ** d) * 2.0 ** (e - bias) for e in range(1, 2 ** exp) for m in range(2 ** d)]
    return np.array(mags + ([-x for x in mags] if signed else []) + [0.0])


@pytest.mark.parametrize("exp,frac,signed", [(3, 4, True), (4, 3, False), (5, 6, True)])
def test_float_every_value_round_trips_and_others_round_to_nearest(exp, frac, signed):
    grid = _float_grid(exp, frac, signed)
    top = grid.max()
    rng = np.random.default_rng(1)
    bias = 2 ** (exp - 1) - 1
    low = 2.0 ** (1 - bias)
    between = rng.uniform(low, top * 0.99, 400) * (rng.choice([-1, 1], 400) if signed else 1)
    tiny = rng.uniform(0, low * 0.45, 50)  # closer to 0 than to the smallest normal
    values = np.concatenate([grid, between, tiny]).astype(np.float32)
    f, = _packed(ti.types.quant.float(exp=exp, frac=frac, signed=signed), n=values.size)
    got = _io(values.size, ti.f32)(f, values)
    np.testing.assert_array_equal(got[:grid.size], grid.astype(np.float32))
    np.testing.assert_array_equal(got, _float_model(values, exp, frac, signed).astype(np.float32))
    k = grid.size + 7
    f[k] = float(values[k])
    assert f[k] == got[k]


def _shared_model(group, frac_signed):
    """Each value rounded to the ulp the group's largest exponent leaves its digits."""
    top = math.floor(math.log2(max(abs(v) for v in group)))
    out = []
    for v, (frac, signed) in zip(group, frac_signed):
        d = frac - int(signed)
        ulp = 2.0 ** (top - d + 1)
        digits = min(math.floor(abs(v) / ulp + 0.5), 2 ** d - 1)
        out.append(math.copysign(digits * ulp, v) if digits else 0.0)
    return out


def test_shared_exponent_rounds_every_member_against_the_largest():
    kinds = [(7, False), (7, True), (9, True)]
    n = 300
    a, b, c = _packed(*(ti.types.quant.float(exp=5, frac=f, signed=s) for f, s in kinds),
                      n=n, shared=True)
    rng = np.random.default_rng(2)
    # (not below 1: a negative value rounding to no digits reads back nonzero in Taichi)
    vals = rng.uniform(1, 50, (3, n)) * np.array([[1], [-1], [1]])
    vals = vals.astype(np.float32)

    @ti.kernel
    def put(x: ti.types.ndarray(), y: ti.types.ndarray(), z: ti.types.ndarray()):
        for i in range(n):
            a[i] = x[i]
        for i in range(n):
            b[i] = y[i]
        for i in range(n):
            c[i] = z[i]

    put(vals[0], vals[1], vals[2])
    got = np.stack([a.to_numpy(), b.to_numpy(), c.to_numpy()])
    expect = np.zeros((3, n))
    for i in range(n):  # a alone, then a and b, then all three: each store re-rounds the group
        first = _shared_model([vals[0, i], 0.0, 0.0], kinds)
        second = _shared_model([first[0], vals[1, i], 0.0], kinds)
        expect[:, i] = _shared_model([second[0], second[1], vals[2, i]], kinds)
    np.testing.assert_array_equal(got, expect.astype(np.float32))
    b[5] = 1000.0  # a bigger exponent: the others lose their low digits
    assert a[5] == np.float32(_shared_model([got[0, 5], 1000.0, got[2, 5]], kinds)[0])


def test_stores_of_one_word_in_one_stretch_share_one_exponent():
    kinds = [(7, False), (7, True)]
    n = 200
    a, b = _packed(*(ti.types.quant.float(exp=5, frac=f, signed=s) for f, s in kinds),
                   n=n, shared=True)
    rng = np.random.default_rng(3)
    vals = (rng.uniform(1, 50, (2, n)) * np.array([[1], [-1]])).astype(np.float32)

    @ti.kernel
    def put(x: ti.types.ndarray(), y: ti.types.ndarray()):
        for i in range(n):
            a[i] = x[i]  # fused with the next store, as Taichi's store fusion does
            b[i] = y[i]

    put(vals[0], vals[1])
    expect = np.array([_shared_model([vals[0, i], vals[1, i]], kinds) for i in range(n)]).T
    np.testing.assert_array_equal(np.stack([a.to_numpy(), b.to_numpy()]),
                                  expect.astype(np.float32))


def test_vector_field_with_a_shared_exponent_and_a_matrix_of_fixed():
    n = 100
    vel = ti.Vector.field(3, dtype=ti.types.quant.float(exp=6, frac=8))
    cat = ti.field(dtype=ti.types.quant.int(2, False))
    voxel = ti.BitpackedFields(max_num_bits=32)
    voxel.place(vel, shared_exponent=True)
    voxel.place(cat)
    m = ti.Matrix.field(2, 2, dtype=ti.types.quant.fixed(7, True, max_value=4.0))
    bp = ti.BitpackedFields(max_num_bits=32)
    bp.place(m)
    ti.root.dense(ti.i, n).place(voxel, bp)
    rng = np.random.default_rng(4)
    vals = (rng.uniform(1, 3, (n, 4)) * rng.choice([-1, 1], (n, 4))).astype(np.float32)

    @ti.kernel
    def put(a: ti.types.ndarray()):
        for i in range(n):
            vel[i] = ti.Vector([a[i, 0], a[i, 1], a[i, 2]])  # one fused store of the word
            cat[i] = i % 5
            m[i] = ti.Matrix([[a[i, 0], a[i, 1]], [a[i, 2], a[i, 3]]])

    put(vals)
    kinds = [(8, True)] * 3
    expect = np.array([_shared_model(list(row[:3]), kinds) for row in vals])
    np.testing.assert_array_equal(vel.to_numpy(), expect.astype(np.float32))
    np.testing.assert_array_equal(cat.to_numpy(), np.arange(n) % 5 % 4)
    scale = 4.0 / 64
    np.testing.assert_array_equal(m.to_numpy().reshape(n, 4),
                                  _wrap(_round_half_away(vals / scale), 7, True) * scale)
    vel[2] = [1.0, -300.0, 0.5]  # Python scope: one component after the other
    first = _shared_model([1.0, expect[2, 1], expect[2, 2]], kinds)
    second = _shared_model([first[0], -300.0, first[2]], kinds)
    np.testing.assert_array_equal(vel[2].to_numpy(),
                                  np.array(_shared_model([second[0], second[1], 0.5], kinds),
                                           dtype=np.float32))


def test_parallel_atomic_adds_into_fields_sharing_a_word():
    p, q, r = _packed(ti.types.quant.int(8, True), ti.types.quant.int(8, False),
                      ti.types.quant.fixed(16, True, max_value=64.0), n=4)
    m = 100003

    @ti.kernel
    def adds():
        for i in range(m):
            p[i % 4] += 1
            q[i % 4] += 3
            r[i % 4] += 0.01

    adds()
    counts = np.bincount(np.arange(m) % 4)
    step = np.floor(0.01 / (64.0 / 2 ** 15) + 0.5)  # the added value rounded once to digits
    np.testing.assert_array_equal(p.to_numpy(), _wrap(counts, 8, True))
    np.testing.assert_array_equal(q.to_numpy(), _wrap(3 * counts, 8, False))
    np.testing.assert_array_equal(r.to_numpy(), _wrap(step * counts, 16, True) * (64.0 / 2 ** 15))


def test_atomic_kinds_return_the_old_value():
    a, b = _packed(ti.types.quant.int(6, True), ti.types.quant.float(exp=5, frac=8), n=2)
    olds = ti.field(ti.f32, shape=4)

    @ti.kernel
    def run():
        a[0] = 20
        olds[0] = ti.atomic_add(a[0], 15)  # 35 wraps to -29
        olds[1] = ti.atomic_max(a[1], -3)
        b[0] = 1.5
        olds[2] = ti.atomic_add(b[0], 0.25)
        olds[3] = ti.atomic_min(b[1], -2.0)

    run()
    np.testing.assert_array_equal(olds.to_numpy(), [20, 0, 1.5, 0.0])
    assert (a[0], a[1], b[0], b[1]) == (-29, 0, 1.75, -2.0)


def test_struct_for_fill_and_numpy_round_trip():
    x, = _packed(ti.types.quant.int(13, True), n=8)

    @ti.kernel
    def total() -> int:
        s = 0
        for i in x:
            s += i + x[i]
        return s

    x.fill(-5)
    assert total() == sum(range(8)) - 40
    x.from_numpy(np.arange(8) * 1500)
    np.testing.assert_array_equal(x.to_numpy(), _wrap(np.arange(8) * 1500, 13, True))
    assert x.to_numpy().dtype == np.int32


def test_fields_placed_alone_or_with_shape():
    x = ti.field(ti.types.quant.int(4, False), shape=(2, 3))
    y = ti.field(ti.types.quant.fixed(8, True, max_value=4.0))
    ti.root.dense(ti.ij, (2, 3)).place(y)
    x[1, 2] = 17
    y[1, 2] = 1.0
    assert (x[1, 2], y[1, 2]) == (1, 1.0)


@pytest.mark.parametrize("make, match", [
    (lambda: ti.field(ti.types.quant.fixed(8), needs_grad=True), "not differentiable"),
    (lambda: ti.BitpackedFields(max_num_bits=48), "48 bits"),
    (lambda: ti.BitpackedFields(32).place(ti.field(ti.types.quant.int(20)),
                                          ti.field(ti.types.quant.int(20))), "40 bits used"),
    (lambda: ti.BitpackedFields(32).place(ti.field(ti.i32)), "QuantType"),
    (lambda: ti.BitpackedFields(32).place(ti.field(ti.types.quant.float(5, 7)),
                                          shared_exponent=True), "At least 2"),
    (lambda: ti.types.quant.float(5, 7, compute=ti.f64), "must be f32"),
])
def test_refusals_name_the_problem(make, match):
    with pytest.raises((FieldsimError, TypeError), match=match):
        make()


def test_lazy_grad_skips_quantized_fields():
    x = ti.field(ti.f32, shape=3)
    y = ti.field(ti.types.quant.fixed(8), shape=3)
    ti.root.lazy_grad()
    assert x.grad is not None and y.grad is None


def test_quant_array_packs_cells_and_keeps_neighbours():
    x = ti.field(dtype=ti.types.quant.int(4, False))
    ti.root.dense(ti.ij, (6, 4)).quant_array(ti.j, 8, max_num_bits=32).place(x)
    bit = ti.field(dtype=ti.types.quant.int(1, False))
    ti.root.dense(ti.i, 4).quant_array(ti.i, 32, max_num_bits=32).place(bit)
    assert x.shape == (6, 32) and bit.shape == (128,)
    m = 10001

    @ti.kernel
    def run():
        for i, j in x:
            x[i, j] = i * 7 + j
        for k in range(m):  # 32 cells a word: every add is a CAS on a shared word
            bit[k % 128] += 1

    run()
    i, j = np.indices((6, 32))
    np.testing.assert_array_equal(x.to_numpy(), _wrap(i * 7 + j, 4, False))
    np.testing.assert_array_equal(bit.to_numpy(), np.bincount(np.arange(m) % 128) % 2)
    x[2, 9] = 17
    expect = _wrap(i * 7 + j, 4, False)
    expect[2, 9] = 1
    np.testing.assert_array_equal(x.to_numpy(), expect)
    x.from_numpy(np.ones((6, 32), dtype=np.int32) * 3)
    assert (x.to_numpy() == 3).all()


def test_quant_array_refuses_what_does_not_fit():
    x = ti.field(dtype=ti.types.quant.int(5))
    with pytest.raises(FieldsimError, match="do not fit"):
        ti.root.dense(ti.i, 2).quant_array(ti.i, 8, max_num_bits=32).place(x)


def test_tape_reads_quantized_values_as_constants_and_refuses_a_chain_through_them():
    n = 4
    x = ti.field(ti.f32, shape=n, needs_grad=True)
    loss = ti.field(ti.f32, shape=(), needs_grad=True)
    a, = _packed(ti.types.quant.fixed(12, True, max_value=8.0), n=n)
    x.from_numpy(np.arange(n, dtype=np.float32))
    a.from_numpy(np.arange(n) * 0.5)

    @ti.kernel
    def weighted():
        for i in range(n):
            loss[None] += a[i] * x[i] * x[i]

    @ti.kernel
    def write():
        for i in range(n):
            a[i] = x[i] * 2

    @ti.kernel
    def total():
        for i in range(n):
            loss[None] += a[i]

    with ti.ad.Tape(loss=loss):
        weighted()
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * (np.arange(n) * 0.5) * np.arange(n))
    with pytest.raises(FieldsimError, match="quantized type .* not differentiable"), \
            ti.ad.Tape(loss=loss):
        write()
        total()


def test_bitpack_under_a_pointer_node_iterates_its_active_cells():
    a = ti.field(ti.types.quant.int(10, True))
    b = ti.field(ti.types.quant.fixed(12, True, max_value=4.0))
    bp = ti.BitpackedFields(32)
    bp.place(a, b)
    ti.root.pointer(ti.i, 8).dense(ti.i, 4).place(bp)

    @ti.kernel
    def write():
        for k in range(4):
            a[k * 9] = k * 300
            b[k * 9] = -1.5

    @ti.kernel
    def cells() -> int:
        n = 0
        for i in a:
            n += 1
        return n

    write()
    assert cells() == 4 * 4  # four blocks of 4 cells activated
    np.testing.assert_array_equal(a.to_numpy()[[0, 9, 18, 27]], _wrap(np.arange(4) * 300, 10, True))
    assert b[9] == -1.5 and b[10] == 0.0
    a.parent(3).deactivate_all()  # the pointer node (above bit_struct, dense): cells and words go
    assert cells() == 0 and a[9] == 0


def test_components_of_a_vector_field_in_different_bitpacks():
    qf = ti.types.quant.float(exp=6, frac=13)
    x = ti.Vector.field(2, dtype=qf)
    tag = ti.field(ti.types.quant.int(3, False))
    for k in range(2):
        bp = ti.BitpackedFields(max_num_bits=32)
        bp.place(x.get_scalar_field(k), *([tag] if k else []))
        ti.root.dense(ti.i, 50).place(bp)
    vals = np.random.default_rng(6).uniform(-9, 9, (50, 2)).astype(np.float32)

    @ti.kernel
    def put(a: ti.types.ndarray()):
        for i in range(50):
            x[i] = ti.Vector([a[i, 0], a[i, 1]])
            tag[i] = i

    put(vals)
    expect = _float_model(vals.ravel(), 6, 13, True).reshape(50, 2).astype(np.float32)
    np.testing.assert_array_equal(x.to_numpy(), expect)
    np.testing.assert_array_equal(tag.to_numpy(), np.arange(50) % 8)
    x[3] = [1.0, -2.0]
    assert x[3].to_numpy().tolist() == [1.0, -2.0] and tag[3] == 3


def test_python_scope_entry_of_a_quantized_vector_or_matrix_element():
    """`v[i][k]` reads and writes one entry (it raised an IndexError: the entry's index went to
    the container words as if it were a cell's)."""
    kinds = [(8, True)] * 3
    v = ti.Vector.field(3, dtype=ti.types.quant.float(exp=6, frac=8))
    bp = ti.BitpackedFields(max_num_bits=32)
    bp.place(v, shared_exponent=True)
    m = ti.Matrix.field(2, 2, dtype=ti.types.quant.fixed(7, True, max_value=4.0))
    u = ti.Vector.field(2, dtype=ti.types.quant.int(16, False))
    bp2, bp3 = ti.BitpackedFields(max_num_bits=32), ti.BitpackedFields(max_num_bits=32)
    bp2.place(m)
    bp3.place(u)
    ti.root.dense(ti.i, 4).place(bp, bp2, bp3)
    v[1] = [1.0, 3.0, 0.5]
    before = _shared_model([1.0, 3.0, 0.5], kinds)
    assert [v[1][k] for k in range(3)] == [float(x) for x in before]
    v[1][1] = -300.0  # that entry alone: the exponent follows it and the others are re-encoded
    after = _shared_model([before[0], -300.0, before[2]], kinds)
    assert [v[1][k] for k in range(3)] == [float(x) for x in after]
    assert v[0][2] == 0.0 and v[2][1] == 0.0
    m[2][0, 1] = 1.3  # scale 4 / 64: 20.8 digits round to 21
    m[2][1, 0] = -0.03  # -0.48 digits round to -0
    assert [m[2][a, b] for a in range(2) for b in range(2)] == [0.0, 21 / 16, 0.0, 0.0]
    u[3][1] = 70000  # 16 bits keep 70000 - 65536
    assert (u[3][0], u[3][1], u[2][1]) == (0, 4464, 0)


def test_parent_of_a_bitpacked_field_is_its_bit_struct_node():
    """A bitpack's fields sit under a bit_struct node, so `x.parent(2)` is the node the bitpack
    was placed in; it was the node above, and `ti.deactivate(x.parent(2), [i])` deactivated a
    whole pointer cell of 4 instead of one bitmasked cell."""
    a = ti.field(ti.types.quant.int(6, True))
    bp = ti.BitpackedFields(max_num_bits=32)
    bp.place(a)
    ti.root.pointer(ti.i, 2).bitmasked(ti.i, 4).place(bp)
    lone = ti.field(ti.types.quant.int(6, True))
    ti.root.dense(ti.i, 8).place(lone)
    assert a.parent().kind == "bit_struct" and a.parent().shape == (8,)
    assert a.parent(2).kind == "bitmasked" and a.parent(3).kind == "pointer"
    assert lone.parent().kind == "dense"  # placed on its own: no bitpack, no bit_struct

    @ti.kernel
    def put():
        for i in range(8):
            a[i] = i + 1

    @ti.kernel
    def drop():
        for i in a:
            if i == 5:
                ti.deactivate(a.parent(2), [i])

    put()
    drop()
    active = [ti.is_active(a.parent(2), [i]) for i in range(8)]
    assert active == [1, 1, 1, 1, 1, 0, 1, 1]
