"""Messages that point to the fix: numpy/math calls in kernels, unsupported Python constructs
in words, module attribute errors in full, a Tape loss without gradients, `.grad` of a field
without gradients, Taichi-only init options (a note), and where the compile cache lives."""
import linecache
import math
import os

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.lang import runtime
from support.backends import emulated


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


def _kernel(body: str, **names):
    """A kernel whose body is `body`, with source that the frontend can read."""
    src = "@fs.kernel\ndef k():\n    " + body.replace("\n", "\n    ") + "\n"
    filename = f"<hint-{abs(hash(src))}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {"fs": fs, "np": np, "math": math, **names}
    exec(compile(src, filename, "exec"), ns)
    return ns["k"]


def _message(body, **names) -> str:
    with pytest.raises(fs.FieldsimError) as info:
        _kernel(body, **names)()
    return str(info.value)


def test_numpy_and_math_functions_point_to_fieldsim():
    x = fs.field(fs.f32, shape=2)
    msg = _message("x[0] = np.sin(x[0])", x=x)
    assert "np.sin runs in Python, not in kernels: use fs.sin (in Taichi code: ti.math.sin)" in msg
    assert "@fs.func" not in msg
    assert "use fs.exp" in _message("x[0] = math.exp(x[0])", x=x)
    assert "use fs.atan2" in _message("x[0] = np.arctan2(x[0], x[1])", x=x)
    assert "fs.cast(v, fs.f64)" in _message("x[0] = np.float64(x[0])", x=x)


def test_plain_python_function_still_suggests_func():
    x = fs.field(fs.f32, shape=2)

    class Scale:  # a user's callable object (plain functions are inlined, as in Taichi)
        def __call__(self, v):
            return 2 * v

    msg = _message("x[0] = helper(x[0])", x=x, helper=Scale())
    assert "decorate it with @fs.func" in msg and "runs in Python" not in msg


@pytest.mark.parametrize("body, words", [
    ("f = lambda a: a", "a lambda is not supported in a kernel: define the function outside"),
    ("s = {1, 2}", "a set literal is not supported in a kernel"),
    ("g = sum(i for i in range(3))", "a generator expression is not supported in a kernel"),
    ("try:\n    pass\nexcept ValueError:\n    pass", "a try statement is not supported in a "
                                                     "kernel: kernels cannot catch exceptions"),
    ("raise ValueError('no')", "a raise statement is not supported in a kernel: use `assert"),
    ("import os", "an import is not supported in a kernel: import at module level"),
])
def test_unsupported_constructs_are_named_in_words(body, words):
    msg = _message(body)
    assert words in msg
    for ast_name in ("Lambda", "Set:", "GeneratorExp", "Try", "Raise", "Import"):
        assert f"kernel: {ast_name}" not in msg


def test_module_attribute_error_is_not_cut():
    x = fs.field(fs.f32, shape=2)
    long_name = "an_attribute_name_long_enough_to_have_been_cut_at_eighty_characters_before"
    msg = _message(f"x[0] = fs.math.{long_name}(x[0])", x=x)
    assert f"module 'fieldsim.lang.math' has no attribute '{long_name}'" in msg
    assert "<module" not in msg


def test_tape_loss_without_gradient_is_a_located_fieldsim_error():
    x = fs.field(fs.f32, shape=2, needs_grad=True)
    my_loss = fs.field(fs.f32, shape=())
    with pytest.raises(fs.FieldsimError) as info:
        with fs.Tape(my_loss):
            pass
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)  # what Taichi raises
    assert "loss field 'my_loss' has no gradient" in msg
    assert "my_loss = fs.field(..., needs_grad=True)" in msg
    assert "test_kernel_hints.py" in msg  # the user's line
    assert x.grad is not None


def test_grad_of_a_field_without_gradients_says_which_and_how():
    pressure = fs.field(fs.f32, shape=2)
    with pytest.raises(fs.FieldsimError) as info:
        pressure.grad.to_numpy()
    msg = str(info.value)
    assert "pressure.grad has not been placed" in msg
    assert "needs_grad=True" in msg and "'pressure'" in msg and "lazy_grad" in msg
    assert "test_kernel_hints.py" in msg and "pressure.grad.to_numpy()" in msg  # the user's line


def test_taichi_only_init_option_gives_a_one_line_note():
    with pytest.warns(runtime.IgnoredOptionWarning, match="print_benchmark_stat: no effect") as rec:
        fs.init(arch=fs.cpu, print_benchmark_stat=True)
    assert len(rec) == 1 and "\n" not in str(rec[0].message)
    assert os.path.basename(rec[0].filename) == "test_kernel_hints.py"


def test_cache_dir_settings(monkeypatch, tmp_path):
    monkeypatch.delenv("FIELDSIM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert fs.init(arch=fs.cpu).cache_dir == str(tmp_path / "xdg" / "fieldsim")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # ignored, as the XDG spec says
    assert fs.init(arch=fs.cpu).cache_dir == os.path.join(os.path.expanduser("~"), ".cache",
                                                           "fieldsim")
    monkeypatch.setenv("FIELDSIM_CACHE_DIR", str(tmp_path / "env"))
    assert fs.init(arch=fs.cpu).cache_dir == str(tmp_path / "env")
    rt = fs.init(arch=fs.cpu, offline_cache_file_path=str(tmp_path / "arg"))
    assert rt.cache_dir == str(tmp_path / "arg")


def test_xdg_cache_home_is_where_kernels_are_cached(monkeypatch, tmp_path):
    monkeypatch.delenv("FIELDSIM_CACHE_DIR", raising=False)
    monkeypatch.delenv("FIELDSIM_OFFLINE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    fs.init(arch=fs.cpu, offline_cache=True)
    if emulated():
        pytest.skip("the emulated CUDA backend (tests/cuda/cuda_emu.py) compiles without the cache")
    y = fs.field(fs.f32, shape=2)

    @fs.kernel
    def fill_y():
        for i in y:
            y[i] = 3.0 + i * 0.123456

    fill_y()
    assert y[1] == pytest.approx(3.123456)
    cached = [f for _, _, files in os.walk(tmp_path / "fieldsim") for f in files]
    assert cached, "the compiled kernel was not stored under $XDG_CACHE_HOME/fieldsim"


def test_no_note_when_the_option_asks_for_what_fieldsim_does(recwarn):
    fs.init(arch=fs.cpu, fast_math=False, _test_mode=True)
    assert not [w for w in recwarn if issubclass(w.category, runtime.IgnoredOptionWarning)]
