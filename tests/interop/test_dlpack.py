"""Fields and ndarrays share memory with numpy/torch/JAX through DLPack; torch tensors and JAX
arrays are kernel arguments in place; mismatches are clear errors, never silent copies."""
import numpy as np
import pytest

import fieldsim as fs
from support.backends import on_cpu

torch = pytest.importorskip("torch")


@pytest.mark.cpu_backend("numpy views of field memory; CUDA's: tests/cuda/test_cuda_interop.py")
def test_field_dlpack_is_zero_copy_both_ways():
    x = fs.field(fs.f32, shape=(2, 3))
    t = torch.from_dlpack(x)
    assert t.shape == (2, 3) and t.dtype == torch.float32
    t[1, 2] = 7.0  # a write through the tensor is a write to the field
    assert x[1, 2] == 7.0
    x[0, 0] = -1.0
    assert t[0, 0].item() == -1.0
    assert np.from_dlpack(x).ctypes.data == t.data_ptr()
    v = fs.Vector.field(3, fs.f64, shape=4)
    assert torch.from_dlpack(v.to_dlpack()).shape == (4, 3)


@pytest.mark.cpu_backend("host memory shared with kernels; refused on CUDA (test_cuda_interop.py)")
def test_from_dlpack_wraps_a_tensor_and_kernels_write_it():
    t = torch.zeros(5, 2, dtype=torch.float64)
    nd = fs.from_dlpack(t, element_dim=1)
    assert nd.shape == (5,) and nd.n == 2

    @fs.kernel
    def fill(a: fs.types.ndarray(dtype=fs.types.vector(2, fs.f64), ndim=1)):
        for i in a:
            a[i] = fs.Vector([i, 2 * i])

    fill(nd)
    np.testing.assert_array_equal(t.numpy(), np.stack([np.arange(5), 2 * np.arange(5)], 1))


def test_to_torch_and_from_torch_copy_with_exact_shape():
    x = fs.Vector.field(2, fs.f64, shape=3)
    x.from_torch(torch.arange(6, dtype=torch.float64).reshape(3, 2))
    t = x.to_torch()
    t[0, 0] = 100.0  # a copy: the field keeps its value
    assert x[0][0] == 0.0 and x[2][1] == 5.0
    with pytest.raises(fs.FieldsimTypeError, match="shape"):
        x.from_torch(torch.zeros(6, dtype=torch.float64))


def test_to_torch_shapes_follow_to_numpy_and_keep_dims():
    v = fs.Vector.field(3, fs.f32, shape=(2, 4))
    col = fs.Matrix.field(3, 1, fs.f32, shape=2)
    m = fs.Matrix.field(2, 3, fs.f32, shape=2)
    v.from_numpy(np.arange(24, dtype=np.float32).reshape(2, 4, 3))
    assert v.to_torch().shape == (2, 4, 3)
    t = v.to_torch(keep_dims=True)  # a vector field as n x 1 matrices, as to_numpy(keep_dims)
    assert t.shape == (2, 4, 3, 1) and v.to_torch("cpu", True).shape == (2, 4, 3, 1)
    np.testing.assert_array_equal(t.numpy(), v.to_numpy(keep_dims=True))
    assert col.to_torch().shape == (2, 3)  # an n x 1 matrix field reads as vectors
    assert col.to_torch(keep_dims=True).shape == (2, 3, 1)
    assert m.to_torch(keep_dims=True).shape == (2, 2, 3)
    with pytest.raises(TypeError, match="keep_dims"):
        fs.field(fs.f32, shape=2).to_torch(keep_dims=True)


def test_from_torch_takes_what_to_torch_gives():
    col = fs.Matrix.field(3, 1, fs.f32, shape=2)
    col.from_torch(torch.arange(6, dtype=torch.float32).reshape(2, 3))
    assert col[1][2, 0] == 5.0
    col.from_torch(col.to_torch(keep_dims=True) * 2)
    assert col[1][2, 0] == 10.0
    v = fs.Vector.field(3, fs.f32, shape=2)
    v.from_torch(torch.arange(6, dtype=torch.float32).reshape(2, 3, 1))
    assert v[1][0] == 3.0


def test_tensor_kernel_argument_in_place_and_its_grad():
    @fs.kernel
    def cube(a: fs.types.ndarray(), b: fs.types.ndarray()):
        for i in a:
            b[i] = a[i] ** 3

    a = torch.linspace(-1, 1, 6, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(6, dtype=torch.float64, requires_grad=True)
    cube(a, b)
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy() ** 3)
    b.grad = torch.ones(6, dtype=torch.float64)
    cube.grad(a, b)  # as in Taichi: the tensors' .grad are the gradients
    np.testing.assert_allclose(a.grad.numpy(), 3 * a.detach().numpy() ** 2)


def test_tensor_argument_mismatches_are_clear_errors():
    @fs.kernel
    def k(a: fs.types.ndarray(dtype=fs.f32, ndim=1)):
        for i in a:
            a[i] += 1.0

    with pytest.raises(fs.FieldsimTypeError, match="C-contiguous"):
        k(torch.zeros(4, 2, dtype=torch.float32)[:, 0])
    with pytest.raises(fs.FieldsimTypeError, match="dtype"):
        k(torch.zeros(4, dtype=torch.float64))
    with pytest.raises(fs.FieldsimTypeError, match="bfloat16"):
        k(torch.zeros(4, dtype=torch.bfloat16))
    with pytest.raises(fs.FieldsimTypeError, match="ndim"):
        k(torch.zeros(4, 1, dtype=torch.float32))


def test_jax_arrays_are_read_in_place_and_never_written():
    jnp = pytest.importorskip("jax.numpy")

    @fs.kernel
    def double(a: fs.types.ndarray(), b: fs.types.ndarray()):
        for i in a:
            b[i] = 2.0 * a[i]

    a = jnp.arange(4, dtype=jnp.float32)
    b = torch.zeros(4, dtype=torch.float32)
    double(a, b)
    np.testing.assert_array_equal(b.numpy(), [0, 2, 4, 6])
    with pytest.raises(fs.FieldsimTypeError, match="read-only"):
        double(b, a)  # JAX arrays are immutable: writing one is refused, not a crash
    with pytest.raises(fs.FieldsimTypeError, match="read-only" if on_cpu() else "read-only|host memory"):
        fs.from_dlpack(a)  # (a CUDA backend refuses a JAX array in host memory as such)


def test_tape_takes_a_one_element_tensor_loss():
    @fs.kernel
    def energy(x: fs.types.ndarray(), y: fs.types.ndarray()):
        for i in x:
            y[0] += fs.sin(x[i]) * x[i]

    x = torch.linspace(0, 1, 5, dtype=torch.float64, requires_grad=True)
    loss = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    with fs.ad.Tape(loss=loss):
        energy(x, loss)
    xs = x.detach().numpy()
    assert loss.item() == pytest.approx(np.sum(np.sin(xs) * xs))
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xs) * xs + np.sin(xs), rtol=1e-12)
    with pytest.raises(RuntimeError, match="only contains one element"):
        fs.ad.Tape(loss=torch.zeros(2, requires_grad=True)).__enter__()
    with pytest.raises(RuntimeError, match="requires_grad=True"):
        fs.ad.Tape(loss=torch.zeros(1)).__enter__()


def test_sparse_tensors_and_lists_are_refused():
    @fs.kernel
    def k(a: fs.types.ndarray()):
        for i in a:
            a[i] += 1.0

    with pytest.raises(fs.FieldsimTypeError, match="sparse"):
        k(torch.zeros(3, dtype=torch.float64).to_sparse())
    with pytest.raises(fs.FieldsimTypeError, match="fs.types.ndarray"):
        k([1.0, 2.0])


def test_fs_ndarray_shares_memory_through_dlpack():
    nd = fs.ndarray(fs.f32, shape=(3, 2))
    t = torch.from_dlpack(nd)
    t[2, 1] = 5.0
    assert nd[2, 1] == 5.0
    assert nd.to_torch().shape == (3, 2)


@pytest.mark.cpu_backend("host arrays, which the CUDA backend refuses as host memory first")
def test_from_dlpack_refuses_what_it_cannot_share():
    with pytest.raises(fs.FieldsimTypeError, match="not C-contiguous"):
        fs.from_dlpack(torch.zeros(4, 2).t())
    with pytest.raises(fs.FieldsimTypeError, match="complex64"):
        fs.from_dlpack(np.zeros(3, dtype=np.complex64))
    with pytest.raises(fs.FieldsimTypeError, match="capsule"):
        fs.from_dlpack(torch.zeros(3).__dlpack__())
    with pytest.raises(fs.FieldsimTypeError, match="element_dim"):
        fs.from_dlpack(torch.zeros(3), element_dim=2)
    x = fs.field(fs.f32, shape=3)
    with pytest.raises(fs.FieldsimTypeError, match="torch.Tensor"):
        x.from_torch(np.zeros(3))


@pytest.mark.cpu_backend("a numpy view of the dual's memory")
def test_a_dual_written_through_a_dlpack_view_is_a_tangent():
    # fieldsim never sees the consumer's writes: a dual shared zero copy is a live tangent from
    # its export on (in this block and later ones), as a `from_numpy` into it would make it
    x = fs.field(fs.f64, 3, needs_dual=True)
    w = fs.field(fs.f64, 3, needs_dual=True)
    y = fs.field(fs.f64, 3, needs_dual=True)
    x.from_numpy(np.array([0.3, -0.2, 0.5]))
    w.fill(1.5)

    @fs.kernel
    def k():
        for i in range(3):
            y[i] = x[i] * w[i]

    view = torch.from_dlpack(w.dual)  # before the block
    with fs.ad.FwdMode(loss=y, param=x, seed=[1.0, 1.0, 1.0]):
        k()
        view[:] = 2.0
        k()
    np.testing.assert_allclose(y.dual.to_numpy(), 1.5 + 2.0 * x.to_numpy(), rtol=1e-12)
    with fs.ad.FwdMode(loss=y, param=x, seed=[1.0, 1.0, 1.0]):
        later = torch.from_dlpack(w.dual.to_dlpack())  # inside the block
        k()
        later[:] = 3.0
        k()
    np.testing.assert_allclose(y.dual.to_numpy(), 1.5 + 3.0 * x.to_numpy(), rtol=1e-12)
