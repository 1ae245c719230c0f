"""A call that does not fit a kernel or func says so in Taichi's words, which programs match."""
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


def _kernel():
    @fs.kernel
    def scale(u: fs.f32, v: fs.f32) -> fs.f32:
        return u * v
    return scale


@pytest.mark.parametrize("args,kwargs,words", [
    ((1.0, 2.0, 3.0), {}, "Too many arguments"),
    ((1.0,), {"w": 2.0}, "Unexpected argument 'w'"),
    ((1.0,), {"u": 2.0}, "Multiple values for argument 'u'"),
    ((), {"v": 2.0}, "Parameter 'u' missing"),
])
def test_kernel_call_mismatch(args, kwargs, words):
    with pytest.raises(fs.TaichiSyntaxError, match=words):
        _kernel()(*args, **kwargs)


@fs.func
def _blend(p, q, r=0.5):
    return p * r + q * (1 - r)


@pytest.mark.parametrize("which,words", [
    (0, "Too many arguments"),
    (1, "Unexpected argument 's'"),
    (2, "Multiple values for argument 'p'"),
    (3, "Parameter 'q' missing"),
])
def test_func_call_mismatch(which, words):
    @fs.kernel
    def k() -> fs.f32:
        out = 0.0
        if fs.static(which == 0):
            out = _blend(1.0, 2.0, 0.5, 7.0)
        elif fs.static(which == 1):
            out = _blend(1.0, 2.0, s=1.0)
        elif fs.static(which == 2):
            out = _blend(1.0, p=2.0, q=3.0)
        else:
            out = _blend(1.0, r=0.25)
        return out

    with pytest.raises(fs.TaichiSyntaxError, match=words):
        k()


def test_keywords_that_fit_still_bind():
    @fs.kernel
    def k() -> fs.f32:
        return _blend(q=2.0, p=4.0, r=0.25)

    assert k() == pytest.approx(4.0 * 0.25 + 2.0 * 0.75)
    assert _kernel()(v=3.0, u=2.0) == pytest.approx(6.0)
