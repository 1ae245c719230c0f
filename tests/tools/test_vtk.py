"""`fs.tools.vtk.write_vtk`: a scalar field as a VTK rectilinear grid (`.vtr`, through pyevtk),
read back here by parsing the file: one cell per element, values in VTK's x-fastest order."""
import re

import numpy as np
import pytest

import fieldsim as fs


def read_vtr(path):
    """(WholeExtent, {array name: values}) of a pyevtk `.vtr` (raw appended data, UInt64
    headers, little endian)."""
    raw = open(path, "rb").read()
    head, _, appended = raw.partition(b'<AppendedData encoding="raw">')
    data = appended[appended.index(b"_") + 1:]
    text = head.decode()
    extent = [int(v) for v in re.search(r'WholeExtent="([^"]+)"', text).group(1).split()]
    arrays = {}
    for name, typ, offset in re.findall(
            r'<DataArray Name="([^"]+)" NumberOfComponents="1" type="(\w+)" format="appended" '
            r'offset="(\d+)"', text):
        start = int(offset)
        nbytes = int(np.frombuffer(data[start:start + 8], "<u8")[0])
        dtype = {"Float32": "<f4", "Float64": "<f8", "Int32": "<i4", "Int64": "<i8",
                 "UInt8": "u1"}[typ]
        arrays[name] = np.frombuffer(data[start + 8:start + 8 + nbytes], dtype)
    return extent, arrays


def test_a_3d_field_is_one_cell_per_element(tmp_path):
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=(4, 3, 2))
    values = np.random.default_rng(1).random((4, 3, 2)).astype(np.float32)
    x.from_numpy(values)
    out = str(tmp_path / "density")
    written = fs.tools.vtk.write_vtk(x, out)
    assert written == out + ".vtr"
    extent, arrays = read_vtr(written)
    assert extent == [0, 4, 0, 3, 0, 2]
    for axis, n in zip("xyz", (4, 3, 2)):
        assert np.array_equal(arrays[f"{axis}_coordinates"], np.arange(n + 1))
    assert np.array_equal(arrays[out], values.ravel(order="F"))


def test_a_2d_field_is_one_layer_and_ints_keep_their_type(tmp_path):
    fs.init(arch=fs.cpu)
    labels = fs.field(fs.i32, shape=(3, 5))
    labels.from_numpy(np.arange(15, dtype=np.int32).reshape(3, 5))
    extent, arrays = read_vtr(fs.tools.write_vtk(labels, str(tmp_path / "labels")))
    assert extent == [0, 3, 0, 5, 0, 1]
    assert arrays[str(tmp_path / "labels")].dtype == np.int32
    assert np.array_equal(arrays[str(tmp_path / "labels")],
                          np.arange(15).reshape(3, 5).ravel(order="F"))


def test_vector_fields_and_wrong_ranks_are_refused_before_writing(tmp_path):
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(3, fs.f32, shape=(4, 4), name="velocity")
    line = fs.field(fs.f32, shape=8, name="line")
    with pytest.raises(ValueError, match="'velocity' is a vector or matrix field"):
        fs.tools.vtk.write_vtk(v, str(tmp_path / "v"))
    with pytest.raises(ValueError, match=r"'line' has shape \(8,\)"):
        fs.tools.vtk.write_vtk(line, str(tmp_path / "l"))
    assert list(tmp_path.iterdir()) == []


def test_taichi_module_names_import():
    from fieldsim.tools.diagnose import main
    from fieldsim.tools.image import imwrite
    from fieldsim.tools.np2ply import PLYWriter
    from fieldsim.tools.video import VideoManager
    from fieldsim.tools.vtk import write_vtk
    assert (main, imwrite, PLYWriter, VideoManager, write_vtk) == (
        fs.tools.diagnose.main, fs.tools.imwrite, fs.tools.PLYWriter, fs.tools.VideoManager,
        fs.tools.write_vtk)


def test_without_pyevtk_the_error_says_how_to_install_it(tmp_path, monkeypatch):
    fs.init(arch=fs.cpu)
    monkeypatch.setitem(__import__("sys").modules, "pyevtk.hl", None)
    x = fs.field(fs.f32, shape=(2, 2))
    with pytest.raises(RuntimeError, match="pip install pyevtk"):
        fs.tools.vtk.write_vtk(x, str(tmp_path / "x"))
    assert list(tmp_path.iterdir()) == []
