"""ti.Mesh (MeshTaichi): metadata in the patcher's format built here by hand (several patches,
with ghosts, as meshtaichi_patcher lays it out), mesh-for loops, attributes and relations in
kernels, checked against numpy; a gradient through mesh attributes against central differences."""
import numpy as np
import pytest

import fieldsim as fs

LETTERS = "VEFC"


def _grid(n):
    """A (n x n)-vertex triangulated square, slightly bent: positions and faces."""
    x = np.array([[i, 0.1 * np.sin(i + j), j] for i in range(n) for j in range(n)], float) / (n - 1)
    faces = []
    for i in range(n - 1):
        for j in range(n - 1):
            a, b, c, d = i * n + j, i * n + j + 1, (i + 1) * n + j, (i + 1) * n + j + 1
            faces += [[a, b, d], [a, d, c]]
    return x, np.array(faces)


def _edges(faces):
    edges = sorted({tuple(sorted((f[i], f[(i + 1) % 3]))) for f in faces for i in range(3)})
    return np.array(edges)


def _neighbours(nv, edges):
    rows = [[] for _ in range(nv)]
    for a, b in edges:
        rows[a].append(b)
        rows[b].append(a)
    return rows


def patched_metadata(x, rels, owner):
    """The patcher's dict: each element owned by patch `owner[order][i]`, each patch's elements
    numbered locally (owned first, then the ghosts its relation rows reach), relation values in
    those local numbers (uint16)."""
    patches = 1 + max(int(o.max()) for o in owner.values())
    owned = {o: [list(np.flatnonzero(own == p)) for p in range(patches)] for o, own in owner.items()}
    total = {o: [list(r) for r in rows] for o, rows in owned.items()}
    changed = True
    while changed:  # ghosts: what the rows of a patch's elements reach
        changed = False
        for (a, b), rows in rels.items():
            for p in range(patches):
                for g in list(total[a][p] if a > b else owned[a][p]):
                    for t in rows[g]:
                        if t not in total[b][p]:
                            total[b][p].append(t)
                            changed = True
    elements = []
    for o in sorted(owner):
        l2g = np.array([g for p in range(patches) for g in total[o][p]], np.int32)
        g2r = np.arange(len(owner[o]), dtype=np.int32)[::-1].copy()  # any permutation
        elements.append({
            "order": o, "num": len(owner[o]), "max_num_per_patch": max(map(len, total[o])),
            "owned_offsets": np.cumsum([0] + [len(r) for r in owned[o]]).astype(np.int32),
            "total_offsets": np.cumsum([0] + [len(r) for r in total[o]]).astype(np.int32),
            "l2g_mapping": l2g, "g2r_mapping": g2r, "l2r_mapping": g2r[l2g]})
    relations = []
    for (a, b), rows in rels.items():
        value, offset, patch_offset = [], [], []
        for p in range(patches):
            patch_offset.append(len(value))
            local = {g: k for k, g in enumerate(total[b][p])}
            srcs = total[a][p] if a > b else owned[a][p]
            offset.append(0)
            for g in srcs:
                value += [local[t] for t in rows[g]]
                offset.append(len(value) - patch_offset[-1])
        relations.append({"from_order": a, "to_order": b, "value": np.array(value, np.uint16),
                          "offset": np.array(offset, np.uint16),
                          "patch_offset": np.array(patch_offset, np.int32)})
    return {"num_patches": patches, "elements": elements, "relations": relations,
            "attrs": {"x": np.asarray(x, np.float32).reshape(-1)}}


def _tri_mesh(n=5, names=("FV", "EV", "VV", "VF", "EF", "FE", "VE")):
    x, faces = _grid(n)
    edges = _edges(faces)
    nv, ne, nf = len(x), len(edges), len(faces)
    eid = {tuple(e): k for k, e in enumerate(edges)}
    fe = [[eid[tuple(sorted((f[i], f[(i + 1) % 3])))] for i in range(3)] for f in faces]
    full = {(2, 0): faces.tolist(), (1, 0): edges.tolist(), (0, 0): _neighbours(nv, edges),
            (0, 2): [[k for k in range(nf) if v in faces[k]] for v in range(nv)],
            (1, 2): [[k for k in range(nf) if e in fe[k]] for e in range(ne)], (2, 1): fe,
            (0, 1): [[k for k in range(ne) if v in edges[k]] for v in range(nv)]}
    rels = {(LETTERS.index(s[0]), LETTERS.index(s[1])): full[(LETTERS.index(s[0]), LETTERS.index(s[1]))]
            for s in names}
    owner = {0: np.arange(nv) % 3, 1: np.arange(ne) % 3, 2: (np.arange(nf) // 4) % 3}
    return x, faces, edges, full, patched_metadata(x, rels, owner)


@pytest.fixture
def tri():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    x, faces, edges, full, meta = _tri_mesh()
    mesh = fs.Mesh._create_instance(fs.Mesh.generate_meta(meta))
    return x, faces, edges, full, mesh


def test_relations_come_out_in_global_indices_and_patcher_order():
    x, faces, edges, full, meta = _tri_mesh()
    m = fs.Mesh.generate_meta(meta)
    np.testing.assert_array_equal(m.relations[(2, 0)].fixed, faces)
    for key in [(0, 0), (0, 2), (1, 2), (0, 1)]:
        r = m.relations[key]
        rows = [r.values[r.offsets[i]:r.offsets[i + 1]].tolist() for i in range(len(r.offsets) - 1)]
        assert rows == [list(v) for v in full[key]]
    np.testing.assert_allclose(m.position, x.astype(np.float32))


def test_vertex_normals_match_numpy(tri):
    x, faces, _, _, mesh = tri
    mesh.verts.place({"x": fs.math.vec3, "normal": fs.math.vec3})
    mesh.verts.x.from_numpy(mesh.get_position_as_numpy().astype(np.float64))

    @fs.kernel
    def normals():
        fs.mesh_local(mesh.verts.x, mesh.verts.normal)
        for f in mesh.faces:
            v0, v1, v2 = f.verts[0], f.verts[1], f.verts[2]
            n = (v0.x - v2.x).cross(v1.x - v2.x)
            for i in fs.static(range(3)):
                f.verts[i].normal += n

    normals()
    xs = x.astype(np.float32).astype(np.float64)
    n = np.cross(xs[faces[:, 0]] - xs[faces[:, 2]], xs[faces[:, 1]] - xs[faces[:, 2]])
    want = np.zeros_like(xs)
    for k in range(3):
        np.add.at(want, faces[:, k], n)
    np.testing.assert_allclose(mesh.verts.normal.to_numpy(), want, rtol=1e-12, atol=1e-14)


def test_edge_lengths_ids_and_relation_sizes(tri):
    x, faces, edges, full, mesh = tri
    mesh.verts.place({"x": fs.math.vec3, "deg": fs.i32, "nf": fs.i32})
    mesh.edges.place({"len": fs.f64, "nfaces": fs.i32, "lo": fs.i32})
    mesh.verts.x.from_numpy(mesh.get_position_as_numpy().astype(np.float64))

    @fs.kernel
    def run():
        for e in mesh.edges:
            e.len = (e.verts[0].x - e.verts[1].x).norm()
            e.nfaces = e.faces.size
            e.lo = fs.min(e.verts[0].id, e.verts[1].id)
        for v in mesh.verts:
            v.deg = v.verts.size
            for f in v.faces:
                v.nf += 1

    run()
    xs = x.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(mesh.edges.len.to_numpy(),
                               np.linalg.norm(xs[edges[:, 0]] - xs[edges[:, 1]], axis=1), rtol=1e-12)
    assert mesh.edges.nfaces.to_numpy().tolist() == [len(r) for r in full[(1, 2)]]
    assert mesh.edges.lo.to_numpy().tolist() == edges.min(axis=1).tolist()
    assert mesh.verts.deg.to_numpy().tolist() == [len(r) for r in full[(0, 0)]]
    assert mesh.verts.nf.to_numpy().tolist() == [len(r) for r in full[(0, 2)]]


def test_neighbour_sums_and_nested_relations(tri):
    x, faces, edges, full, mesh = tri
    mesh.verts.place({"w": fs.f64, "s": fs.f64, "t": fs.f64})
    w = np.random.default_rng(1).random(len(x))
    mesh.verts.w.from_numpy(w)

    @fs.kernel
    def sums():
        for v in mesh.verts:
            for u in v.verts:
                v.s += u.w
            for k in range(v.edges.size):  # edges, then their far vertex, by index
                e = v.edges[k]
                for j in fs.static(range(2)):
                    if e.verts[j].id != v.id:
                        v.t += e.verts[j].w * (j + 1)

    sums()
    want_s = [w[r].sum() for r in full[(0, 0)]]
    want_t = [sum(w[edges[e][j]] * (j + 1) for e in full[(0, 1)][v] for j in range(2) if edges[e][j] != v)
              for v in range(len(x))]
    np.testing.assert_allclose(mesh.verts.s.to_numpy(), want_s, rtol=1e-12)
    np.testing.assert_allclose(mesh.verts.t.to_numpy(), want_t, rtol=1e-12)


def _tet_meta():
    x = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], float)
    cells = [[0, 1, 2, 3], [1, 2, 3, 4]]
    return x, cells, patched_metadata(x, {(3, 0): cells}, {0: np.array([0, 1, 0, 1, 1]),
                                                            3: np.array([0, 1])})


def test_tet_mesh_cell_volumes_and_vertex_mass():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    x, cells, meta = _tet_meta()
    builder = fs.TetMesh()
    builder.verts.place({"x": fs.math.vec3, "m": fs.f64})
    builder.cells.place({"W": fs.f64, "B": fs.math.mat3})
    mesh = builder.build(fs.Mesh.generate_meta(meta))
    mesh.verts.x.from_numpy(x)

    @fs.kernel
    def init():
        for c in mesh.cells:
            Ds = fs.Matrix.cols([c.verts[i].x - c.verts[3].x for i in fs.static(range(3))])
            c.B = Ds.inverse()
            c.W = abs(Ds.determinant()) / 6
            for i in range(c.verts.size):
                c.verts[i].m += c.W / 4

    init()
    Ds = [np.stack([x[c[i]] - x[c[3]] for i in range(3)], axis=1) for c in cells]
    W = np.array([abs(np.linalg.det(d)) / 6 for d in Ds])
    np.testing.assert_allclose(mesh.cells.W.to_numpy(), W, rtol=1e-12)
    np.testing.assert_allclose(mesh.cells.B.to_numpy(), [np.linalg.inv(d) for d in Ds], rtol=1e-12)
    m = np.zeros(len(x))
    for c, w in zip(cells, W):
        m[c] += w / 4
    np.testing.assert_allclose(mesh.verts.m.to_numpy(), m, rtol=1e-12)
    assert len(mesh.cells) == 2 and len(mesh.verts) == 5


def test_mass_spring_step_matches_numpy(tri):
    x, faces, edges, full, mesh = tri
    mesh.verts.place({"x": fs.math.vec3, "v": fs.math.vec3, "f": fs.math.vec3})
    mesh.edges.place({"rest": fs.f64})
    x0 = mesh.get_position_as_numpy().astype(np.float64)
    mesh.verts.x.from_numpy(x0)
    mesh.verts.v.fill([0.0, -1.0, 0.0])
    dt, k = 1e-3, 100.0

    @fs.kernel
    def rest():
        for e in mesh.edges:
            e.rest = 0.9 * (e.verts[0].x - e.verts[1].x).norm()

    @fs.kernel
    def step():
        for e in mesh.edges:
            v0, v1 = e.verts[0], e.verts[1]
            d = v0.x - v1.x
            force = -k * (d.norm() - e.rest) * d.normalized()
            v0.f += force
            v1.f -= force
        for v in mesh.verts:
            v.v += dt * v.f
            v.x += dt * v.v
            v.f = fs.Vector([0.0, 0.0, 0.0])

    rest()
    step()
    step()
    xs, vs = x0.copy(), np.tile([0.0, -1.0, 0.0], (len(x0), 1))
    rl = 0.9 * np.linalg.norm(x0[edges[:, 0]] - x0[edges[:, 1]], axis=1)
    for _ in range(2):
        d = xs[edges[:, 0]] - xs[edges[:, 1]]
        n = np.linalg.norm(d, axis=1)
        force = (-k * (n - rl) / n)[:, None] * d
        f = np.zeros_like(xs)
        np.add.at(f, edges[:, 0], force)
        np.add.at(f, edges[:, 1], -force)
        vs += dt * f
        xs += dt * vs
    np.testing.assert_allclose(mesh.verts.x.to_numpy(), xs, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(mesh.verts.v.to_numpy(), vs, rtol=1e-10, atol=1e-13)


def test_gradient_through_mesh_attributes_matches_central_differences(tri):
    x, faces, edges, full, mesh = tri
    mesh.verts.place({"x": fs.math.vec3}, needs_grad=True)
    mesh.edges.place({"rest": fs.f64})
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    rng = np.random.default_rng(3)
    x0 = x + 0.05 * rng.standard_normal(x.shape)
    mesh.edges.rest.from_numpy(0.8 * np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1))

    @fs.kernel
    def energy():
        for e in mesh.edges:
            c = (e.verts[0].x - e.verts[1].x).norm() - e.rest
            loss[None] += c * c * (e.verts[0].x[1] + 2.0)

    def value(xv):
        mesh.verts.x.from_numpy(xv)
        loss[None] = 0.0
        energy()
        return loss[None]

    mesh.verts.x.from_numpy(x0)
    with fs.Tape(loss):
        energy()
    grad = mesh.verts.x.grad.to_numpy()
    h = 1e-6
    fd = np.zeros_like(x0)
    for i in range(len(x0)):
        for j in range(3):
            xp, xm = x0.copy(), x0.copy()
            xp[i, j] += h
            xm[i, j] -= h
            fd[i, j] = (value(xp) - value(xm)) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)


def test_python_scope_attributes_are_ordinary_fields(tri):
    x, _, _, _, mesh = tri
    mesh.verts.place({"x": fs.math.vec3, "m": fs.f64}, reorder=True)
    assert len(mesh.verts) == len(x) and mesh.verts.get_member_field("m") is mesh.verts.m
    assert mesh.verts.keys == ["x", "m"] and mesh.verts.attr_dict["m"].reorder is True
    from fieldsim.lang.mesh import MeshElementField  # `from taichi.lang.mesh import ...`
    assert isinstance(mesh.edges, MeshElementField)
    mesh.verts.m.fill(2.0)
    mesh.verts.m[3] = 5.0
    mesh.verts.x[1] = [1.0, 2.0, 3.0]
    assert mesh.verts.m.to_numpy().sum() == 2.0 * (len(x) - 1) + 5.0
    assert list(mesh.verts.x[1]) == [1.0, 2.0, 3.0]
    with pytest.raises(SyntaxError, match="reserves"):
        mesh.verts.place({"edges": fs.f32})
    with pytest.raises(AttributeError, match="no attribute 'y'"):
        mesh.verts.y
    with pytest.raises(TypeError, match=r"test_mesh.py(.|\n)*no struct attributes"):
        mesh.verts.place({"st": fs.types.struct(a=fs.f32)})


def test_mesh_patch_idx_is_the_owning_patch():
    fs.init(arch=fs.cpu)
    x, cells, meta = _tet_meta()
    mesh = fs.Mesh._create_instance(fs.Mesh.generate_meta(meta))
    mesh.verts.place({"p": fs.i32})

    @fs.kernel
    def k():
        for v in mesh.verts:
            v.p = fs.mesh_patch_idx()

    k()
    assert mesh.verts.p.to_numpy().tolist() == [0, 1, 0, 1, 1]

    @fs.kernel
    def after_the_loop():
        for v in mesh.verts:
            v.p = 0
        for i in range(3):
            mesh.verts.p[i] = fs.mesh_patch_idx()

    with pytest.raises(fs.FieldsimSyntaxError, match="only valid inside a mesh-for"):
        after_the_loop()


def test_missing_relation_and_attribute_name_the_line():
    fs.init(arch=fs.cpu)
    mesh = fs.Mesh._create_instance(fs.Mesh.generate_meta(_tri_mesh(names=("FV",))[-1]))
    mesh.verts.place({"s": fs.f32})

    @fs.kernel
    def uses_vv():
        for v in mesh.verts:
            v.s = v.verts.size

    with pytest.raises(fs.FieldsimSyntaxError, match=r"test_mesh.py(.|\n)*v.verts.size(.|\n)*"
                                                    r"without the VV relation"):
        uses_vv()

    @fs.kernel
    def typo():
        for v in mesh.verts:
            v.s = v.q

    with pytest.raises(fs.FieldsimTypeError, match=r"no attribute 'q'(.|\n)*placed: \['s'\]"):
        typo()


def test_load_meta_reads_a_json_file(tmp_path):
    fs.init(arch=fs.cpu)
    x, cells, meta = _tet_meta()
    plain = {"num_patches": meta["num_patches"], "attrs": {"x": meta["attrs"]["x"].tolist()},
             "elements": [{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in e.items()}
                          for e in meta["elements"]],
             "relations": [{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in r.items()}
                           for r in meta["relations"]]}
    path = tmp_path / "meta.json"
    path.write_text(__import__("json").dumps(plain))
    m = fs.Mesh.load_meta(str(path))
    np.testing.assert_array_equal(m.relations[(3, 0)].fixed, cells)
    assert len(fs.Mesh._create_instance(m).cells) == 2


def test_gradient_through_two_kernels_and_neighbour_loops(tri):
    """A Tape over a neighbour loop (CSR relation, data-dependent reads) then a face loop."""
    x, faces, edges, full, mesh = tri
    mesh.verts.place({"w": fs.f64, "y": fs.f64}, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def smooth():
        for v in mesh.verts:
            for u in v.verts:
                v.y += fs.sin(u.w) * v.w

    @fs.kernel
    def total():
        for f in mesh.faces:
            loss[None] += f.verts[0].y * f.verts[2].y

    def value(w):
        mesh.verts.w.from_numpy(w)
        mesh.verts.y.fill(0)
        loss[None] = 0
        smooth()
        total()
        return loss[None]

    w0 = np.random.default_rng(5).random(len(x))
    mesh.verts.w.from_numpy(w0)
    mesh.verts.y.fill(0)
    with fs.Tape(loss):
        smooth()
        total()
    grad = mesh.verts.w.grad.to_numpy()
    eye = np.eye(len(w0)) * 1e-6
    fd = np.array([(value(w0 + h) - value(w0 - h)) / 2e-6 for h in eye])
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-9)


def test_mesh_for_visits_elements_patch_after_patch():
    """As Taichi: a serialized mesh-for sees patch 0's owned vertices first (so atomic sums over
    neighbours add in Taichi's order)."""
    fs.init(arch=fs.cpu)
    x, cells, meta = _tet_meta()  # vertex owners [0, 1, 0, 1, 1]
    mesh = fs.Mesh._create_instance(fs.Mesh.generate_meta(meta))
    mesh.verts.place({"rank": fs.i32})
    counter = fs.field(fs.i32, shape=())

    @fs.kernel
    def visit():
        fs.loop_config(serialize=True)
        for v in mesh.verts:
            v.rank = counter[None]
            counter[None] += 1

    visit()
    assert mesh.verts.rank.to_numpy().tolist() == [0, 2, 1, 3, 4]
