"""A launch given the same array object as the previous launch reuses that launch's binding
(`ndarray.bind_arg_reused`); anything about the array that the binding checked or read, changed
in place in between, makes the launch bind and check it again."""
import warnings

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.lang import ndarray as nd_mod
from support.backends import on_cpu


@pytest.fixture
def binds(monkeypatch):
    """How many times an ndarray argument was bound in full."""
    count = [0]
    full = nd_mod._bind_arg

    def counted(*args):
        count[0] += 1
        return full(*args)
    monkeypatch.setattr(nd_mod, "_bind_arg", counted)
    return count


def _bound(reused: int, launches: int) -> int:
    """Full bindings expected: `reused` where the backend binds host memory in place (the CPU),
    one per launch where it stages copies (CUDA and its emulation: never reused)."""
    return reused if on_cpu() else launches


def _fill_kernel():
    @fs.kernel
    def fill(a: fs.types.ndarray(dtype=fs.f32, ndim=1), t: fs.f32):
        for i in a:
            a[i] = t + i
    return fill


def test_same_numpy_array_is_bound_once(binds):
    fill = _fill_kernel()
    a = np.zeros(4, np.float32)
    for t in range(3):
        fill(a, float(t))
    assert binds[0] == _bound(1, 3)
    np.testing.assert_array_equal(a, [2, 3, 4, 5])
    b = np.zeros(4, np.float32)  # another array: bound
    fill(b, 1.0)
    assert binds[0] == _bound(2, 4)


def test_in_place_reshape_and_dtype_change_are_checked_again():
    fill = _fill_kernel()
    a = np.zeros(4, np.float32)
    fill(a, 0.0)
    a.shape = (2, 2)
    with pytest.raises(fs.FieldsimTypeError, match=r"kernel 'fill'.*argument a.*ndim=1") as e:
        fill(a, 0.0)
    assert e.value.loc is not None and e.value.loc.file == __file__
    a.shape = (4,)
    a.dtype = np.int32  # the same memory seen as another dtype
    with pytest.raises(fs.FieldsimTypeError, match=r"argument a.*dtype=f32.*dtype=i32"):
        fill(a, 0.0)


def test_moved_memory_is_rebound():
    fill = _fill_kernel()
    a = np.zeros(4, np.float32)
    fill(a, 0.0)
    a.resize(4096, refcheck=False)  # new memory (a fieldsim cache holds the array)
    a.resize(4, refcheck=False)
    fill(a, 1.0)
    np.testing.assert_array_equal(a, [1, 2, 3, 4])


def test_non_contiguous_and_read_only_still_refused():
    @fs.kernel
    def fill2(a: fs.types.ndarray(dtype=fs.f32, ndim=2)):
        for i, j in a:
            a[i, j] = 1.0

    a = np.zeros(24, np.float32)[:12].reshape(3, 4)
    fill2(a)
    a.flags.writeable = False
    with pytest.raises(fs.FieldsimTypeError, match="read-only"):
        fill2(a)
    a.flags.writeable = True
    a.shape = (4, 3)
    fill2(a)
    assert (a == 1).all()
    with warnings.catch_warnings():  # NumPy 2.4 deprecates setting strides, not yet removed
        warnings.simplefilter("ignore", DeprecationWarning)
        a.strides = (24, 4)  # in place: rows 6 floats apart, not contiguous
    with pytest.raises(fs.FieldsimTypeError, match="Non contiguous"):
        fill2(a)


def test_fs_ndarray_replaced_storage_is_rebound(binds):
    fill = _fill_kernel()
    a = fs.ndarray(fs.f32, shape=4)
    fill(a, 0.0)
    fill(a, 1.0)
    assert binds[0] == _bound(1, 2)
    np.testing.assert_array_equal(a.to_numpy(), [1, 2, 3, 4])
    fs.init(arch=fs.cpu)
    with pytest.raises(fs.FieldsimTypeError, match="argument a.*no data"):
        fill(a, 0.0)


def test_torch_tensor_changed_in_place_is_rebound(binds):
    torch = pytest.importorskip("torch")
    fill = _fill_kernel()
    t = torch.zeros(4)
    fill(t, 0.0)
    fill(t, 1.0)
    assert binds[0] == _bound(1, 2)
    assert t.tolist() == [1, 2, 3, 4]
    t.set_(torch.zeros(6))  # other memory and shape
    fill(t, 0.0)
    assert t.tolist() == [0, 1, 2, 3, 4, 5]
    t.requires_grad_()  # its .grad joins the binding
    fill(t, 0.0)
    assert t.grad is not None
    t2 = torch.zeros(3, 4)
    fill2 = _fill_kernel()
    t2.t_()  # transposed in place: not C-contiguous
    with pytest.raises(fs.FieldsimTypeError, match="ndim=1|C-contiguous"):
        fill2(t2, 0.0)


def test_every_launch_on_an_array_sees_one_field_after_the_cache_is_cleared():
    """The checker and the Tape know a host array by its field: a kernel's reused binding must
    not keep a field the array cache dropped while other kernels get a new one."""
    torch = pytest.importorskip("torch")
    if not on_cpu():
        pytest.skip("bindings are reused only where host memory is bound in place (the CPU)")
    for make in (lambda: np.zeros(4, np.float32), lambda: torch.zeros(4)):
        fill, other = _fill_kernel(), _fill_kernel()
        a = make()
        fill(a, 0.0)
        kept = [make() for _ in range(300)]  # more than the cache keeps (alive: distinct)
        for b in kept:
            other(b, 0.0)
        fill(a, 1.0)
        other(a, 1.0)
        assert fill._nd_memo["a"][2][0].proxy is other._nd_memo["a"][2][0].proxy
