"""DLPack and torch interop on the CUDA backend: zero-copy capsules of device fields, CUDA arrays
as fs.ndarrays and kernel arguments, device-to-device to_torch/from_torch.

The emulator tests (cuda_emu.py: "device memory" is host memory) read the capsules with a small
ctypes consumer of their own, and feed fieldsim capsules that claim CUDA memory. The device tests
(marked `cuda`; they also need a CUDA build of torch, else they skip saying so) run the same
things against torch on a GPU: `python -m pytest -m cuda tests/cuda/test_cuda_interop.py`.
"""
import ctypes
import gc
import weakref

import numpy as np
import pytest
from cuda_emu import use_emulator

import fieldsim as fs
from fieldsim.lang import dlpack
from fieldsim.lang.interop import InteropError


@pytest.fixture
def emu():
    rt = use_emulator(fs)
    yield rt
    fs.init(arch=fs.cpu)


@pytest.fixture
def deleted(monkeypatch):
    """Addresses of the DLManagedTensors whose deleter ran, in order."""
    calls = []
    release = dlpack._release

    def counting(address, *args):
        calls.append(address)
        release(address, *args)
    monkeypatch.setattr(dlpack, "_release", counting)
    return calls


# ---- a consumer of our own (what torch does, in ctypes) ---------------------------------------------
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_set_name = ctypes.pythonapi.PyCapsule_SetName
_set_name.restype, _set_name.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_USED = ctypes.c_char_p(b"used_dltensor")  # the name must outlive the capsule


class _Managed(ctypes.Structure):
    """DLManagedTensor, as dlpack.h lays it out (written here, not taken from fieldsim)."""
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.CFUNCTYPE(None, ctypes.c_void_p))]


def read_capsule(capsule) -> dict:
    address = _get_pointer(capsule, b"dltensor")
    m = _Managed.from_address(address)
    return {"address": address, "data": m.data, "device": (m.device_type, m.device_id),
            "shape": tuple(m.shape[k] for k in range(m.ndim)),
            "strides": tuple(m.strides[k] for k in range(m.ndim)),
            "dtype": (m.code, m.bits, m.lanes), "byte_offset": m.byte_offset, "deleter": m.deleter}


def consume(capsule) -> dict:
    """Take the capsule's tensor as a consumer does: rename it, keep the deleter to call."""
    info = read_capsule(capsule)
    assert _set_name(capsule, _USED) == 0
    return info


def read_device(ptr, shape, dtype) -> np.ndarray:
    out = np.empty(shape, dtype)
    ctypes.memmove(out.ctypes.data, ptr, out.nbytes)
    return out


# ---- export: device fields as capsules (emulator) -----------------------------------------------
@pytest.mark.parametrize("make, dtype, code", [
    (lambda: fs.Vector.field(3, fs.f32, shape=4), np.float32, (2, 32, 1)),
    (lambda: fs.field(fs.f64, shape=(2, 5)), np.float64, (2, 64, 1)),
    (lambda: fs.field(fs.i32, shape=7), np.int32, (0, 32, 1)),
    (lambda: fs.ndarray(fs.u8, shape=(3, 2)), np.uint8, (1, 8, 1)),
])
def test_capsule_describes_the_device_memory(emu, deleted, make, dtype, code):
    x = make()
    x.from_numpy(np.arange(int(np.prod(x.storage_shape))).reshape(x.storage_shape).astype(dtype))
    assert x.__dlpack_device__() == (2, 0)
    cap = x.__dlpack__(stream=1)
    info = consume(cap)
    shape = x.storage_shape
    assert info["device"] == (2, 0) and info["shape"] == shape and info["dtype"] == code
    assert info["strides"] == tuple(int(np.prod(shape[k + 1:])) for k in range(len(shape)))
    assert info["data"] == x.storage.ptr and info["byte_offset"] == 0
    np.testing.assert_array_equal(read_device(info["data"], shape, dtype), x.to_numpy())
    info["deleter"](info["address"])  # the consumer is done
    del cap
    gc.collect()
    assert deleted == [info["address"]]  # once: the consumed capsule's destructor does nothing


def test_unconsumed_capsule_calls_the_deleter_once(emu, deleted):
    x = fs.field(fs.f32, shape=3)
    storage = x.storage
    cap = x.to_dlpack()
    assert storage.exported == 1
    address = read_capsule(cap)["address"]
    del cap
    gc.collect()
    assert deleted == [address] and storage.exported == 0


def test_the_field_stays_alive_while_the_capsule_is_held(emu, deleted):
    x = fs.field(fs.f32, shape=4)
    x.from_numpy(np.array([1, 2, 3, 4], np.float32))
    cap = x.__dlpack__()
    info = consume(cap)
    gone = weakref.ref(x.storage)
    del x
    use_emulator(fs)  # a reset frees the backend's memory, but not memory lent out
    gc.collect()
    assert gone() is not None
    np.testing.assert_array_equal(read_device(info["data"], (4,), np.float32), [1, 2, 3, 4])
    info["deleter"](info["address"])
    del cap
    gc.collect()
    assert gone() is None and deleted == [info["address"]]


def test_capsule_is_a_view_both_ways(emu):
    x = fs.field(fs.f32, shape=5)

    @fs.kernel
    def ramp():
        for i in x:
            x[i] = 10.0 * i

    cap = x.__dlpack__()
    info = consume(cap)
    ramp()  # a kernel write after the export shows through the pointer
    np.testing.assert_array_equal(read_device(info["data"], (5,), np.float32), 10.0 * np.arange(5))
    src = np.full(5, -3.0, np.float32)
    ctypes.memmove(info["data"], src.ctypes.data, src.nbytes)  # and a write through it in the field
    np.testing.assert_array_equal(x.to_numpy(), src)
    info["deleter"](info["address"])


def test_export_refuses_what_the_protocol_forbids(emu):
    x = fs.field(fs.f32, shape=2)
    with pytest.raises(BufferError, match="stream=0"):
        x.__dlpack__(stream=0)
    with pytest.raises(BufferError, match="copy=True"):
        x.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="not"):
        x.__dlpack__(dl_device=(1, 0))
    with pytest.raises(fs.FieldsimTypeError, match="component"):
        fs.Vector.field(2, fs.f32, shape=2).get_scalar_field(0).__dlpack__()


# ---- import: CUDA arrays as fs.ndarrays and kernel arguments (emulator) -------------------------
class FakeCudaArray:
    """An array in "CUDA" memory (here a host buffer, as the emulator's) speaking DLPack."""

    def __init__(self, array):
        self.array = array
        self.streams = []

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None, **kwargs):
        self.streams.append(stream)
        a = self.array
        return dlpack.export(a.ctypes.data, a.shape, a.dtype, (2, 0), a)


def test_from_dlpack_shares_cuda_memory(emu, deleted):
    buf = np.zeros(6, np.float32)
    src = FakeCudaArray(buf)
    nd = fs.from_dlpack(src)
    assert src.streams == [1]  # fieldsim launches on the legacy default stream
    assert nd.shape == (6,) and nd.storage.ptr == buf.ctypes.data

    @fs.kernel
    def fill(a: fs.types.ndarray(dtype=fs.f32, ndim=1)):
        for i in a:
            a[i] = i + 0.5

    fill(nd)
    np.testing.assert_array_equal(buf, np.arange(6) + 0.5)
    assert deleted == []
    del nd
    gc.collect()
    assert len(deleted) == 1  # the producer's deleter, once the ndarray is gone


def test_cuda_array_as_a_kernel_argument_in_place(emu):
    buf = np.zeros((4, 2), np.float64)

    @fs.kernel
    def fill(a: fs.types.ndarray(dtype=fs.types.vector(2, fs.f64), ndim=1)):
        for i in a:
            a[i] = fs.Vector([i, -i])

    fill(FakeCudaArray(buf))
    np.testing.assert_array_equal(buf, np.stack([np.arange(4), -np.arange(4)], 1))
    nd = fs.from_dlpack(FakeCudaArray(buf), element_dim=1)
    assert nd.shape == (4,) and nd.n == 2


class FakeCudaTensor(FakeCudaArray):
    """What fieldsim reads of a torch CUDA tensor (its module's name starts with torch)."""
    __module__ = "torch_emulated"

    def __init__(self, array, grad=None):
        super().__init__(array)
        self.device = type("Device", (), {"type": "cuda"})()
        self.requires_grad, self.grad = grad is not None, grad

    def data_ptr(self):
        return self.array.ctypes.data

    def detach(self):
        return self


def test_cuda_tensor_grad_is_the_adjoints_gradient(emu):
    @fs.kernel
    def cube(a: fs.types.ndarray(), b: fs.types.ndarray()):
        for i in a:
            b[i] = a[i] ** 3

    av = np.linspace(-1, 1, 5)
    a = FakeCudaTensor(av.copy(), grad=FakeCudaTensor(np.zeros(5)))
    b = FakeCudaTensor(np.zeros(5), grad=FakeCudaTensor(np.zeros(5)))
    cube(a, b)
    np.testing.assert_allclose(b.array, av ** 3)
    b.grad = FakeCudaTensor(np.ones(5))  # a new seed: new memory, as a user's assignment gives
    cube.grad(a, b)
    np.testing.assert_allclose(a.grad.array, 3 * av ** 2)


def test_cuda_array_refusals(emu):
    with pytest.raises(InteropError, match="capsule"):
        fs.from_dlpack(FakeCudaArray(np.zeros(3, np.float32)).__dlpack__())
    strided = np.zeros((4, 4), np.float32)[:, ::2]

    class Strided(FakeCudaArray):
        def __dlpack__(self, stream=None, **kwargs):
            capsule = super().__dlpack__(stream, **kwargs)
            strides = dlpack._LIVE[max(dlpack._LIVE)][2]
            strides[1] = 2  # what a column-skipping view's capsule says
            return capsule

    with pytest.raises(InteropError, match="C-contiguous"):
        fs.from_dlpack(Strided(strided.copy()))
    with pytest.raises(InteropError, match="complex"):
        fs.from_dlpack(FakeCudaArray(np.zeros(3, np.complex64)))


def test_host_arrays_are_not_shared_with_cuda_kernels(emu):
    """fs.from_dlpack of host memory on the CUDA backend made an fs.ndarray whose host pointer
    kernels took as device memory (an illegal address on an H200, the context lost). Refused;
    the same array passed to a kernel directly is staged through the device."""
    host = np.zeros(4, np.float32)
    with pytest.raises(InteropError, match="host memory.*cuda backend.*kernel's fs.types.ndarray"):
        fs.from_dlpack(host)

    @fs.kernel
    def fill(a: fs.types.ndarray()):
        for i in a:
            a[i] = i * 3.0

    fill(host)
    np.testing.assert_array_equal(host, [0, 3, 6, 9])


class FakeJaxCudaArray(FakeCudaArray):
    """A JAX array on the GPU: a capsule without the read-only flag (pre-1.0 DLPack)."""
    __module__ = "jaxlib._jax"


def test_jax_device_arrays_are_never_written(emu):
    """JAX arrays are immutable; on the GPU their capsules did not say so, and a kernel wrote one."""
    buf = np.arange(4, dtype=np.float32)
    src = FakeJaxCudaArray(buf)

    @fs.kernel
    def double(a: fs.types.ndarray(), b: fs.types.ndarray()):
        for i in a:
            b[i] = 2.0 * a[i]

    out = np.zeros(4, np.float32)
    double(src, out)
    np.testing.assert_array_equal(out, [0, 2, 4, 6])
    with pytest.raises(fs.FieldsimTypeError, match="argument b.*read-only"):
        double(out, src)
    np.testing.assert_array_equal(buf, [0, 1, 2, 3])
    with pytest.raises(InteropError, match="read-only"):
        fs.from_dlpack(src)


def test_cuda_arrays_on_the_cpu_backend_are_refused_by_name():
    fs.init(arch=fs.cpu)
    src = FakeCudaArray(np.zeros(3, np.float32))
    with pytest.raises(InteropError, match="CUDA device memory.*cpu backend"):
        fs.from_dlpack(src)

    @fs.kernel
    def k(arr: fs.types.ndarray()):
        for i in arr:
            arr[i] = 1.0

    with pytest.raises(fs.FieldsimTypeError, match="argument arr.*CUDA device memory"):
        k(src)
    assert src.streams == []  # refused before its capsule was asked for


def test_versioned_capsules_and_their_read_only_flag():
    a = np.arange(4.0)
    imported = dlpack.import_capsule(a.__dlpack__(max_version=(1, 0)))
    assert (imported.ptr, imported.shape, imported.device) == (a.ctypes.data, (4,), (1, 0))
    assert not imported.read_only
    a.flags.writeable = False
    assert dlpack.import_capsule(a.__dlpack__(max_version=(1, 0))).read_only


# ---- on a GPU with torch -------------------------------------------------------------------------
@pytest.fixture
def torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA build of torch with a device (torch.cuda.is_available() is False)")
    fs.init(arch=fs.cuda)
    yield torch
    fs.init(arch=fs.cpu)


@pytest.mark.cuda
def test_torch_views_a_device_field(torch_cuda):
    torch = torch_cuda
    x = fs.field(fs.f32, shape=(3, 4))
    x.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    t = torch.from_dlpack(x)
    assert t.device.type == "cuda" and t.shape == (3, 4) and t.data_ptr() == x.storage.ptr
    np.testing.assert_array_equal(t.cpu().numpy(), x.to_numpy())

    @fs.kernel
    def double():
        for i, j in x:
            x[i, j] *= 2.0

    double()  # after the export: the view sees it once fieldsim's launches are waited for
    fs.sync()
    np.testing.assert_array_equal(t.cpu().numpy(), 2 * np.arange(12).reshape(3, 4))
    t[0, 0] = -1.0
    torch.cuda.synchronize()
    assert x[0, 0] == -1.0


@pytest.mark.cuda
def test_cuda_tensors_as_kernel_arguments_in_place(torch_cuda):
    torch = torch_cuda

    @fs.kernel
    def inc(a: fs.types.ndarray(dtype=fs.f32, ndim=1)):
        for i in a:
            a[i] += 1.0

    t = torch.arange(8, dtype=torch.float32, device="cuda")
    nd = fs.from_dlpack(t)
    inc(nd)
    fs.sync()
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(8) + 1)
    inc(t)  # a CUDA tensor passed directly: zero copy too
    fs.sync()
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(8) + 2)


@pytest.mark.cuda
def test_to_torch_and_from_torch_stay_on_the_device(torch_cuda):
    torch = torch_cuda
    x = fs.Vector.field(2, fs.f64, shape=5)
    src = torch.arange(10, dtype=torch.float64, device="cuda").reshape(5, 2)
    x.from_torch(src)
    np.testing.assert_array_equal(x.to_numpy(), np.arange(10).reshape(5, 2))
    t = x.to_torch(device="cuda")
    assert t.device.type == "cuda" and t.data_ptr() != x.storage.ptr  # a copy
    assert torch.equal(t, src)
    t[0, 0] = 100.0
    assert x[0][0] == 0.0
    x.from_torch(torch.ones(5, 2, dtype=torch.float32))  # a host tensor: through the host
    assert x.to_torch().device.type == "cpu" and x.to_torch().sum().item() == 10.0


@pytest.mark.cuda
def test_cuda_tensor_gradient_through_kernel_grad(torch_cuda):
    torch = torch_cuda

    @fs.kernel
    def cube(a: fs.types.ndarray(), b: fs.types.ndarray()):
        for i in a:
            b[i] = a[i] ** 3

    a = torch.linspace(-1, 1, 6, dtype=torch.float64, device="cuda", requires_grad=True)
    b = torch.zeros(6, dtype=torch.float64, device="cuda", requires_grad=True)
    cube(a, b)
    fs.sync()
    ah = a.detach().cpu().numpy()
    np.testing.assert_allclose(b.detach().cpu().numpy(), ah ** 3)
    b.grad = torch.ones(6, dtype=torch.float64, device="cuda")
    cube.grad(a, b)
    fs.sync()
    np.testing.assert_allclose(a.grad.cpu().numpy(), 3 * ah ** 2)


@pytest.mark.cuda
def test_torch_function_refuses_cuda_tensors_clearly(torch_cuda):
    torch = torch_cuda

    @fs.kernel
    def square(a: fs.types.ndarray(), b: fs.types.ndarray()):
        for i in a:
            b[i] = a[i] * a[i]

    @fs.ad.torch_function
    def f(a):
        b = torch.zeros_like(a)
        square(a, b)
        return b

    with pytest.raises(fs.FieldsimTypeError, match="torch_function.*host tensors"):
        f(torch.ones(3, dtype=torch.float64, device="cuda", requires_grad=True))
