"""Python-scope mistakes on fields are reported at the user's line, without fieldsim's frames."""
import traceback

import numpy as np
import pytest

import fieldsim as fs


def _fieldsim_frames(err: BaseException) -> list[str]:
    """The fieldsim source files in the traceback, but the one boundary that re-raises."""
    frames = traceback.extract_tb(err.__traceback__)
    return [f.filename for f in frames
            if "/fieldsim/" in f.filename and not f.filename.endswith("host_errors.py")]


def _line_of(marker: str) -> int:
    with open(__file__) as src:
        return next(n for n, text in enumerate(src, 1) if marker in text and "_line_of" not in text)


@pytest.fixture(autouse=True)
def _cpu():
    fs.init(arch=fs.cpu)


def test_out_of_range_write_names_field_and_line():
    temperature = fs.field(fs.f32, shape=4)
    with pytest.raises(IndexError) as info:
        temperature[7] = 1.0  # marker: out-of-range write
    err = info.value
    assert isinstance(err, fs.FieldsimIndexError)
    assert "temperature" in str(err) and "index 7" in str(err)
    assert f"{__file__}:{_line_of('marker: out-of-range write')}" == str(err.loc)
    assert _fieldsim_frames(err) == []
    assert temperature.to_numpy().tolist() == [0.0] * 4  # nothing written


def test_bad_shape_is_a_located_value_error():
    with pytest.raises(ValueError) as info:
        fs.Vector.field(3, fs.f32, shape=(4, 0))  # marker: empty axis
    err = info.value
    assert isinstance(err, fs.FieldsimValueError) and "must be positive" in str(err)
    assert err.loc.line == _line_of("marker: empty axis")
    assert _fieldsim_frames(err) == []


def test_from_numpy_shape_mismatch_keeps_the_data():
    pressure = fs.field(fs.f64, shape=(3, 2))
    pressure.from_numpy(np.arange(6.0).reshape(3, 2))
    with pytest.raises(ValueError) as info:
        pressure.from_numpy(np.zeros((2, 3)))  # marker: wrong array shape
    err = info.value
    assert isinstance(err, fs.FieldsimError) and "pressure" in str(err)
    assert err.loc.line == _line_of("marker: wrong array shape")
    assert _fieldsim_frames(err) == []
    np.testing.assert_array_equal(pressure.to_numpy(), np.arange(6.0).reshape(3, 2))


def test_struct_field_errors_are_located():
    particles = fs.Struct.field({"x": fs.f32, "v": fs.types.vector(2, fs.f32)}, shape=3)
    with pytest.raises(IndexError) as info:
        particles[5].x = 1.0  # marker: struct index
    assert isinstance(info.value, fs.FieldsimError)
    assert info.value.loc.line == _line_of("marker: struct index")


def test_layout_mistakes_are_located():
    with pytest.raises(fs.FieldsimError) as info:
        fs.root.dense(fs.i, 0)  # marker: empty dense axis
    assert info.value.loc.line == _line_of("marker: empty dense axis")
    assert _fieldsim_frames(info.value) == []


def test_ragged_matrix_entries_are_a_clear_value_error():
    with pytest.raises(ValueError, match="rectangular") as info:
        fs.Matrix([[1, 2], [3]])  # marker: ragged rows
    assert isinstance(info.value, fs.FieldsimValueError)
    assert info.value.loc.line == _line_of("marker: ragged rows")


def test_empty_field_shape_is_also_taichis_runtime_error():
    with pytest.raises(fs._lib.core.TaichiRuntimeError,
                       match="Every dimension of a Taichi field should be positive, got 0 in dimension 1"):
        fs.field(fs.f32, shape=(3, 0))
    with pytest.raises(RuntimeError, match=r"ndarray '.*': shape \(0,\) must be positive$"):
        fs.ndarray(fs.f32, shape=0)
