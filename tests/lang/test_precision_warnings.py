"""Taichi 1.7.4's "may lose precision" warnings (fieldsim/lang/precision.py): a store or atomic
whose value's type promotes with the target's to something wider warns at the user's line, once
per statement; widening stores, declarations, casts, func arguments and returns do not."""
import inspect
import warnings

import pytest

import fieldsim as fs

# fieldsim's warning class (Taichi's warnings go to its C++ logger: not run under Taichi)
PrecisionLossWarning = pytest.importorskip("fieldsim.lang.precision").PrecisionLossWarning


def _warnings_by_line(run, kernel):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    first = inspect.getsourcelines(kernel.fn if hasattr(kernel, "fn") else kernel)[1]
    out = {}
    for w in caught:
        if issubclass(w.category, PrecisionLossWarning):
            assert w.filename == __file__
            out.setdefault(w.lineno - first, []).append(str(w.message))
    return out


@pytest.fixture
def fields():
    fs.init(arch=fs.cpu, cpu_max_num_threads=1)
    return {"i": fs.field(fs.i32, shape=4), "f": fs.field(fs.f32, shape=4),
            "d": fs.field(fs.f64, shape=4), "u": fs.field(fs.u8, shape=4),
            "l": fs.field(fs.i64, shape=4), "U": fs.field(fs.u32, shape=4),
            "h": fs.field(fs.f16, shape=4), "v": fs.Vector.field(3, fs.u8, shape=2)}


def _marked(fn):
    """{offset from the def line: the expected messages} from `# W: ...` comments."""
    lines, _ = inspect.getsourcelines(fn)
    expected = {}
    for k, text in enumerate(lines):
        if "# W:" in text:
            expected[k] = [m.strip() for m in text.split("# W:")[1].split(";")]
    return expected


def test_narrowing_assignments_and_atomics_warn_where_taichi_does(fields):
    fi, ff, fd, fu, fl, fU, fh, fv = (fields[k] for k in "ifdulUhv")

    def body():
        a = 0
        a = 1.5  # W: Assign may lose precision: i32 <- f32
        b = 0.0
        b = fs.f64(2.0)  # W: Assign may lose precision: f32 <- f64
        c = 1
        c += 2.5  # W: Atomic add may lose precision: i32 <- f32
        c *= 2.5  # W: Assign may lose precision: i32 <- f32
        c /= 2  # W: Assign may lose precision: i32 <- f32
        c //= 2
        fi[0] = 1.5  # W: Assign may lose precision: i32 <- f32
        ff[0] = fd[0]  # W: Assign may lose precision: f32 <- f64
        fu[0] = fi[0]  # W: Assign may lose precision: u8 <- i32
        fu[1] = 3  # W: Assign may lose precision: u8 <- i32
        fi[1] = fl[0]  # W: Assign may lose precision: i32 <- i64
        fi[2] += ff[0]  # W: Atomic add may lose precision: i32 <- f32
        fi[3] -= 2.5  # W: Atomic sub may lose precision: i32 <- f32
        fi[0] *= 1.5  # W: Assign may lose precision: i32 <- f32
        fh[0] = 1.0  # W: Assign may lose precision: f16 <- f32
        fi[3] = fU[0]  # W: Assign may lose precision: i32 <- u32
        fi[3] = fs.floor(ff[0])  # W: Assign may lose precision: i32 <- f32
        fv[0] = fs.Vector([255, 0, 0])  # W: Assign may lose precision: u8 <- i32
        fv[1] = fs.Vector([0.5, 0, 0]) * 255  # W: Assign may lose precision: u8 <- f32
        fs.atomic_max(fi[0], 1.5)  # W: Atomic max may lose precision: i32 <- f32
        fs.atomic_min(c, 0.5)  # W: Atomic min may lose precision: i32 <- f32
        g = fs.Vector([1, 2])
        g = fs.Vector([1.5, 2.5])  # W: Assign may lose precision: i32 <- f32
        g[0] = 1.5  # W: Assign may lose precision: i32 <- f32
        g.y = 2.5  # W: Assign may lose precision: i32 <- f32
        g += fs.Vector([0.5, 0.5])  # W: Atomic add may lose precision: i32 <- f32
        # none of these narrow, or they say so
        ff[1] = fi[0]
        fd[1] = ff[0]
        ff[2] = 3
        ff[3] = fl[0]
        fU[0] = fi[0]
        fl[1] = fi[0]
        fi[0] = fs.cast(1.5, fs.i32)
        y: fs.i32 = 2.5
        z: fs.f32 = fd[0]
        fi[1] = y + int(z) + a + int(b)

    kernel = fs.kernel(body)
    got = _warnings_by_line(kernel, body)
    assert got == _marked(body)


def test_func_arguments_and_returns_do_not_warn(fields):
    ff = fields["f"]

    @fs.func
    def g(a: fs.i32):
        return a

    @fs.kernel
    def k(x: fs.f32) -> fs.i32:
        g(ff[0])
        return x

    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionLossWarning)
        assert k(1.5) == 1


def test_one_warning_per_line_across_compiles(fields):
    fi = fields["i"]

    @fs.kernel
    def k(t: fs.template()):
        fi[0] = 1.5 * t

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        k(1)
        k(2)  # a second instance of the same line
    assert [str(w.message) for w in caught if w.category is PrecisionLossWarning] == \
        ["Assign may lose precision: i32 <- f32"]


def _host_warnings(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_back.f_lineno
        run()
    got = [(w.lineno, str(w.message)) for w in caught if issubclass(w.category, PrecisionLossWarning)]
    assert all(w.filename == __file__ for w in caught if issubclass(w.category, PrecisionLossWarning))
    return [(n - line, m) for n, m in got]  # 0: at the line that copies


def test_narrowing_host_copies_warn_once_per_field_dtype_and_component():
    # Taichi's copy kernel warns when it is compiled: a field's first copy from each array
    # dtype, once per component it assigns; a wider or same-typed copy never
    import numpy as np
    fs.init(arch=fs.cpu, cpu_max_num_threads=1)
    a = fs.field(fs.f32, shape=4)
    v = fs.Vector.field(3, fs.f32, shape=4)
    m = fs.Matrix.field(2, 2, fs.i32, shape=4)
    f32_f64 = "Assign may lose precision: f32 <- f64"
    assert _host_warnings(lambda: a.from_numpy(np.ones(4))) == [(0, f32_f64)]
    assert _host_warnings(lambda: a.from_numpy(np.ones(4))) == []
    assert _host_warnings(lambda: a.from_numpy(np.ones(4, np.float32))) == []
    assert _host_warnings(lambda: a.from_numpy(np.ones(4, np.int32))) == []
    assert _host_warnings(lambda: v.from_numpy(np.ones((4, 3)))) == [(0, f32_f64)] * 3
    assert _host_warnings(lambda: m.from_numpy(np.ones((4, 2, 2), np.int64))) == [
        (0, "Assign may lose precision: i32 <- i64")] * 4
    assert _host_warnings(lambda: fs.field(fs.i32, shape=2).from_numpy(np.ones(2, np.uint32))) == [
        (0, "Assign may lose precision: i32 <- u32")]
    assert _host_warnings(lambda: fs.field(fs.u32, shape=2).from_numpy(np.ones(2, np.int32))) == []
    assert _host_warnings(lambda: a.to_numpy(dtype=np.float64)) == []
    assert _host_warnings(lambda: a.to_numpy(dtype=np.int32)) == [(0, "Assign may lose precision: i32 <- f32")]
    s = fs.Struct.field({"p": fs.f32, "q": fs.i32}, shape=2)
    assert _host_warnings(lambda: s.from_numpy({"p": np.ones(2), "q": np.ones(2, np.int64)})) == [
        (0, f32_f64), (0, "Assign may lose precision: i32 <- i64")]
    nd = fs.Vector.ndarray(2, fs.f32, shape=3)
    assert _host_warnings(lambda: nd.from_numpy(np.ones((3, 2)))) == [(0, f32_f64)] * 2


def test_a_u1_into_an_8_bit_integer_warns_as_taichi():
    # Taichi 1.7.4 warns "u8 <- u1" and "i8 <- u1" for a comparison stored or added into an
    # 8-bit integer and for a bool array copied into one, though u1 promotes with them to them;
    # i16 and wider, and floats, stay silent. fieldsim followed the promotion only (silent)
    import numpy as np
    fs.init(arch=fs.cpu, cpu_max_num_threads=1)
    f = {name: fs.field(getattr(fs, name), shape=2) for name in ("i8", "u8", "i16", "u16", "i32", "f16")}
    b8, s8, b16, s16, s32 = f["u8"], f["i8"], f["u16"], f["i16"], f["i32"]

    @fs.kernel
    def compare(a: fs.i32):
        b8[0] = a < 3  # W: Assign may lose precision: u8 <- u1
        s8[0] += a < 3  # W: Atomic add may lose precision: i8 <- u1
        s16[0] = a < 3
        b16[0] += a < 3
        s32[0] = a < 3

    assert _warnings_by_line(lambda: compare(1), compare) == _marked(compare.fn)
    for name, field in f.items():
        want = [(0, f"Assign may lose precision: {name} <- u1")] if name in ("i8", "u8") else []
        assert _host_warnings(lambda: field.from_numpy(np.ones(2, np.bool_))) == want, name


def test_a_repeated_host_copy_is_one_lookup(monkeypatch):
    # a training loop calls from_numpy every step: after a field's first copy from an array
    # dtype, the next ones neither search the dtype table again nor warn
    import numpy as np

    from fieldsim.lang import precision
    fs.init(arch=fs.cpu, cpu_max_num_threads=1)
    a = fs.field(fs.f32, shape=4)
    assert len(_host_warnings(lambda: a.from_numpy(np.ones(4)))) == 1

    def searched(_dtype):
        raise AssertionError("the dtype table was searched again")

    monkeypatch.setattr(precision, "from_numpy", searched)
    for _ in range(3):
        assert _host_warnings(lambda: a.from_numpy(np.ones(4))) == []
    np.testing.assert_array_equal(a.to_numpy(), np.ones(4, np.float32))
