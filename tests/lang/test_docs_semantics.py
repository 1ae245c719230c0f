"""Behaviour the snippets of Taichi's user documentation rely on: Python-scope printing of
matrices, fields and structs; shift result types; f64 kernel printing; FieldsBuilder trees."""
import numpy as np
import pytest

import fieldsim as fs
from support.backends import arch_in_use


def test_python_scope_matrix_prints_as_numpy():
    v = fs.Vector([1.5, 2.0])
    m = fs.Matrix([[1, 2], [3, 4]])
    assert str(v) == str(np.array([1.5, 2.0])) == repr(v)
    assert str(m) == "[[1 2]\n [3 4]]"

    @fs.kernel
    def ret() -> fs.types.vector(3, fs.f32):
        return fs.Vector([0.5, 1.0, -2.0])

    assert str(ret()) == str(np.array([0.5, 1.0, -2.0], np.float32))


def test_print_field_shows_its_values():
    x = fs.field(fs.i32, shape=4)
    x.from_numpy(np.array([3, 1, 4, 1], np.int32))
    assert str(x) == "[3 1 4 1]"
    s = fs.Struct.field({"a": fs.i32, "v": fs.math.vec2}, shape=2)
    s[1].a = 5
    s[1].v = [0.5, 1.0]
    assert str(s[1]) == "{'a': 5, 'v': [0.5, 1.0]}"
    assert "'a': array([0, 5]" in str(s)


def test_struct_value_prints_as_dict():
    vec3 = fs.types.vector(3, float)
    sphere = fs.types.struct(center=vec3, radius=float)
    assert str(sphere(center=vec3(1, 2, 3), radius=0.5)) == \
        "{'center': [1.0, 2.0, 3.0], 'radius': 0.5}"


def test_shift_keeps_left_operand_type():
    out = fs.field(fs.i64, shape=5)

    @fs.kernel
    def k(n: fs.i32):
        out[0] = fs.u8(1) << 9  # u8: the bit leaves the byte
        out[1] = fs.u8(3) << n  # 0b110000000 -> 0b10000000
        out[2] = fs.i16(1) << 20
        out[3] = fs.u8(200) >> 1
        out[4] = fs.i64(1) << 40

    k(7)
    assert out.to_numpy().tolist() == [0, 128, 0, 100, 2 ** 40]


def test_f64_prints_twelve_decimals(capfd):
    @fs.kernel
    def k(a: fs.f64, b: fs.f32):
        print(a, b, fs.Vector([a, 1.0], fs.f64), f"{a:.3f}")

    k(1.0 / 3.0, 0.25)
    assert capfd.readouterr().out == \
        "0.333333333333 0.250000 [0.333333333333, 1.000000000000] 0.333\n"


def test_fields_builder_tree_and_destroy():
    @fs.kernel
    def inc(v: fs.template()):
        for I in fs.grouped(v):
            v[I] += 1

    fb = fs.FieldsBuilder()
    x = fs.field(fs.f32)
    y = fs.field(fs.i32)
    fb.dense(fs.ij, (2, 3)).place(x)
    fb.dense(fs.i, 4).place(y)
    tree = fb.finalize()
    inc(x)
    inc(y)
    assert x.shape == (2, 3) and x.to_numpy().sum() == 6
    assert y.to_numpy().tolist() == [1, 1, 1, 1]
    with pytest.raises(Exception):
        fb.dense(fs.i, 2)  # finalized
    tree.destroy()
    with pytest.raises(Exception, match="destroyed"):
        x.to_numpy()
    z = fs.field(fs.f32, shape=3)  # fs.root's fields are untouched by the tree
    inc(z)
    assert z.to_numpy().tolist() == [1, 1, 1]


def test_and_or_take_python_values():
    @fs.kernel
    def k(a: fs.i32, b: fs.i32, c: fs.i32) -> fs.types.vector(6, fs.i32):
        return fs.Vector([a or b, a and b, c or b, c and b, (a > 0) and b, a and b and 9])

    assert k(5, 2, 0).to_numpy().tolist() == [5, 2, 2, 0, 2, 9]
    assert k(0, 3, 4).to_numpy().tolist() == [3, 0, 4, 3, 0, 0]


def test_walrus_dict_comprehension_membership_static_assign():
    @fs.kernel
    def k(p: fs.i32) -> fs.types.vector(5, fs.i32):
        b = 2 + (a := p)
        b += a
        d = {q: q * p for q in range(3) if q != 1}
        n = fs.static(3)
        r = 0
        if fs.static(n > 2 and 2 in [1, 2] and 5 not in (1, 2)):
            r = 1
        return fs.Vector([b, d[0], d[2], r, a])

    assert k(5).to_numpy().tolist() == [12, 0, 10, 1, 5]


def test_pow_bool_builtins_and_select_types():
    @fs.kernel
    def k(a: fs.i32, x: fs.f32) -> fs.types.vector(5, fs.f32):
        return fs.Vector([pow(a, 3), pow(x, 2), bool(a), bool(x - x),
                          fs.select(1 > 2, 1.5, 2) / 4])

    assert k(3, 1.5).to_numpy().tolist() == [27, 2.25, 1, 0, 0.5]


def test_vector_unit_is_int_and_stpq_swizzles():
    u = fs.Vector.unit(3, 1)
    assert u.to_numpy().dtype.kind == "i" and u.to_numpy().tolist() == [0, 1, 0]
    v = fs.math.vec4(1, 2, 3, 4)
    assert v.stpq.to_numpy().tolist() == [1, 2, 3, 4] and v.q == 4 and v.ts.to_numpy().tolist() == [2, 1]

    @fs.kernel
    def k() -> fs.types.vector(4, fs.i32):
        w = fs.math.ivec4(1, 2, 3, 4)
        e = fs.Vector.unit(2, 0)
        return fs.Vector([w.p, w.qs[0], e[0] + e[1], fs.Vector.unit(2, 1)[1] // 1])

    assert k().to_numpy().tolist() == [3, 4, 1, 1]


def test_struct_methods_argument_and_classmethod_kernel():
    @fs.func
    def area(self):
        return 2.0 * self.r

    circle = fs.types.struct(r=fs.f32, __struct_methods={"area": area})

    @fs.kernel
    def k() -> fs.f32:
        return circle(r=1.5).area()

    assert k() == 3.0

    @fs.data_oriented
    class Counter:
        n = fs.field(fs.i32, shape=4)

        @classmethod
        @fs.kernel
        def add(cls, d: fs.i32):
            for i in cls.n:
                cls.n[i] += d

    Counter.add(2)
    Counter().add(1)
    assert Counter.n.to_numpy().tolist() == [3, 3, 3, 3]


def test_dynamic_fields_as_lists():
    x = fs.field(fs.i32)
    fs.root.dense(fs.i, 4).dynamic(fs.j, 8, chunk_size=4).place(x)
    pts = fs.types.struct(p=fs.math.vec2, w=fs.f32).field()
    fs.root.dynamic(fs.i, 16).place(pts)
    lengths = fs.field(fs.i32, shape=6)

    @fs.kernel
    def fill():
        for i in range(4):
            for j in range(i + 1):
                x[i].append(j * 10)
            lengths[i] = x[i].length()
        x[2].deactivate()
        lengths[4] = x[2].length()
        for k in range(3):
            pts.append(fs.Struct(p=fs.math.vec2(k, -k), w=0.5 * k))
        lengths[5] = pts.length()

    fill()
    assert lengths.to_numpy().tolist() == [1, 2, 3, 4, 0, 3]
    assert x[3, 3] == 30 and x[2, 1] == 0
    assert pts.w.to_numpy()[:3].tolist() == [0, 0.5, 1.0] and pts[2].p[1] == -2


def test_deactivate_all_snodes():
    x = fs.field(fs.f32)
    fs.root.pointer(fs.i, 4).bitmasked(fs.i, 2).place(x)
    x[3] = 1.0
    x[6] = 2.0
    fs.deactivate_all_snodes()
    assert x[3] == 0 and x[6] == 0

    @fs.kernel
    def count() -> fs.i32:
        c = 0
        for i in x:
            c += 1
        return c

    assert count() == 0


def test_cfg_reads_back_init_options():
    fs.init(arch=fs.cpu, debug=True, default_fp=fs.f64, fast_math=False, random_seed=3)
    assert fs.cfg.debug is True and fs.cfg.default_fp == fs.f64 and fs.cfg.fast_math is False
    assert fs.cfg.random_seed == 3 and fs.cfg.arch == arch_in_use() and fs.cfg.cpu_max_num_threads >= 1
    assert fs.cfg.advanced_optimization is True  # a Taichi option not given: Taichi's default
    fs.init(arch=fs.cpu)
    assert fs.cfg.debug is False and fs.cfg.default_fp == fs.f32


def test_ti_environment_variables(monkeypatch):
    monkeypatch.setenv("TI_DEBUG", "1")
    monkeypatch.setenv("TI_DEFAULT_FP", "64")
    monkeypatch.setenv("TI_ARCH", "x64")
    fs.init(arch=fs.cuda)  # TI_ARCH wins over arch=
    assert fs.cfg.arch == fs.cpu and fs.cfg.debug is True and fs.cfg.default_fp == fs.f64
    fs.init(arch=fs.cpu, debug=False, default_fp=fs.f32)  # given options win over the others
    assert fs.cfg.debug is False and fs.cfg.default_fp == fs.f32
    monkeypatch.setenv("TI_DEFAULT_FP", "16")
    with pytest.raises(ValueError):
        fs.init(arch=fs.cpu)
    monkeypatch.setenv("TI_DEFAULT_FP", "32")
    monkeypatch.setenv("TI_CPU_MAX_NUM_THREADS", "many")
    with pytest.raises(ValueError, match="TI_CPU_MAX_NUM_THREADS=many"):
        fs.init(arch=fs.cpu)


def test_layout_mistakes_name_the_users_line():
    fb = fs.FieldsBuilder()
    x = fs.field(fs.f32)
    fb.dense(fs.i, 4).place(x)
    tree = fb.finalize()
    mistakes = [
        (lambda: fb.finalize(), fs.FieldsimError, r"finalize\(\) was already called"),
        (lambda: fb.dense(fs.i, 2), fs.FieldsimError, "after finalize"),
        (lambda: fs.FieldsBuilder().dense(fs.i, 3).place(3), fs.FieldsimError, "3 is not a field"),
        (lambda: fs.root.dense(fs.i, "four"), fs.FieldsimTypeError, "sizes must be an int"),
        (lambda: fs.root.dense(fs.ij, 4.5j), fs.FieldsimTypeError, "sizes must be an int"),
        (lambda: fs.root.dense(fs.i, -1), fs.FieldsimRuntimeError, "should be positive"),
    ]
    for make, error, what in mistakes:
        with pytest.raises(error, match=what) as err:
            make()
        assert err.value.loc is not None and err.value.loc.file == __file__
    tree.destroy()
    with pytest.raises(fs.FieldsimRuntimeError, match="already called") as err:
        tree.destroy()
    assert err.value.loc.file == __file__


def test_python_scope_element_reads_are_f64_as_in_taichi():
    v = fs.Vector.field(2, fs.f32, shape=2)
    v[0] = [2.2, 1.0]
    e = v[0]
    assert e.to_numpy().dtype == np.float64 and e[0] == float(np.float32(2.2))
    assert str(e) == str(np.array([float(np.float32(2.2)), 1.0]))
    e.y = 3.5  # still writes through to the field
    assert v[0][1] == 3.5
    m = fs.Matrix.field(2, 2, fs.i32, shape=1)
    m[0] = [[1, 2], [3, 4]]
    assert m[0].to_numpy().dtype.kind == "i" and str(m[0]) == "[[1 2]\n [3 4]]"
