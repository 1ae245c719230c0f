"""`fs.tools.PLYWriter`: point clouds and tri/quad meshes as PLY files, with Taichi's API.

Takes per-vertex and per-face channels as 1-D numpy arrays (or fields, read with `.to_numpy()`),
one value per vertex/face; a 2-D array adds one channel per column (`key_1`, `key_2`, ...).
Channel types are PLY's `char uchar short ushort int uint float double`; an unknown type is
skipped with a warning, as Taichi prints and skips it. Guarantees: `export` writes
`binary_<native>_endian` and `export_ascii` writes `ascii` PLY 1.0 with the header Taichi writes
(a comment line, `element vertex N` with the channels in the order added, then `element face M`
with `property list uchar int vertex_indices` and the face channels); `export_frame(n, path)`
writes `path` without `.ply` plus `_00000n.ply`. Before writing, the x, y, z channels must exist
and face indices must lie in [0, num_vertices), else ValueError; a channel of the wrong length is
a ValueError when it is added.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

from fieldsim.errors import FieldsimError
from fieldsim.lang.naming import user_loc

__all__ = ["PLYWriter"]

_TYPES = {"char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16,
          "int": np.int32, "uint": np.uint32, "float": np.float32, "double": np.float64}



class PLYWriterError(FieldsimError, ValueError):
    """A PLYWriter given counts, channels or faces that do not fit (a ValueError, as Taichi's)."""


def _fail(message: str):
    raise PLYWriterError(message, user_loc())

class _Element:
    """One PLY element (vertex or face): a count and its named, typed channels in order."""

    def __init__(self, name: str, count: int):
        self.name, self.count = name, count
        self.keys: list[str] = []
        self.types: list[str] = []
        self.data: list[np.ndarray] = []

    def add(self, key: str, data_type: str, data):
        if data_type not in _TYPES:
            warnings.warn(f"PLYWriter: unknown type {data_type!r} for {self.name} channel {key!r}, "
                          f"skipping this channel (PLY types: {' '.join(_TYPES)})", stacklevel=3)
            return
        a = np.asarray(data.to_numpy() if hasattr(data, "to_numpy") else data)
        if a.ndim == 1 and a.size == self.count:
            columns = [(key, a)]
        elif a.ndim == 2 and a.shape[0] == self.count:
            columns = [(f"{key}_{c + 1}", a[:, c]) for c in range(a.shape[1])]
        else:
            _fail(f"PLYWriter: {self.name} channel {key!r} has shape {a.shape}; expected "
                  f"({self.count},) or ({self.count}, k), one row per {self.name}")
        for name, col in columns:
            if name in self.keys:
                warnings.warn(f"PLYWriter: duplicate {self.name} channel {name!r}", stacklevel=3)
            self.keys.append(name)
            self.types.append(data_type)
            self.data.append(col.astype(_TYPES[data_type]))

    def header(self) -> list[str]:
        return [f"property {t} {k}\n" for t, k in zip(self.types, self.keys)]


class PLYWriter:
    """Taichi's `ti.tools.PLYWriter(num_vertices, num_faces=0, face_type="tri", comment=...)`."""

    def __init__(self, num_vertices: int, num_faces=0, face_type="tri", comment="created by PLYWriter"):
        if num_vertices <= 0:
            _fail(f"PLYWriter: num_vertices should be greater than 0, got {num_vertices}")
        if num_faces < 0:
            _fail(f"PLYWriter: num_faces should not be negative, got {num_faces}")
        if face_type not in ("tri", "quad"):
            _fail(f"PLYWriter: face_type is 'tri' or 'quad', got {face_type!r}")
        self.num_vertices, self.num_faces, self.face_type = num_vertices, num_faces, face_type
        self.comment = comment
        self.vertex = _Element("vertex", num_vertices)
        self.face = _Element("face", num_faces)
        self.face_indices = -np.ones((num_faces, self._corners), dtype=np.int32)

    @property
    def _corners(self) -> int:
        return 3 if self.face_type == "tri" else 4

    # ----------------------------------------------------------- vertex channels
    def add_vertex_channel(self, key: str, data_type: str, data):
        self.vertex.add(key, data_type, data)

    def _add_vertex_floats(self, keys, arrays):
        for key, a in zip(keys, arrays):
            self.vertex.add(key, "float", a)

    def add_vertex_pos(self, x, y, z):
        self._add_vertex_floats(("x", "y", "z"), (x, y, z))

    def add_vertex_normal(self, nx, ny, nz):
        self._add_vertex_floats(("nx", "ny", "nz"), (nx, ny, nz))

    def add_vertex_vel(self, vx, vy, vz):
        self._add_vertex_floats(("vx", "vy", "vz"), (vx, vy, vz))

    def add_vertex_color(self, r, g, b):
        """Colours as floats in [0, 1] (channels `red green blue`)."""
        self._add_vertex_floats(("red", "green", "blue"), (r, g, b))

    def add_vertex_alpha(self, alpha):
        self._add_vertex_floats(("Alpha",), (alpha,))

    def add_vertex_rgba(self, r, g, b, a):
        self._add_vertex_floats(("red", "green", "blue", "Alpha"), (r, g, b, a))

    def add_vertex_id(self):
        self.vertex.add("id", "int", np.arange(self.num_vertices))

    def add_vertex_piece(self, piece):
        self.vertex.add("piece", "int", piece)

    # ----------------------------------------------------------- faces
    def add_faces(self, indices):
        """Vertex indices of every face, `num_faces * (3 or 4)` of them (any shape)."""
        a = np.asarray(indices.to_numpy() if hasattr(indices, "to_numpy") else indices)
        if a.size != self.num_faces * self._corners:
            _fail(f"PLYWriter.add_faces: {a.size} indices for {self.num_faces} "
                  f"{self.face_type} faces (expected {self.num_faces * self._corners})")
        self.face_indices = a.reshape(self.num_faces, self._corners).astype(np.int32)

    def add_face_channel(self, key: str, data_type: str, data):
        self.face.add(key, data_type, data)

    def add_face_id(self):
        self.face.add("id", "int", np.arange(self.num_faces))

    def add_face_piece(self, piece):
        self.face.add("piece", "int", piece)

    # ----------------------------------------------------------- writing
    def sanity_check(self):
        missing = [k for k in "xyz" if k not in self.vertex.keys]
        if missing:
            _fail(f"PLYWriter: the vertex position channel(s) {', '.join(missing)} are "
                  "missing (add_vertex_pos)")
        bad = (self.face_indices < 0) | (self.face_indices >= self.num_vertices)
        if self.num_faces and bad.any():
            f = int(np.argwhere(bad)[0][0])
            _fail(f"PLYWriter: face {f} has vertex indices {self.face_indices[f].tolist()}, "
                  f"outside 0..{self.num_vertices - 1} (add_faces)")

    def _header(self, fmt: str) -> str:
        lines = ["ply\n", f"format {fmt} 1.0\n", f"comment {self.comment}\n",
                 f"element vertex {self.num_vertices}\n", *self.vertex.header()]
        if self.num_faces:
            lines += [f"element face {self.num_faces}\n", "property list uchar int vertex_indices\n",
                      *self.face.header()]
        return "".join(lines) + "end_header\n"

    def _records(self, columns, names) -> np.ndarray:
        """Rows packed as PLY binary records (native byte order, no padding)."""
        out = np.empty(len(columns[0]), dtype=[(n, c.dtype) for n, c in zip(names, columns)])
        for n, c in zip(names, columns):
            out[n] = c
        return out

    def export(self, path):
        """Write a binary PLY file (the machine's byte order, as the header says)."""
        self.sanity_check()
        v = self._records(self.vertex.data, [f"v{i}" for i in range(len(self.vertex.data))])
        with open(path, "wb") as f:
            f.write(self._header(f"binary_{sys.byteorder}_endian").encode())
            f.write(v.tobytes())
            if self.num_faces:
                cols = [np.full(self.num_faces, self._corners, np.uint8),
                        *(self.face_indices[:, c] for c in range(self._corners)), *self.face.data]
                f.write(self._records(cols, [f"f{i}" for i in range(len(cols))]).tobytes())

    def export_ascii(self, path):
        """Write an ASCII PLY file: one line per vertex, then one per face, values as numpy prints
        each (`str`), each followed by a space."""
        self.sanity_check()
        with open(path, "w") as f:
            f.write(self._header("ascii"))
            f.writelines(_ascii_rows(self.vertex.data, self.num_vertices))
            if self.num_faces:
                cols = [np.full(self.num_faces, self._corners, np.int64),
                        *(self.face_indices[:, c] for c in range(self._corners)), *self.face.data]
                f.writelines(_ascii_rows(cols, self.num_faces))

    def export_frame(self, series_num: int, path: str):
        self.export(_frame_path(series_num, path))

    def export_frame_ascii(self, series_num: int, path: str):
        self.export_ascii(_frame_path(series_num, path))


def _ascii_rows(columns, n):
    text = [[str(v) for v in c] for c in columns]
    return ["".join(t[i] + " " for t in text) + "\n" for i in range(n)]


def _frame_path(series_num: int, path: str) -> str:
    return f"{str(path).removesuffix('.ply')}_{series_num:06d}.ply"
