"""fs.tools.PLYWriter: files read back with a small PLY parser written here (ASCII and binary)."""
import sys

import numpy as np
import pytest

import fieldsim as fs

_NP = {"char": "i1", "uchar": "u1", "short": "i2", "ushort": "u2", "int": "i4", "uint": "u4",
       "float": "f4", "double": "f8"}


def parse_ply(path):
    """(format, comment, {element: (count, [(type, name)], rows)}): faces as (n, idx..., channels)."""
    raw = open(path, "rb").read()
    end = raw.index(b"end_header\n") + len(b"end_header\n")
    head = raw[:end].decode().splitlines()
    assert head[0] == "ply"
    fmt = head[1].split()[1]
    comment = head[2].split(" ", 1)[1]
    elems, order = {}, []
    for line in head[3:-1]:
        w = line.split()
        if w[0] == "element":
            order.append(w[1])
            elems[w[1]] = [int(w[2]), []]
        elif w[:2] == ["property", "list"]:
            elems[order[-1]][1].append(("list", w[2], w[3], w[4]))
        else:
            elems[order[-1]][1].append((w[1], w[2]))
    body = raw[end:]
    out = {}
    if fmt == "ascii":
        lines = body.decode().splitlines()
        for name in order:
            n, props = elems[name]
            out[name] = (n, props, [[float(v) for v in lines.pop(0).split()] for _ in range(n)])
        assert lines == []
        return fmt, comment, out
    assert fmt == f"binary_{sys.byteorder}_endian"
    pos = 0
    for name in order:
        n, props = elems[name]
        rows = []
        for _ in range(n):
            row = []
            for p in props:
                if p[0] == "list":
                    k = int(np.frombuffer(body, _NP[p[1]], 1, pos)[0])
                    pos += np.dtype(_NP[p[1]]).itemsize
                    row += [k] + np.frombuffer(body, _NP[p[2]], k, pos).tolist()
                    pos += k * np.dtype(_NP[p[2]]).itemsize
                else:
                    row.append(np.frombuffer(body, _NP[p[0]], 1, pos)[0].item())
                    pos += np.dtype(_NP[p[0]]).itemsize
            rows.append(row)
        out[name] = (n, props, rows)
    assert pos == len(body)
    return fmt, comment, out


def quad_mesh():
    w = fs.tools.PLYWriter(num_vertices=4, num_faces=2, face_type="quad", comment="two quads")
    w.add_vertex_pos(np.array([0.0, 1.0, 1.0, 0.5]), np.array([0.0, 0.0, 1.0, 1.0]), np.zeros(4))
    w.add_vertex_channel("temp", "double", np.array([0.1, 0.2, 0.3, 0.4]))
    w.add_vertex_channel("uv", "uchar", np.array([[1, 2], [3, 4], [5, 6], [7, 250]]))
    w.add_vertex_id()
    w.add_faces(np.array([0, 1, 2, 3, 3, 2, 1, 0]))
    w.add_face_id()
    w.add_face_channel("area", "float", np.array([1.5, -2.25]))
    return w


@pytest.mark.parametrize("ascii", [True, False])
def test_quad_mesh_round_trip(tmp_path, ascii):
    path = tmp_path / "m.ply"
    w = quad_mesh()
    (w.export_ascii if ascii else w.export)(str(path))
    fmt, comment, el = parse_ply(path)
    assert fmt == ("ascii" if ascii else f"binary_{sys.byteorder}_endian") and comment == "two quads"
    n, props, rows = el["vertex"]
    assert n == 4 and [p[1] for p in props] == ["x", "y", "z", "temp", "uv_1", "uv_2", "id"]
    assert [p[0] for p in props] == ["float"] * 3 + ["double", "uchar", "uchar", "int"]
    np.testing.assert_allclose(np.array(rows)[:, 0], [0.0, 1.0, 1.0, 0.5])
    np.testing.assert_array_equal(np.array(rows)[:, 3], [0.1, 0.2, 0.3, 0.4])  # doubles exact
    assert [r[4:] for r in rows] == [[1, 2, 0], [3, 4, 1], [5, 6, 2], [7, 250, 3]]
    n, props, rows = el["face"]
    assert n == 2 and props[0] == ("list", "uchar", "int", "vertex_indices")
    assert rows == [[4, 0, 1, 2, 3, 0, 1.5], [4, 3, 2, 1, 0, 1, -2.25]]


def test_point_cloud_frames_and_rgba(tmp_path):
    pos = fs.Vector.field(3, fs.f32, shape=5)
    pos.from_numpy(np.arange(15, dtype=np.float32).reshape(5, 3))
    w = fs.tools.PLYWriter(num_vertices=5)
    p = pos.to_numpy()
    w.add_vertex_pos(p[:, 0], p[:, 1], p[:, 2])
    w.add_vertex_rgba(*np.full((4, 5), 0.5))
    w.export_frame(3, str(tmp_path / "cloud.ply"))
    w.export_frame_ascii(12, str(tmp_path / "cloud_a"))
    _, _, el = parse_ply(tmp_path / "cloud_000003.ply")
    assert "face" not in el and np.array(el["vertex"][2])[:, :3].tolist() == p.tolist()
    _, _, el = parse_ply(tmp_path / "cloud_a_000012.ply")
    assert [q[1] for q in el["vertex"][1]] == ["x", "y", "z", "red", "green", "blue", "Alpha"]
    assert np.array(el["vertex"][2])[:, 3:].tolist() == [[0.5] * 4] * 5


def test_unknown_type_is_skipped_and_bad_input_refused(tmp_path):
    w = fs.tools.PLYWriter(num_vertices=3, num_faces=1)
    with pytest.warns(UserWarning, match="unknown type 'foo'"):
        w.add_vertex_channel("v", "foo", np.zeros(3))
    with pytest.raises(ValueError, match="channel 'v' has shape"):
        w.add_vertex_channel("v", "int", np.zeros(4))
    with pytest.raises(ValueError, match="position"):
        w.export(str(tmp_path / "a.ply"))
    w.add_vertex_pos(np.zeros(3), np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="indices"):
        w.add_faces(np.array([0, 1]))
    w.add_faces(np.array([0, 1, 3]))
    with pytest.raises(ValueError, match="face 0 has vertex indices"):
        w.export(str(tmp_path / "a.ply"))
    with pytest.raises(ValueError, match="face_type") as err:
        fs.tools.PLYWriter(3, 1, face_type="hex")
    assert isinstance(err.value, fs.FieldsimError) and err.value.loc.file == __file__
