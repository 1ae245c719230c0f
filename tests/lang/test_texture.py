"""ti.Texture: sampling, fetch/load/store, format quantisation, PIL round trip, graph args."""
import os
import subprocess
import sys

import numpy as np
import pytest

import fieldsim as ti

EXAMPLES = "/tmp/tivenv/lib/python3.11/site-packages/taichi/examples"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def _cpu():
    ti.init(arch=ti.cpu)


def _texture_from(src, fmt=None):
    fmt = fmt or ti.Format.rgba32f
    tex = ti.Texture(fmt, src.shape[:-1])
    f = ti.Vector.field(src.shape[-1], ti.f32, shape=src.shape[:-1])
    f.from_numpy(src.astype(np.float32))
    tex.from_field(f)
    return tex


def _sampler_2d():
    out = ti.Vector.field(4, ti.f32, shape=())

    @ti.kernel
    def sample(t: ti.types.texture(num_dimensions=2), u: ti.f32, v: ti.f32):
        out[None] = t.sample_lod(ti.Vector([u, v]), 0.0)

    return sample, out


def test_sample_at_texel_centres_and_between():
    rng = np.random.default_rng(0)
    src = rng.random((5, 3, 4))
    tex = _texture_from(src)
    sample, out = _sampler_2d()
    for i, j in [(0, 0), (4, 2), (2, 1)]:
        sample(tex, (i + 0.5) / 5, (j + 0.5) / 3)
        np.testing.assert_allclose(out[None].to_numpy(), src[i, j], rtol=1e-5)
    sample(tex, 2.0 / 5, 1.5 / 3)  # halfway between texels (1, 1) and (2, 1)
    np.testing.assert_allclose(out[None].to_numpy(), (src[1, 1] + src[2, 1]) / 2, rtol=1e-5)
    sample(tex, 0.0, 0.5 / 3)  # the left edge: repeat addressing mixes texels 4 and 0
    np.testing.assert_allclose(out[None].to_numpy(), (src[4, 0] + src[0, 0]) / 2, rtol=1e-5)


def test_trilinear_3d_centre_of_cube():
    src = np.random.default_rng(1).random((2, 2, 2, 4))
    tex = _texture_from(src)
    out = ti.Vector.field(4, ti.f32, shape=())

    @ti.kernel
    def sample(t: ti.types.texture(num_dimensions=3)):
        out[None] = t.sample_lod(ti.Vector([0.5, 0.5, 0.5]), 0.0)

    sample(tex)
    np.testing.assert_allclose(out[None].to_numpy(), src.reshape(-1, 4).mean(0), rtol=1e-5)


def test_store_load_fetch_round_trip_and_unused_channels():
    tex = ti.Texture(ti.Format.rg32f, (4, 4))
    out = ti.Vector.field(4, ti.f32, shape=3)

    @ti.kernel
    def write(t: ti.types.rw_texture(num_dimensions=2, fmt=ti.Format.rg32f, lod=0)):
        for i, j in ti.ndrange(4, 4):
            t.store(ti.Vector([i, j]), ti.Vector([i + 0.25, j * 2.0, 7.0, 7.0]))
        out[0] = t.load(ti.Vector([3, 1]))

    @ti.kernel
    def read(t: ti.types.texture(num_dimensions=2)):
        out[1] = t.fetch(ti.Vector([2, 3]), 0)
        out[2] = t.fetch(ti.Vector([-1, 3]), 0)  # outside: zeros

    write(tex)
    read(tex)
    np.testing.assert_allclose(out.to_numpy(), [[3.25, 2.0, 0.0, 1.0], [2.25, 6.0, 0.0, 1.0],
                                                [0.0, 0.0, 0.0, 0.0]])


def test_rgba8_store_quantises_like_unorm8():
    tex = ti.Texture(ti.Format.rgba8, (2,))
    out = ti.Vector.field(4, ti.f32, shape=())

    @ti.kernel
    def k(t: ti.types.rw_texture(num_dimensions=1, fmt=ti.Format.rgba8, lod=0)):
        t.store(ti.Vector([1]), ti.Vector([0.3, 1.7, -0.2, 0.5]))
        out[None] = t.load(ti.Vector([1]))

    k(tex)
    vals = np.array([0.3, 1.7, -0.2, 0.5], np.float32).astype(np.float64)
    want = np.round(np.clip(vals, 0, 1) * 255) / 255
    np.testing.assert_allclose(out[None].to_numpy(), want, rtol=1e-6)


def test_from_image_to_image_round_trip():
    from PIL import Image  # (Pillow comes with matplotlib, a dependency)
    rgb = np.random.default_rng(2).integers(0, 256, (6, 9, 3), dtype=np.uint8)  # height 6, width 9
    tex = ti.Texture(ti.Format.rgba8, (9, 6))
    tex.from_image(Image.fromarray(rgb))
    np.testing.assert_array_equal(np.asarray(tex.to_image()), rgb)


def test_wrong_texture_argument_is_a_type_error():
    tex = ti.Texture(ti.Format.r32f, (4,))

    @ti.kernel
    def k(t: ti.types.rw_texture(num_dimensions=1, fmt=ti.Format.rgba8, lod=0)):
        t.store(ti.Vector([0]), ti.Vector([1.0, 0.0, 0.0, 0.0]))

    with pytest.raises(ti.FieldsimTypeError, match="format r32f"):
        k(tex)


def test_graph_texture_args():
    tex = ti.Texture(ti.Format.r32f, (3, 3))
    out = ti.field(ti.f32, shape=())

    @ti.kernel
    def fill(t: ti.types.rw_texture(num_dimensions=2, fmt=ti.Format.r32f, lod=0)):
        for i, j in ti.ndrange(3, 3):
            t.store(ti.Vector([i, j]), ti.Vector([i * 3.0 + j, 0.0, 0.0, 0.0]))

    @ti.kernel
    def read(t: ti.types.texture(num_dimensions=2)):
        out[None] = t.fetch(ti.Vector([2, 1]), 0).r

    b = ti.graph.GraphBuilder()
    b.dispatch(fill, ti.graph.Arg(ti.graph.ArgKind.RWTEXTURE, "rw", fmt=ti.Format.r32f, ndim=2))
    b.dispatch(read, ti.graph.Arg(ti.graph.ArgKind.TEXTURE, "t", ndim=2))
    g = b.compile()
    g.run({"rw": tex, "t": tex})
    assert out[None] == 7.0
    with pytest.raises(ti.FieldsimRuntimeError, match="2-D TEXTURE"):
        g.run({"rw": tex, "t": ti.Texture(ti.Format.r32f, (3,))})


@pytest.mark.skipif(not os.path.isdir(EXAMPLES), reason="Taichi's examples not installed")
def test_texture_examples_run():
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "taichi_examples.py"),
                        "--examples", EXAMPLES, "--timeout", "120", "rendering/simple_texture.py",
                        "graph/texture_graph.py"], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=600, check=False)
    assert "2 of 2 programs ran" in r.stdout + r.stderr, r.stdout[-2000:] + r.stderr[-2000:]


def test_from_ndarray_quantises_and_sampler_has_no_store():
    tex = ti.Texture(ti.Format.r8, (3,))
    arr = ti.ndarray(ti.f32, shape=3)
    arr.from_numpy(np.array([0.1, 2.0, -1.0], np.float32))
    tex.from_ndarray(arr)
    want = np.round(np.clip(np.float32([0.1, 2.0, -1.0]).astype(np.float64), 0, 1) * 255) / 255
    np.testing.assert_allclose(tex._data.to_numpy(), np.stack(
        [want, np.zeros(3), np.zeros(3), np.ones(3)], -1), rtol=1e-6)

    @ti.kernel
    def k(t: ti.types.texture(num_dimensions=1)):
        t.store(ti.Vector([0]), ti.Vector([1.0, 0.0, 0.0, 0.0]))

    with pytest.raises(ti.FieldsimError, match="texture parameter.*no attribute 'store'"):
        k(tex)


def test_bad_sources_and_bad_uses_in_kernels_name_the_users_line():
    tex = ti.Texture(ti.Format.r32f, (4, 4))
    with pytest.raises(ti.FieldsimTypeError, match=r"from_ndarray takes a ti.ndarray; got ndarray"):
        tex.from_ndarray(np.zeros((4, 4), np.float32))
    with pytest.raises(ti.FieldsimTypeError, match=r"from_field takes a ti.field; got list"):
        tex.from_field([[0.0] * 4] * 4)

    out = ti.field(ti.f32, shape=())

    @ti.kernel
    def fetch_3d(t: ti.types.texture(num_dimensions=2)):
        out[None] = t.fetch(ti.Vector([1, 2, 3]), 0).x  # the line the error names

    @ti.kernel
    def store_scalar(t: ti.types.rw_texture(num_dimensions=2, fmt=ti.Format.r32f, lod=0)):
        t.store(ti.Vector([0, 0]), 1.0)  # a texel is a vector

    for kern, what in ((fetch_3d, "indexed with 3 index"), (store_scalar, "cannot index (float|a f32 value)")):
        with pytest.raises(ti.FieldsimError, match=what) as err:
            kern(tex)
        assert err.value.loc.file == __file__
        assert "t." in err.value.loc.source  # the user's call, not fieldsim's texture.py
