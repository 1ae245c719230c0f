"""Python-scope work on huge sparse layouts touches what is active, as Taichi's tree walks do:
a taichi_elements-style 4096^3 grid under two pointer levels (2^30 inner-pointer cells) and a
`dynamic(ti.i, 2**30)` particle field, each with a handful of active cells (fieldsim/lang/
sparse_host.py, the masks' storage in lang/field.py)."""
import pytest
from support.memory import resident_kb

import fieldsim as fs
from fieldsim.lang import sparse_host

pytestmark = pytest.mark.cpu_backend("huge layouts are CPU reservations; CUDA allocates a field "
                                     "whole, so a 256 GiB one is refused")


def _grid():
    fs.init(arch=fs.cpu, offline_cache=False)
    x = fs.field(fs.f32, needs_grad=True)
    top = fs.root.pointer(fs.ijk, 32)
    inner = top.pointer(fs.ijk, 32)
    inner.dense(fs.ijk, 4).place(x, x.grad, offset=(-2048,) * 3)
    return x, top, inner


def _mask_kb(node) -> int:
    return resident_kb(node.sparse.flag.storage.array.ctypes.data)


def test_deactivate_all_leaves_the_inner_mask_uncommitted():
    x, top, inner = _grid()
    x[5, -7, 1000] = 2.0
    top.deactivate_all()  # wrote zeros over the 4 GB mask (6 s)
    assert _mask_kb(inner) < 64 * 1024
    assert x[5, -7, 1000] == 0.0 and fs.is_active(inner, [512, 510, 762]) == 0


def _no_whole_copies(monkeypatch, *storages):
    def refuse():
        raise AssertionError("copied a whole mask or built a mask over every cell")
    for st in storages:
        monkeypatch.setattr(st, "to_numpy", refuse)
    monkeypatch.setattr(sparse_host, "_active_cells", lambda field: refuse())


def test_fill_of_a_two_level_pointer_grid_walks_active_blocks(monkeypatch):
    x, _top, inner = _grid()
    _no_whole_copies(monkeypatch, inner.sparse.flag.storage)
    x[5, -7, 1000] = 2.0
    x[-2048, 2047, 0] = 3.0
    x.grad.fill(1.5)  # copied and expanded the 2^30-cell mask (38 s, 6 GB)
    x.fill(4.0)
    assert _mask_kb(inner) < 64 * 1024
    assert x.grad[5, -7, 1000] == 1.5 and x.grad[-2048, 2047, 0] == 1.5
    assert x[6, -8, 1001] == 4.0 and x[-2045, 2044, 3] == 4.0
    assert x[0, 0, 0] == 0.0 and x.grad[8, 8, 8] == 0.0


def test_fill_of_a_huge_dynamic_field_writes_its_slots_in_use(monkeypatch):
    fs.init(arch=fs.cpu, offline_cache=False)
    rho = fs.field(fs.f64, needs_grad=True)
    fs.root.dynamic(fs.i, 2 ** 30, 2 ** 14).place(rho, rho.grad)
    for i in range(3):
        rho[i] = i + 1.0
    _no_whole_copies(monkeypatch, rho.storage, rho.grad.storage)
    rho.grad.fill(0.5)  # np.indices over 2^30 slots (a minute, 16 GB)
    rho.fill(2.0)
    assert resident_kb(rho.storage.array.ctypes.data) < 64 * 1024
    assert [rho[i] for i in range(4)] == [2.0, 2.0, 2.0, 0.0]
    assert [rho.grad[i] for i in range(4)] == [0.5, 0.5, 0.5, 0.0]
    got = rho.to_numpy()  # zeros with the slots in use copied in (it copied 8 GB)
    assert got.shape == (2 ** 30,) and got[:4].tolist() == [2.0, 2.0, 2.0, 0.0]
    assert rho.grad.to_numpy()[2:4].tolist() == [0.5, 0.0]
