"""A Python float passed by value to a `@fs.func` is a default_fp variable there (Taichi copies
every by-value argument into one), so the func's arithmetic on it rounds as that type does."""
import numpy as np

import fieldsim as fs

H = 1.1  # not exact in f32: f32 arithmetic on it differs from Python's folded in f64


def _run(default_fp):
    fs.init(arch=fs.cpu, default_fp=default_fp)
    out = fs.field(default_fp, shape=5)

    @fs.func
    def cube(h):
        return h * h * h

    @fs.func
    def poly6_numerator(s, h):
        return h * h - s * s

    @fs.func
    def cube_annotated(h: fs.f32):
        return h * h * h

    @fs.func
    def cube_template(h: fs.template()):
        return h * h * h

    @fs.kernel
    def k():
        out[0] = cube(H)
        out[1] = poly6_numerator(0.5, H)
        out[2] = cube_annotated(H)
        out[3] = cube_template(H)  # a template argument stays the Python value
        out[4] = H * H * H  # Python floats in the kernel body fold as Python does
    k()
    return out.to_numpy()


def test_float_arguments_round_as_default_fp_variables():
    got = _run(fs.f32)
    h = np.float32(H)
    want = [h * h * h, h * h - np.float32(0.5) * np.float32(0.5), h * h * h,
            np.float32(H * H * H), np.float32(H * H * H)]
    assert got.tolist() == np.array(want, np.float32).tolist()
    assert got[0] != got[3]  # the two roundings do differ for 1.1


def test_float_arguments_under_f64_keep_f64_values():
    got = _run(fs.f64)
    assert got[0] == H * H * H and got[1] == H * H - 0.25
    h = np.float32(H)
    assert got[2] == float(h * h * h)  # annotated f32: an f32 variable, f32 products


def test_a_local_bound_once_to_a_number_folds_as_taichi():
    # Taichi forwards `cube_size = 0.2` into its uses and folds: `0.2 // 0.002` of the f32
    # values is floor of the double quotient 99.99999637 = 99 (the f32 quotient rounds to
    # 100: a 2-D sand program laid 99 particles per row in Taichi, 100 in fieldsim), and
    # `y ** 7` is the double power rounded once
    fs.init(arch=fs.cpu)
    out = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        cube_size = 0.2
        spacing = 0.002
        out[0] = cube_size // spacing
        y = 1.0123
        out[1] = y ** 7
        out[2] = cube_size / spacing  # a division is IEEE's in both: the f32 quotient
        w = H
        out[3] = w ** 6

    k()
    c, s = np.float32(0.2), np.float32(0.002)
    want = [np.floor(np.float64(c) / np.float64(s)), np.float32(float(np.float32(1.0123)) ** 7),
            c / s, np.float32(float(np.float32(H)) ** 6)]
    np.testing.assert_array_equal(out.to_numpy(), np.array(want, np.float32))
    assert want[0] == 99 and want[2] == 100
