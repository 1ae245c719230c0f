"""fieldsim.ui (Taichi's GGUI, offscreen): pixels of simple 2-D and 3-D frames, read back from
`save_image` PNGs and `get_image_buffer_as_numpy`, against positions computed independently."""
import math

import numpy as np
import pytest
from PIL import Image

import fieldsim as fs
import fieldsim.ui.render3d as render3d
from fieldsim import _gui_raster
from fieldsim.ui import UIInputError


@pytest.fixture(autouse=True)
def _cpu():
    fs.init(arch=fs.cpu)


def frame(window):
    """The frame so far as (H, W, 3) uint8, row 0 at the top."""
    img = window.get_image_buffer_as_numpy()  # (W, H, 4), [x, y], y up
    return np.round(img[..., :3] * 255).astype(np.uint8).transpose(1, 0, 2)[::-1]


def at(img, x, y):
    """The pixel at GGUI coordinates (x, y) in [0, 1]^2, y up."""
    h, w, _ = img.shape
    return tuple(int(v) for v in img[min(int((1 - y) * h), h - 1), min(int(x * w), w - 1)])


def test_save_image_writes_png_of_window_size(tmp_path):
    window = fs.ui.Window("png", (96, 48))
    window.get_canvas().set_background_color((0.0, 1.0, 0.0))
    path = tmp_path / "sub" / "frame.png"
    window.save_image(str(path))
    with Image.open(path) as im:
        assert im.size == (96, 48)
        assert (np.asarray(im.convert("RGB")) == (0, 255, 0)).all()
    assert window.get_window_shape() == (96, 48)


def test_circle_radius_is_a_fraction_of_height():
    window = fs.ui.Window("c", (200, 100))
    canvas = window.get_canvas()
    centers = fs.Vector.field(2, fs.f32, shape=1)
    centers[0] = [0.25, 0.5]
    canvas.circles(centers, radius=0.2, color=(1.0, 0.0, 0.0))  # 20 px
    img = frame(window)
    assert at(img, 0.25, 0.5) == (255, 0, 0)
    assert tuple(img[50, 50 + 17]) == (255, 0, 0) and tuple(img[50, 50 + 23]) == (0, 0, 0)
    assert tuple(img[50 - 17, 50]) == (255, 0, 0) and tuple(img[50 - 23, 50]) == (0, 0, 0)
    assert at(img, 0.75, 0.5) == (0, 0, 0)


def test_background_set_after_drawing_still_underlies_the_frame():
    window = fs.ui.Window("bg", (64, 64))
    canvas = window.get_canvas()
    canvas.circles(np.array([[0.5, 0.5]]), radius=0.1, color=(0.0, 0.0, 1.0))
    canvas.set_background_color((1.0, 1.0, 1.0))
    img = frame(window)
    assert at(img, 0.5, 0.5) == (0, 0, 255) and at(img, 0.05, 0.05) == (255, 255, 255)


def test_show_starts_a_cleared_frame():
    window = fs.ui.Window("show", (32, 32))
    canvas = window.get_canvas()
    canvas.set_background_color((0.2, 0.2, 0.2))
    canvas.circles(np.array([[0.5, 0.5]]), radius=0.3, color=(1.0, 1.0, 1.0))
    assert at(frame(window), 0.5, 0.5) == (255, 255, 255)
    window.show()
    assert at(frame(window), 0.5, 0.5) == (51, 51, 51)
    assert window.frame == 1


def test_set_image_round_trips_field_and_numpy():
    rng = np.random.default_rng(0)
    img = rng.random((40, 30, 3)).astype(np.float32)
    field = fs.Vector.field(3, fs.f32, shape=(40, 30))
    field.from_numpy(img)
    for source in (field, img):
        window = fs.ui.Window("img", (40, 30))
        window.get_canvas().set_image(source)
        back = window.get_image_buffer_as_numpy()
        assert back.shape == (40, 30, 4)
        assert np.abs(back[..., :3] - img).max() <= 0.5 / 255 + 1e-6
        assert (back[..., 3] == 1).all()


def test_set_image_rounds_floats_to_the_nearest_byte():
    rng = np.random.default_rng(3)
    img = (rng.random((40, 30, 3)) * 1.4 - 0.2).astype(np.float32)
    img.flat[::11] = np.nan
    img.flat[1::13] = np.inf
    img.flat[2::17] = -np.inf
    img[0, 0] = [0.5 / 255, 1.5 / 255, 254.5 / 255]  # half-way points
    window = fs.ui.Window("img", (40, 30))
    _gui_raster.wait_image_compile()  # the compiled conversion (the first frames take numpy's)
    window.get_canvas().set_image(img)
    got = np.round(window.get_image_buffer_as_numpy()[..., :3] * 255).astype(np.uint8)
    unit = np.clip(np.nan_to_num(img), 0, 1)  # in float32, as GGUI's conversion
    want = (unit * np.float32(255) + np.float32(0.5)).astype(np.uint8)
    np.testing.assert_array_equal(got, want)


def test_set_image_u8_and_grey_and_stretch():
    window = fs.ui.Window("img", (8, 8))
    grey = np.zeros((4, 4), dtype=np.uint8)
    grey[3, 0] = 200  # x = 3 (right), y = 0 (bottom)
    window.get_canvas().set_image(grey)
    img = frame(window)
    assert tuple(img[7, 7]) == (200, 200, 200) and tuple(img[6, 6]) == (200, 200, 200)
    assert tuple(img[0, 0]) == (0, 0, 0)


def test_triangles_interpolate_per_vertex_colour_with_indices():
    window = fs.ui.Window("tri", (100, 100))
    verts = fs.Vector.field(2, fs.f32, shape=4)
    verts.from_numpy(np.array([[0.9, 0.9], [0.1, 0.1], [0.9, 0.1], [0.5, 0.5]], np.float32))
    colors = fs.Vector.field(3, fs.f32, shape=4)
    colors.from_numpy(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32))
    idx = fs.field(fs.i32, shape=3)
    idx.from_numpy(np.array([1, 2, 0], np.int32))
    window.get_canvas().triangles(verts, indices=idx, per_vertex_color=colors)
    img = frame(window).astype(int)
    # centroid (0.633, 0.367): one third of each corner colour
    r, g, b = at(img, 19 / 30, 11 / 30)
    assert abs(r - 85) <= 4 and abs(g - 85) <= 4 and b == 0
    assert at(img, 0.12, 0.8) == (0, 0, 0)  # outside, above the diagonal


def test_lines_width_and_skipped_zero_length_segments():
    window = fs.ui.Window("lines", (100, 100))
    canvas = window.get_canvas()
    canvas.set_background_color((1.0, 1.0, 1.0))
    v = np.array([[0.1, 0.5], [0.9, 0.5], [0.3, 0.8]], np.float32)
    idx = np.array([0, 1, 2, 2], np.int32)  # the second segment has no length
    canvas.lines(v, width=0.1, indices=idx, color=(0.0, 0.0, 0.0))
    img = frame(window)
    assert at(img, 0.5, 0.5) == (0, 0, 0) and at(img, 0.5, 0.54) == (0, 0, 0)
    assert at(img, 0.5, 0.6) == (255, 255, 255)
    assert at(img, 0.3, 0.8) == (255, 255, 255)


def _camera(pos=(0.0, 0.0, 3.0), target=(0.0, 0.0, 0.0), fov=45):
    camera = fs.ui.Camera()
    camera.position(*pos)
    camera.lookat(*target)
    camera.fov(fov)
    return camera


def _quad(z, half, offset=(0.0, 0.0)):
    ox, oy = offset
    v = np.array([[ox - half, oy - half, z], [ox + half, oy - half, z], [ox + half, oy + half, z],
                  [ox - half, oy + half, z]], np.float32)
    return v, np.array([0, 1, 2, 0, 2, 3], np.int32)


@pytest.mark.parametrize("near_first", [False, True])
def test_nearer_triangle_hides_farther_one(near_first):
    window = fs.ui.Window("depth", (120, 120))
    scene = window.get_scene()
    scene.set_camera(_camera())
    scene.ambient_light((1.0, 1.0, 1.0))
    far = (*_quad(-0.5, 0.6), (1.0, 0.0, 0.0))
    near = (*_quad(0.5, 0.3, offset=(0.2, 0.0)), (0.0, 0.0, 1.0))
    for v, idx, color in ([near, far] if near_first else [far, near]):
        scene.mesh(v, indices=idx, color=color)
    window.get_canvas().scene(scene)
    img = frame(window)
    f = 60 / math.tan(math.radians(22.5))
    near_x = 60 + f * 0.2 / 2.5  # the near quad's centre, projected
    assert tuple(img[60, int(near_x)]) == (0, 0, 255)
    assert tuple(img[60, 60 - int(f * 0.45 / 3.5)]) == (255, 0, 0)  # far quad, left of the near one
    assert tuple(img[5, 5]) == (0, 0, 0)
    depth = window.get_depth_buffer_as_numpy()
    assert depth.shape == (120, 120) and depth[5, 5] == 1.0
    assert 0 < depth[int(near_x), 60] < depth[60 - int(f * 0.45 / 3.5), 60] < 1


def test_particle_projects_where_the_camera_says_with_radius():
    window = fs.ui.Window("p", (200, 100))
    scene = window.get_scene()
    scene.set_camera(_camera())
    scene.ambient_light((1.0, 1.0, 1.0))
    centers = fs.Vector.field(3, fs.f32, shape=2)
    centers.from_numpy(np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.0]], np.float32))
    scene.particles(centers, radius=0.1, color=(0.0, 1.0, 0.0))
    window.get_canvas().scene(scene)
    img = frame(window)
    f = 50 / math.tan(math.radians(22.5))  # fov is vertical
    x1, y2 = 100 + f / 3, 50 - f * 0.5 / 3
    r = 0.1 * f / 3
    assert tuple(img[50, int(x1)]) == (0, 255, 0)  # +x is to the right
    assert tuple(img[int(y2), 100]) == (0, 255, 0)  # +y is up
    assert tuple(img[50, int(x1 + r + 2)]) == (0, 0, 0) and tuple(img[50, int(x1 + r - 2)]) == (0, 255, 0)
    assert tuple(img[50, 100]) == (0, 0, 0)


def test_lambert_shading_and_two_sided_meshes():
    def render(two_sided, light_z):
        window = fs.ui.Window("lit", (64, 64))
        scene = window.get_scene()
        scene.set_camera(_camera())
        scene.ambient_light((0.0, 0.0, 0.0))
        scene.point_light((0.0, 0.0, light_z), (1.0, 1.0, 1.0))
        v, idx = _quad(0.0, 1.0)
        scene.mesh(v, indices=idx[[0, 2, 1, 3, 5, 4]], color=(1.0, 1.0, 1.0), two_sided=two_sided)
        window.get_canvas().scene(scene)
        return at(frame(window), 0.5, 0.5)[0]

    # The quad's triangles face -z (away from the camera, toward z = -10 where no light is).
    assert render(False, 10.0) == 0
    assert render(True, 10.0) == 255  # turned toward the viewer: lit head-on
    assert render(False, -10.0) == 255  # one-sided keeps its normal: the light behind shows through
    assert render(True, -10.0) == 0  # two-sided: the side we see faces away from that light
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float64)
    window = fs.ui.Window("lit", (64, 64))
    scene = window.get_scene()
    scene.set_camera(_camera((0.3, 0.3, 3.0), (0.3, 0.3, 0.0)))
    scene.ambient_light((0.25, 0.25, 0.25))
    scene.point_light((0.3, 0.3 + 100 * math.sqrt(3), 100.0), (0.5, 0.5, 0.5))  # 60 degrees off
    scene.mesh(v, color=(1.0, 1.0, 1.0))
    window.get_canvas().scene(scene)
    assert abs(at(frame(window), 0.5, 0.5)[0] - 0.5 * 255) <= 2  # 0.25 + 0.5 cos 60


def test_scene_draws_and_lights_last_one_frame():
    window = fs.ui.Window("frames", (32, 32))
    canvas, scene = window.get_canvas(), window.get_scene()
    scene.set_camera(_camera())
    scene.ambient_light((1.0, 1.0, 1.0))
    scene.particles(np.zeros((1, 3)), radius=0.5, color=(1.0, 1.0, 1.0))
    canvas.scene(scene)
    assert at(frame(window), 0.5, 0.5) == (255, 255, 255)
    window.show()
    canvas.scene(scene)
    assert at(frame(window), 0.5, 0.5) == (0, 0, 0)


def test_occlusion_culling_changes_no_pixel(monkeypatch):
    rng = np.random.default_rng(3)
    centers = rng.random((3000, 3)) * 0.5
    particles = render3d.Particles(centers, rng.random(3000) * 0.03 + 0.01, rng.random((3000, 3)))
    state = _camera((0.25, 0.6, 1.5), (0.25, 0.25, 0.25)).state()
    lights = [(np.array([1.0, 2.0, 1.0]), np.ones(3))]
    culled = render3d.render([particles], lights, np.full(3, 0.1), state, (160, 120))
    monkeypatch.setattr(render3d, "_CULL_SPAN", 0)  # no box is ever called hidden
    full = render3d.render([particles], lights, np.full(3, 0.1), state, (160, 120))
    assert np.array_equal(culled[0], full[0]) and np.array_equal(culled[1], full[1])
    assert np.array_equal(culled[2], full[2])


def test_mesh_instance_and_scene_lines():
    window = fs.ui.Window("inst", (100, 100))
    scene = window.get_scene()
    scene.set_camera(_camera())
    scene.ambient_light((1.0, 1.0, 1.0))
    v, idx = _quad(0.0, 0.1)
    transforms = fs.Matrix.field(4, 4, fs.f32, shape=2)
    shift = np.tile(np.eye(4, dtype=np.float32), (2, 1, 1))
    shift[0, 0, 3], shift[1, 0, 3] = -0.5, 0.5
    transforms.from_numpy(shift)
    scene.mesh_instance(v, indices=idx, color=(1.0, 0.0, 0.0), transforms=transforms)
    scene.lines(np.array([[-1, -0.6, 0], [1, -0.6, 0]], np.float32), width=3, color=(0.0, 1.0, 0.0))
    window.get_canvas().scene(scene)
    img = frame(window)
    f = 50 / math.tan(math.radians(22.5))
    assert tuple(img[50, int(50 - f * 0.5 / 3)]) == (255, 0, 0)
    assert tuple(img[50, int(50 + f * 0.5 / 3)]) == (255, 0, 0)
    assert tuple(img[50, 50]) == (0, 0, 0)
    assert tuple(img[round(50 + f * 0.6 / 3), 50]) == (0, 255, 0)


def test_camera_matrices_agree_with_the_projection():
    camera = _camera((1.0, 2.0, 3.0), (0.0, 0.5, 0.0), fov=60)
    view, proj = camera.get_view_matrix(), camera.get_projection_matrix(2.0)
    eye = view @ np.array([1.0, 2.0, 3.0, 1.0])
    assert np.allclose(eye[:3], 0, atol=1e-6)
    target = view @ np.array([0.0, 0.5, 0.0, 1.0])
    assert np.allclose(target[:2], 0, atol=1e-6) and target[2] < 0
    p = np.array([0.3, -0.2, 0.1])
    clip = proj @ view @ np.append(p, 1.0)
    ndc = clip[:3] / clip[3]
    sx, sy, _ = render3d.Projector(camera.state(), (200, 100)).project(p[None])
    assert np.isclose((ndc[0] + 1) * 100, sx[0], atol=1e-3) and np.isclose((1 - ndc[1]) * 50, sy[0], atol=1e-3)


def test_inputs_from_ndarray_and_bad_shape_is_located():
    window = fs.ui.Window("nd", (32, 32))
    nd = fs.Vector.ndarray(2, fs.f32, shape=1)
    nd.from_numpy(np.array([[0.5, 0.5]], np.float32))
    window.get_canvas().circles(nd, radius=0.2, color=(1.0, 1.0, 0.0))
    assert at(frame(window), 0.5, 0.5) == (255, 255, 0)
    scalar = fs.field(fs.f32, shape=4)
    with pytest.raises(UIInputError, match="Scene.particles centers: expected 3-component") as info:
        window.get_scene().particles(scalar, radius=0.1)
    assert "test_ui.py" in str(info.value) and isinstance(info.value, ValueError)
    with pytest.raises(UIInputError, match="out of range for 3 vertices"):
        window.get_canvas().triangles(np.zeros((3, 2)), indices=np.array([0, 1, 3]))
    for image in (np.zeros(3), np.zeros((4, 4, 2)), "img"):  # refused at the call, not at show()
        with pytest.raises(UIInputError, match="Canvas.set_image: expected numbers of shape") as info:
            window.get_canvas().set_image(image)
        assert info.value.loc.file == __file__
    with pytest.raises(UIInputError, match=r"Camera.position takes three numbers, got \('a', 1, 2\)"):
        fs.ui.Camera().position("a", 1, 2)


def test_no_input_arrives_and_widgets_return_their_values():
    window = fs.ui.Window("inert", (16, 16), vsync=True, show_window=False)
    assert window.running and window.event is None
    assert window.get_events(fs.ui.PRESS) == [] and window.get_event() is False
    assert not window.is_pressed(fs.ui.LMB, fs.ui.ESCAPE, "w")
    assert window.get_cursor_pos() == (0.5, 0.5)
    gui = window.get_gui()
    with gui.sub_window("panel", 0.1, 0.1, 0.5, 0.5) as w:
        w.text("hello")
        assert w.slider_float("s", 0.25, 0.0, 1.0) == 0.25 and w.slider_int("i", 3, 0, 9) == 3
        assert w.checkbox("c", True) is True and w.button("b") is False
        assert w.color_edit_3("col", (0.1, 0.2, 0.3)) == (0.1, 0.2, 0.3)
    with pytest.raises(ValueError, match="unrecognized event tag"):
        window.get_events("Click")
    window.running = False
    assert not window.running
    camera = _camera()
    camera.track_user_inputs(window, movement_speed=0.03, hold_key=fs.ui.RMB)
    assert np.allclose(list(camera.curr_lookat), [0.0, 0.0, 2.0])  # one unit ahead, as Taichi


def test_vector_field_draws_arrows_along_the_field():
    window = fs.ui.Window("vf", (100, 100))
    canvas = window.get_canvas()
    canvas.set_background_color((1.0, 1.0, 1.0))
    v = fs.Vector.field(2, fs.f32, shape=(11, 11))
    v.fill(0)
    v[5, 5] = [1.0, 0.0]  # one arrow from the centre, 0.3 long, pointing right
    canvas.vector_field(v, arrow_spacing=5, scale=0.3, width=0.02)
    img = frame(window)
    assert at(img, 0.65, 0.5) == (0, 0, 0) and at(img, 0.5, 0.65) == (255, 255, 255)
    assert at(img, 0.75, 0.7) == (255, 255, 255)


def test_set_image_takes_a_texture():
    rng = np.random.default_rng(3)
    img = rng.random((20, 10, 4)).astype(np.float32)
    tex = fs.Texture(fs.Format.rgba32f, (20, 10))
    field = fs.Vector.field(4, fs.f32, shape=(20, 10))
    field.from_numpy(img)
    tex.from_field(field)
    window = fs.ui.Window("tex", (20, 10))
    window.get_canvas().set_image(tex)
    back = window.get_image_buffer_as_numpy()
    assert np.abs(back[..., :3] - img[..., :3]).max() <= 0.5 / 255 + 1e-6
