"""print() inside kernels (written at run time in Taichi's format) and formatted assert messages."""
# the kernels below use str.format and % on purpose (that is what they test), mismatches included
# ruff: noqa: UP030, UP031, UP032, F522, F523, F525, PLE1300
import pytest

import fieldsim as fs


def test_print_scalars_sep_end(capfd):
    @fs.kernel
    def k(n: fs.i32, x: fs.f32):
        print("n =", n, "x =", x)
        print(n, 2, 1234.5, sep="|", end="!\n")
        print("100%", end="")
        print()

    print("before", flush=False)
    k(7, 0.5)
    out, err = capfd.readouterr()
    assert out == "before\nn = 7 x = 0.500000\n7|2|1234.500000!\n100%\n"
    assert err == ""


def test_print_types(capfd):
    @fs.kernel
    def k():
        print(fs.u64(2 ** 64 - 1), fs.i8(-3), fs.cast(-2.5, fs.f64), fs.u8(200))

    k()
    assert capfd.readouterr().out == "18446744073709551615 -3 -2.500000000000 200\n"  # f64: %.12f


def test_print_vectors_matrices_and_formats(capfd):
    m = fs.Matrix.field(2, 2, fs.f32, shape=())
    iv = fs.Vector.field(2, fs.i32, shape=())

    @fs.kernel
    def k(s: fs.f32):
        m[None] = fs.Matrix([[1.0, -2.0], [3.0, 4.5]])
        iv[None] = fs.Vector([3, 4])
        print("m =", m[None] * s)
        print(f"v = {iv[None]} w = {m[None][1, 1]:.1f} {iv[None]:.3d}")
        print("a {} b {:.2e} c {name}".format(iv[None][0], s, name=7))
        print("%d items at %.2f" % (iv[None][1], s))
        print([1, s, iv[None]])

    k(2.0)
    assert capfd.readouterr().out == (
        "m = [[2.000000, -4.000000], [6.000000, 9.000000]]\n"
        "v = [3, 4] w = 4.5 [003, 004]\n"
        "a 3 b 2.00e+00 c 7\n"
        "4 items at 2.00\n"
        "[1, 2.000000, [3, 4]]\n")


def test_print_in_a_parallel_loop_prints_every_iteration(capfd):
    x = fs.field(fs.i32, shape=50)

    @fs.kernel
    def k():
        for i in x:
            print("item", i)

    k()
    lines = capfd.readouterr().out.splitlines()
    assert sorted(lines) == sorted(f"item {i}" for i in range(50))


def test_print_spec_mismatch_is_a_type_error():
    x = fs.field(fs.f32, shape=())

    @fs.kernel
    def k():
        print(f"{x[None]:.2d}")

    with pytest.raises(fs.FieldsimTypeError, match=r"'.2d' doesn't match 'f32'.") as info:
        k()
    assert "test_print.py" in str(info.value)


def test_print_does_not_change_gradients():
    x = fs.field(fs.f32, shape=4, needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def k():
        for i in x:
            print(x[i])
            loss[None] += x[i] ** 2

    x.from_numpy(__import__("numpy").arange(4, dtype="float32"))
    with fs.Tape(loss):
        k()
    assert list(x.grad.to_numpy()) == [0.0, 2.0, 4.0, 6.0]


def test_assert_messages_show_kernel_values():
    fs.init(arch=fs.cpu, debug=True)
    x = fs.field(fs.i32, shape=8)
    x[5] = 42

    @fs.kernel
    def pct():
        for i in x:
            assert x[i] == 0, "x[%d] = %d" % (i, x[i])

    @fs.kernel
    def fstr(y: fs.f32):
        assert y < 0, f"y = {y} (must be negative)"

    @fs.kernel
    def always():
        assert False

    with pytest.raises(AssertionError, match=r"x\[5\] = 42"):
        pct()
    with pytest.raises(fs.FieldsimAssertionError, match=r"y = 0.500000 \(must be negative\)"):
        fstr(0.5)
    with pytest.raises(AssertionError):
        always()
    x[5] = 0
    pct()
    fstr(-1.0)


def test_asserts_are_not_checked_without_debug():
    @fs.kernel
    def k(y: fs.f32) -> fs.f32:
        assert y < 0, f"y = {y}"
        return y

    assert k(0.5) == 0.5


def test_format_constants_and_positional_fields(capfd):
    @fs.kernel
    def k(f: fs.f32, big: fs.u64):
        print(f"{4} {True} {1.23} {2:.3d}")
        print("{2} {1} {} {k:.1f}".format(3, 2, 1, k=f))
        print("{:.2}|{:>4}|".format(2, "ab"))
        print("u =", big)

    k(0.25, 2 ** 64 - 1)
    assert capfd.readouterr().out == ("4 True 1.23 002\n1 2 3 0.2\n02|  ab|\n"
                                      "u = 18446744073709551615\n")


def test_format_argument_errors():
    @fs.kernel
    def more():
        print("{0} {1}".format(1, 2, 3))

    @fs.kernel
    def unused(k: fs.f32):
        print("{}".format(1, k=k))

    @fs.kernel
    def signed_as_unsigned(i: fs.i32):
        print("{:u}".format(i + 1))

    with pytest.raises(fs.FieldsimSyntaxError, match=r"Expected 2 positional argument\(s\), but received 3"):
        more()
    with pytest.raises(fs.FieldsimSyntaxError, match="Keyword 'k' not used"):
        unused(1.0)
    with pytest.raises(fs.FieldsimTypeError, match="'u' doesn't match 'i32'"):
        signed_as_unsigned(1)


def test_print_is_the_kernels_print_even_when_builtins_print_was_replaced(capfd, monkeypatch):
    # ray.init (and other tools) replace builtins.print; a kernel's print must still compile
    import builtins
    original = builtins.print

    def safe_print(*args, **kwargs):
        original(*args, **kwargs)

    monkeypatch.setattr(builtins, "print", safe_print)
    fs.init(arch=fs.cpu)

    @fs.kernel
    def k(n: fs.i32):
        print("n =", n)

    k(7)
    fs.sync()
    assert "n = 7" in capfd.readouterr().out


def test_format_conversions_taichi_accepts_per_type(capfd):
    # Taichi 1.7.4: hex/octal only for unsigned values, `c` for no int, and an f64 without a
    # precision prints 12 decimals under every float conversion
    @fs.kernel
    def ok(u: fs.u32, d: fs.f64):
        print(f"{u:x} {u:08X} {u:o} {d:e} {d:f} {d:.3e}")

    ok(255, 0.25)
    fs.sync()
    assert capfd.readouterr().out.strip() == "ff 000000FF 377 %.12e %.12f 2.500e-01" % (0.25, 0.25)

    @fs.kernel
    def hex_of_signed(n: fs.i32):
        print(f"{n:x}")

    @fs.kernel
    def char_of_unsigned(n: fs.u8):
        print(f"{n:c}")

    for bad, spec, dt in ((hex_of_signed, "x", "i32"), (char_of_unsigned, "c", "u8")):
        with pytest.raises(fs.errors.FieldsimTypeError, match=f"'{spec}' doesn't match '{dt}'"):
            bad(7)


def test_debug_mode_reports_a_left_shift_that_loses_bits(capfd):
    fs.init(arch=fs.cpu, debug=True)
    x = fs.field(fs.i32, shape=4)
    u = fs.field(fs.u8, shape=())

    @fs.kernel
    def k(s: fs.i32):
        for i in range(4):
            x[i] = (i + 1) << s

    @fs.kernel
    def k8(v: fs.u8, s: fs.u8):
        u[None] = fs.bit_shl(v, s)

    k(2)  # no bit lost
    assert capfd.readouterr().out == ""
    k(30)  # only 1 << 30 fits in i32: the others change the sign bit or lose bits
    out = capfd.readouterr().out
    with open(__file__) as src:
        line = next(n for n, t in enumerate(src, 1) if "x[i] = (i + 1) << s" in t)
    report = (f'Shift left overflow detected in File "{__file__}", line {line}, in k:\n'
              f"            x[i] = (i + 1) << s\n                   {'^' * 12}\n\n")
    assert out == report * 3
    assert x.to_numpy().tolist() == [1 << 30, -(1 << 31), -(1 << 30), 0]  # still wrapped
    k8(200, 1)  # unsigned: the top bit is lost
    assert "Shift left overflow detected" in capfd.readouterr().out and u[None] == 144
    k8(100, 1)
    assert capfd.readouterr().out == "" and u[None] == 200


def test_left_shift_without_debug_prints_nothing(capfd):
    fs.init(arch=fs.cpu)
    y = fs.field(fs.i32, shape=())

    @fs.kernel
    def k(v: fs.i32):
        y[None] = v << 31

    k(3)
    assert capfd.readouterr().out == "" and y[None] == -(1 << 31)


def test_print_struct_shows_member_values_like_python_scope(capfd):
    # taichi-dev/taichi#5790: a struct printed in a kernel showed a description, not its values
    inner = fs.types.struct(k=fs.i32, w=fs.f64)
    ray = fs.types.struct(ro=fs.math.vec3, n=inner)
    f = ray.field(shape=2)

    @fs.kernel
    def k(a: fs.i32):
        r = ray(ro=fs.math.vec3(0, 0, a), n=inner(k=a, w=0.5))
        print(r)
        f[1].n.k = 7
        print("f1 =", f[1], end="!\n")
        print(f"{r.n}")

    k(3)
    assert capfd.readouterr().out == (
        "{'ro': [0.000000, 0.000000, 3.000000], 'n': {'k': 3, 'w': 0.500000000000}}\n"
        "f1 = {'ro': [0.000000, 0.000000, 0.000000], 'n': {'k': 7, 'w': 0.000000000000}}!\n"
        "{'k': 3, 'w': 0.500000000000}\n")
