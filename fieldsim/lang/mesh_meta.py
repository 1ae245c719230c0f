"""MeshTaichi metadata, read into global-index arrays: what `ti.Mesh.generate_meta` takes.

Takes the dict meshtaichi_patcher hands over (or a JSON file of it): `num_patches`; `elements`
(per order 0..3, vertices to cells: `num`, `owned_offsets`, `total_offsets`, `l2g_mapping`,
`g2r_mapping`, `l2r_mapping`, `max_num_per_patch`); `relations` (per relation: `from_order`,
`to_order`, `value` and, for a relation to a same-or-higher order, `offset` and
`patch_offset`); `attrs["x"]` (vertex positions, flat); optionally `patcher`.

The patcher splits the mesh into patches and numbers each patch's elements locally (its owned
elements first, then ghosts), so a relation's values are patch-local indices. Guarantees: each
relation comes out in global element indices, its rows in the patcher's own neighbour order
(so sums over neighbours add in the order Taichi adds them): a relation to a lower order
(`FV`, `CE`, ...) as a (num_from, k) array; any other (`VV`, `VF`, `EF`, ...) as CSR
`offsets` (num_from + 1) and `values`. Also each element's owning patch (`ti.mesh_patch_idx`).
Pure numpy; no fields are made here.
"""
from __future__ import annotations

import numpy as np

ELEMENT_NAMES = ("verts", "edges", "faces", "cells")
LETTERS = "VEFC"
# entries per row of a relation to a lower order (from_order, to_order)
_FIXED_SIZES = {(1, 0): 2, (2, 0): 3, (3, 0): 4, (2, 1): 3, (3, 1): 6, (3, 2): 4}


class MeshRelationData:
    """One relation in global indices: `fixed` (num_from, k) or CSR `offsets`/`values`."""

    def __init__(self, from_order, to_order, fixed=None, offsets=None, values=None):
        self.from_order, self.to_order = from_order, to_order
        self.fixed, self.offsets, self.values = fixed, offsets, values

    @property
    def name(self) -> str:
        return LETTERS[self.from_order] + LETTERS[self.to_order]


class MeshMetadata:
    """The patcher's metadata with each relation in global indices (module docstring).

    >>> from fieldsim.lang.mesh_meta import one_patch_metadata
    >>> meta = MeshMetadata(one_patch_metadata(np.zeros((3, 3)), {"FV": [[0, 1, 2]]}))
    >>> meta.num_elements[2], meta.relations[(2, 0)].fixed.tolist()
    (1, [[0, 1, 2]])
    """

    def __init__(self, data: dict):
        self.num_patches = int(data["num_patches"])
        self.num_elements = {}
        self.patch_of = {}
        self.patch_order = {}  # global indices, patch after patch (the order Taichi visits)
        self._owned = {}
        self._elements = {}
        for element in data["elements"]:
            order = int(element["order"])
            self._elements[order] = element
            self.num_elements[order] = int(element["num"])
            patch, local, glob = _owned_elements(element, self.num_patches)
            self._owned[order] = (patch, local, glob)
            self.patch_order[order] = glob.astype(np.int32)
            self.patch_of[order] = np.empty(self.num_elements[order], np.int32)
            self.patch_of[order][glob] = patch
        self.relations = {}
        for rel in data["relations"]:
            data_ = self._relation(rel)
            self.relations[(data_.from_order, data_.to_order)] = data_
        self.position = np.asarray(data["attrs"]["x"]).reshape(-1, 3)
        self.patcher = data.get("patcher")

    def _relation(self, rel) -> MeshRelationData:
        a, b = int(rel["from_order"]), int(rel["to_order"])
        if a not in self._elements or b not in self._elements:
            raise ValueError(f"mesh relation {LETTERS[a]}{LETTERS[b]}: the mesh has no "
                             f"{ELEMENT_NAMES[max(a, b)]}")
        patch, local, glob = self._owned[a]
        to = self._elements[b]
        to_base = np.asarray(to["total_offsets"], np.int64)
        to_l2g = np.asarray(to["l2g_mapping"], np.int64)
        value = np.asarray(rel["value"], np.int64)
        if a > b:
            k = _FIXED_SIZES[(a, b)]
            from_total = np.asarray(self._elements[a]["total_offsets"], np.int64)
            rows = value.reshape(-1, k)[from_total[patch] + local]
            fixed = np.empty((len(glob), k), np.int32)
            fixed[glob] = to_l2g[to_base[patch][:, None] + rows]
            return MeshRelationData(a, b, fixed=fixed)
        owned = np.asarray(self._elements[a]["owned_offsets"], np.int64)
        offset = np.asarray(rel["offset"], np.int64)
        patch_offset = np.asarray(rel["patch_offset"], np.int64)
        row = owned[patch] + patch + local  # each patch's offsets have one entry more than rows
        starts = patch_offset[patch] + offset[row]
        lengths = patch_offset[patch] + offset[row + 1] - starts
        order = np.argsort(glob, kind="stable")  # rows by global index
        starts, lengths, patch = starts[order], lengths[order], patch[order]
        offsets = np.zeros(len(glob) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        gather = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
        values = to_l2g[np.repeat(to_base[patch], lengths) + value[gather]]
        return MeshRelationData(a, b, offsets=offsets.astype(np.int32), values=values.astype(np.int32))


def _owned_elements(element, num_patches):
    """(patch, local index, global index) of each element, from the patch that owns it."""
    owned = np.asarray(element["owned_offsets"], np.int64)[:num_patches + 1]
    total = np.asarray(element["total_offsets"], np.int64)
    l2g = np.asarray(element["l2g_mapping"], np.int64)
    counts = np.diff(owned)
    patch = np.repeat(np.arange(len(counts)), counts)
    local = np.arange(int(counts.sum())) - np.repeat(owned[:-1], counts)
    glob = l2g[total[patch] + local]
    if len(glob) != int(element["num"]) or len(np.unique(glob)) != len(glob):
        raise ValueError(f"mesh metadata: the patches of the {ELEMENT_NAMES[int(element['order'])]} "
                         "do not own each element once")
    return patch, local, glob


def one_patch_metadata(position, relations: dict) -> dict:
    """The patcher's metadata dict for a mesh kept in one patch (no reordering, no ghosts):
    `position` (n, 3) and `relations` {"FV": rows, "VV": rows, ...} in global indices (a row per
    element of the first letter). Element counts come from the rows; vertices from `position`.

    >>> from fieldsim.lang.mesh_meta import one_patch_metadata
    >>> d = one_patch_metadata(np.zeros((3, 3)), {"FV": [[0, 1, 2]]})
    >>> d["num_patches"], [e["num"] for e in d["elements"]]
    (1, [3, 0, 1])
    """
    position = np.asarray(position, np.float32).reshape(-1, 3)
    rels = {(LETTERS.index(k[0].upper()), LETTERS.index(k[1].upper())): [list(r) for r in v]
            for k, v in relations.items()}
    counts = {0: len(position)}
    for (a, b), rows in rels.items():
        counts[a] = max(counts.get(a, 0), len(rows))
        counts[b] = max(counts.get(b, 0), 1 + max((max(r) for r in rows if r), default=-1))
    n_order = 1 + max(counts)
    elements = []
    for order in range(n_order):
        n = counts.get(order, 0)
        ident = np.arange(n, dtype=np.int32)
        elements.append({"order": order, "num": n, "max_num_per_patch": n,
                         "owned_offsets": np.array([0, n], np.int32),
                         "total_offsets": np.array([0, n], np.int32), "l2g_mapping": ident,
                         "l2r_mapping": ident, "g2r_mapping": ident})
    out = []
    for (a, b), rows in rels.items():
        lengths = [len(r) for r in rows]
        out.append({"from_order": a, "to_order": b,
                    "value": np.array([v for r in rows for v in r], np.uint16),
                    "offset": np.concatenate([[0], np.cumsum(lengths)]).astype(np.uint16),
                    "patch_offset": np.array([0], np.int32)})
    return {"num_patches": 1, "elements": elements, "relations": out,
            "attrs": {"x": position.reshape(-1)}}
