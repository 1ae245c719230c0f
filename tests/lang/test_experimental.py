"""`ti.experimental.real_func`: the pre-1.7 spelling of `real_func` still works, and warns."""
import warnings

import pytest

import fieldsim as fs


def test_experimental_real_func_recurses_and_warns():
    fs.init(arch=fs.cpu)
    with pytest.warns(DeprecationWarning, match="ti.real_func"):
        @fs.experimental.real_func
        def fib(n: fs.i32) -> fs.i32:
            r = n
            if n >= 2:
                r = fib(n - 1) + fib(n - 2)
            return r

    out = fs.field(fs.i32, shape=12)

    @fs.kernel
    def run():
        for i in out:
            out[i] = fib(i)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # calling it warns no more
        run()
    expected = [0, 1]
    while len(expected) < 12:
        expected.append(expected[-1] + expected[-2])
    assert out.to_numpy().tolist() == expected


def test_experimental_names_only_real_func():
    assert fs.experimental.__all__ == ["real_func"]
    with pytest.raises(AttributeError):
        fs.experimental.no_such_thing  # noqa: B018
