"""fieldsim.gui: offscreen ti.GUI drawing read back from the PNGs it writes."""

import time
import warnings

import numpy as np
import pytest
from PIL import Image
from support.ir_interp import FakeField

from fieldsim import _gui_raster
from fieldsim.gui import GUI, frames_to_gif
from fieldsim.ir import subnormals

RED, GREEN, BLUE, WHITE, BG = 0xFF0000, 0x00FF00, 0x0000FF, 0xFFFFFF, 0x112F41


def rgb(c):
    return ((c >> 16) & 0xFF, (c >> 8) & 0xFF, c & 0xFF)


def shot(gui, tmp_path, name="frame.png"):
    """Show the frame into a PNG and read it back as an (H, W, 3) array, row 0 at the top."""
    path = tmp_path / name
    gui.show(str(path))
    with Image.open(path) as im:
        assert im.size == gui.res
        return np.asarray(im.convert("RGB"))


def displayed(gui, tmp_path):
    """The canvas as shown, without clearing it: (W, H, 3) floats indexed [x, y] as get_image's
    (get_image returns Taichi's buffer, where set_image's values are kept as given)."""
    path = tmp_path / "canvas.png"
    gui.save(path)
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))[::-1].transpose(1, 0, 2).astype(np.float32) / 255


def at(img, x, y):
    """The pixel at Taichi coordinates (x, y) in [0, 1]^2, y up."""
    h, w, _ = img.shape
    return tuple(int(v) for v in img[min(int((1 - y) * h), h - 1), min(int(x * w), w - 1)])


@pytest.mark.parametrize("res", [64, (96, 48)])
def test_png_has_resolution_and_background(tmp_path, res):
    gui = GUI("bg", res=res, background_color=BG)
    img = shot(gui, tmp_path)
    w, h = (res, res) if isinstance(res, int) else res
    assert img.shape == (h, w, 3)
    assert (img == rgb(BG)).all()


def test_big_circle_fills_centre_only(tmp_path):
    gui = GUI(res=(128, 96), background_color=BG)
    gui.circle((0.5, 0.5), color=RED, radius=20)
    img = shot(gui, tmp_path)
    assert at(img, 0.5, 0.5) == rgb(RED)
    assert at(img, 0.02, 0.02) == rgb(BG) and at(img, 0.98, 0.98) == rgb(BG)
    # radius is in pixels: 15 px from the centre is inside, 25 px is outside
    assert tuple(img[48, 64 + 15]) == rgb(RED) and tuple(img[48 + 15, 64]) == rgb(RED)
    assert tuple(img[48, 64 + 25]) == rgb(BG) and tuple(img[48 + 25, 64]) == rgb(BG)


def test_y_is_up_and_x_is_right(tmp_path):
    gui = GUI(res=100)
    gui.circles(np.array([[0.5, 0.9], [0.9, 0.5]]), radius=4, color=np.array([GREEN, BLUE]))
    img = shot(gui, tmp_path)
    assert tuple(img[10, 50]) == rgb(GREEN)  # near the top row of the PNG
    assert tuple(img[90, 50]) == (0, 0, 0)
    assert tuple(img[50, 90]) == rgb(BLUE)  # near the right edge
    assert tuple(img[50, 10]) == (0, 0, 0)


def test_circles_palette_radii_and_fields(tmp_path):
    gui = GUI(res=100)
    pos = FakeField.of([[0.2, 0.5], [0.5, 0.5], [0.8, 0.5]])
    gui.circles(pos, radius=np.array([3, 3, 6]), palette=[RED, GREEN, BLUE], palette_indices=[2, 0, 1])
    img = shot(gui, tmp_path)
    assert [at(img, x, 0.5) for x in (0.2, 0.5, 0.8)] == [rgb(BLUE), rgb(RED), rgb(GREEN)]
    assert tuple(img[50, 84]) == rgb(GREEN) and tuple(img[50, 25]) == (0, 0, 0)


def test_non_finite_circles_draw_nothing_and_do_not_warn(tmp_path):
    # a DEM program from GitHub draws every slot of a particle field, unused ones at NaN
    # (0/0 masses); Taichi skips those silently, fieldsim warned from numpy's integer cast
    pos = np.array([[0.5, 0.5], [np.nan, 0.2], [0.3, np.inf], [0.2, 0.2]])
    radius = np.array([3.0, 2.0, 2.0, np.nan])
    gui, only = GUI(res=32), GUI(res=32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        gui.circles(pos, radius=radius, color=WHITE)
    only.circles(pos[:1], radius=3.0, color=WHITE)
    assert (shot(gui, tmp_path, "a.png") == shot(only, tmp_path, "b.png")).all()


def test_non_finite_lines_and_triangles_draw_nothing_and_do_not_warn(tmp_path):
    # a mass-spring course program diverges to NaN positions and keeps drawing its springs;
    # Taichi draws nothing for those, fieldsim failed with "array is too big" (or warned)
    nan, inf = np.nan, np.inf
    begin = np.array([[0.1, 0.1], [0.2, 0.2], [nan, nan], [0.3, 0.3], [0.1, 0.9]])
    end = np.array([[0.9, 0.1], [nan, 0.5], [0.5, 0.5], [inf, 0.3], [0.9, 0.9]])
    radius = np.array([1.0, 2.0, 2.0, 2.0, inf])
    corners = np.array([[[0.1, 0.2], [nan, 0.2], [0.2, 0.3]], [[0.5, 0.9], [0.5, 0.5], [0.7, -inf]],
                        [[0.9, 0.2], [0.6, 0.2], [0.6, 0.6]]])  # triangle, corner, xy
    tri = [corners[:, k] for k in range(3)]
    gui, only = GUI(res=32), GUI(res=32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        gui.lines(begin, end, radius=radius, color=WHITE)
        gui.line((0.2, nan), (0.6, 0.6), radius=2, color=WHITE)
        gui.triangles(*tri, color=WHITE)
        got = shot(gui, tmp_path, "a.png")
    only.lines(begin[:1], end[:1], radius=1.0, color=WHITE)
    only.triangles(*(t[2:] for t in tri), color=WHITE)
    want = shot(only, tmp_path, "b.png")
    assert (got == want).all() and (want == 255).any()


def test_tiny_circle_covers_one_pixel_by_its_radius(tmp_path):
    # the centre (25, 25) is the lower-left corner of pixel (25, 25) (y up): covered by
    # clamp(r - 0, 0, 1), white over black truncated to a byte; its neighbours are 1 away
    gui = GUI(res=50)
    gui.circle((0.5, 0.5), color=WHITE, radius=0.1)
    img = shot(gui, tmp_path)
    assert (img > 0).any(axis=2).sum() == 1
    assert img[50 - 1 - 25, 25].tolist() == [25, 25, 25]


def test_lines_and_rect(tmp_path):
    gui = GUI(res=100, background_color=BG)
    gui.line((0.1, 0.25), (0.9, 0.25), radius=2, color=RED)
    # radius 2: on a pixel boundary, a radius-1 line covers two pixels by half (as Taichi)
    gui.lines(np.array([[0.25, 0.4]]), np.array([[0.25, 0.9]]), radius=2, color=GREEN)
    gui.rect((0.5, 0.9), (0.9, 0.5), radius=2, color=BLUE)
    img = shot(gui, tmp_path)
    assert at(img, 0.5, 0.25) == rgb(RED) and at(img, 0.12, 0.25) == rgb(RED)
    assert at(img, 0.5, 0.3) == rgb(BG) and at(img, 0.95, 0.25) == rgb(BG)
    assert at(img, 0.25, 0.6) == rgb(GREEN) and at(img, 0.3, 0.6) == rgb(BG)
    assert at(img, 0.7, 0.9) == rgb(BLUE) and at(img, 0.5, 0.7) == rgb(BLUE)
    assert at(img, 0.7, 0.7) == rgb(BG)  # the rect is an outline


def test_diagonal_line_is_connected(tmp_path):
    gui = GUI(res=64)
    gui.line((0.0, 0.0), (1.0, 0.37), radius=0.5, color=WHITE)
    img = shot(gui, tmp_path)
    cols = (img > 0).any(axis=2).any(axis=0)
    assert cols.all()


def test_single_item_calls_read_pos0_and_pos1_like_taichi(tmp_path):
    """line/circle/triangle read ``p[0]`` and ``p[1]`` as Taichi's do: a (2, 1) column (a rotation
    matrix times a column offset, as DiffTaichi's rigid_body.py passes) or a longer sequence
    draws at its first two entries. (Taichi 1.7.4's pybind path_single rejects the column.)"""
    gui = GUI(res=100, background_color=BG)
    col = lambda x, y: np.array([[x], [y]])
    gui.line(col(0.1, 0.25), col(0.9, 0.25), radius=2, color=RED)
    gui.circle(col(0.5, 0.7), color=GREEN, radius=4)
    gui.triangle(col(0.1, 0.5), col(0.3, 0.5), [0.2, 0.6, 123.0], color=BLUE)
    img = shot(gui, tmp_path)
    assert at(img, 0.5, 0.25) == rgb(RED) and at(img, 0.5, 0.3) == rgb(BG)
    assert at(img, 0.5, 0.7) == rgb(GREEN) and at(img, 0.6, 0.7) == rgb(BG)
    assert at(img, 0.2, 0.52) == rgb(BLUE) and at(img, 0.2, 0.62) == rgb(BG)
    with pytest.raises(ValueError):
        gui.line(np.zeros((2, 2)), (0.5, 0.5))  # p[0] is not one number


def test_triangles_and_arrows(tmp_path):
    gui = GUI(res=100)
    gui.triangles(np.array([[0.1, 0.1]]), np.array([[0.5, 0.1]]), np.array([[0.3, 0.5]]), color=GREEN)
    gui.arrow((0.6, 0.5), (0.3, 0.0), radius=1, color=RED)
    img = shot(gui, tmp_path)
    assert at(img, 0.3, 0.2) == rgb(GREEN) and at(img, 0.45, 0.45) == (0, 0, 0)
    assert at(img, 0.75, 0.5) == (127, 0, 0)  # a radius-1 shaft on a pixel boundary: half each side


def test_set_image_uses_taichi_xy_convention(tmp_path):
    w, h = 80, 60
    img = np.zeros((w, h, 3), np.float32)  # img[x, y]
    img[: w // 2, :, 0] = 1.0  # left half red
    img[:, 3 * h // 4 :, 2] = 1.0  # top quarter blue
    gui = GUI(res=(w, h))
    gui.set_image(img)
    out = shot(gui, tmp_path)
    assert at(out, 0.1, 0.1) == (255, 0, 0)
    assert at(out, 0.9, 0.1) == (0, 0, 0)
    assert at(out, 0.9, 0.95) == (0, 0, 255)
    assert at(out, 0.1, 0.95) == (255, 0, 255)


def test_set_image_gray_uint8_rgba_and_get_image():
    gui = GUI(res=(4, 3))
    gray = np.arange(12, dtype=np.uint8).reshape(4, 3) * 20
    gui.set_image(gray)
    back = gui.get_image()
    assert back.shape == (4, 3, 4)
    np.testing.assert_allclose(back[..., 0], gray / 255.0, atol=1e-6)
    rgba = np.ones((4, 3, 4), np.float32) * 0.5
    gui.set_image(FakeField.of(rgba))
    assert (gui.get_image() == 0.5).all()  # the values as given, as Taichi's buffer holds them


def test_get_image_returns_the_image_as_taichis_buffer_holds_it():
    # Taichi 1.7.4 (measured): u8 scaled by float32(1/255), alpha 0 for an RGB image;
    # a cleared canvas is opaque, its bytes scaled the same way (0x33 -> 0.20000002)
    gui = GUI(res=(7, 5))
    img = np.random.default_rng(3).integers(0, 256, size=(7, 5, 3), dtype=np.uint8)
    gui.set_image(img)
    back = gui.get_image()
    assert back.dtype == np.float32 and back.shape == (7, 5, 4)
    np.testing.assert_array_equal(back[..., :3], img.astype(np.float32) * np.float32(1 / 255))
    np.testing.assert_array_equal(back[..., 3], 0.0)
    gui.clear(0x336699)
    back = gui.get_image()
    assert back[3, 2].tolist() == [np.float32(0.20000002), np.float32(0.40000004), np.float32(0.6), 1.0]


def test_get_image_keeps_float_values_grey_alpha_and_field_alpha_as_taichi():
    gui = GUI(res=(4, 3))
    x = np.full((4, 3, 3), 0.3, np.float32)
    x[0, 0, 0], x[1, 1, 1], x[2, 2, 2] = np.nan, -2.0, 1.7  # not clipped, not rounded
    gui.set_image(x)
    back = gui.get_image()
    assert np.isnan(back[0, 0, 0]) and back[1, 1, 1] == -2.0 and back[2, 2, 2] == np.float32(1.7)
    assert back[3, 0].tolist() == [np.float32(0.3)] * 3 + [0.0]
    gui.set_image(np.full((4, 3), 0.3))  # a grey array fills alpha too
    assert gui.get_image()[1, 2].tolist() == [np.float32(0.3)] * 4
    gui.set_image(FakeField.of(np.full((4, 3), 0.3)))  # a float field's path leaves alpha 0
    assert gui.get_image()[1, 2].tolist() == [np.float32(0.3)] * 3 + [0.0]
    gui.set_image(np.full((4, 3, 2), 0.3, np.float32))  # red-green: blue and alpha 0
    assert gui.get_image()[1, 2].tolist() == [np.float32(0.3)] * 2 + [0.0, 0.0]
    img = np.full((4, 3, 3), 0.3, np.float32)
    gui.set_image(img)
    img[...] = 0.9  # Taichi keeps a copy of the image set
    assert gui.get_image()[1, 2].tolist() == [np.float32(0.3)] * 3 + [0.0]


def test_show_writes_float_images_truncated_to_bytes_as_taichi(tmp_path):
    gui = GUI(res=(4, 3))  # Taichi 1.7.4 writes 76, 127, 254 for these (measured)
    img = np.zeros((4, 3, 3), np.float32)
    img[..., 0], img[..., 1], img[..., 2] = 0.3, 0.5, 0.999
    gui.set_image(img)
    assert shot(gui, tmp_path)[0, 0].tolist() == [76, 127, 254]


def test_get_image_shows_shapes_drawn_over_the_image_and_forgets_it_when_cleared():
    gui = GUI(res=(8, 6))
    gui.set_image(np.full((8, 6, 3), 0.3, np.float32))
    gui.circle((0.5, 0.5), color=RED, radius=2)
    back = gui.get_image()
    assert back[4, 3].tolist() == [1.0, 0.0, 0.0, 1.0]
    assert back[0, 0].tolist() == [np.float32(0.3)] * 3 + [0.0]
    gui.show()
    assert (gui.get_image() == [0.0, 0.0, 0.0, 1.0]).all()


def _reference_canvas(img, res):
    """What set_image must show, as (H, W, 3) uint8 with row 0 at the top: floats (NaN as 0,
    clipped to [0, 1]) rounded to bytes in float32, ints clipped, grey to three channels, alpha dropped,
    nearest-pixel scaling."""
    a = np.asarray(img)
    a = a[..., None] if a.ndim == 2 else a
    if a.dtype in (np.uint16, np.uint32):  # Taichi: scaled by the type's maximum
        a = a.astype(np.float32) * np.float32(1 / np.iinfo(a.dtype).max)
    if a.shape[2] == 2:  # red and green; blue 0
        a = np.concatenate([a, np.zeros_like(a[..., :1])], axis=2)
    w, h = res
    a = a[(np.arange(w) * a.shape[0]) // w][:, (np.arange(h) * a.shape[1]) // h]
    if a.dtype.kind in "fb":
        a = np.clip(np.nan_to_num(a.astype(np.float32)), 0, 1)  # in float32, as Taichi does
        a = np.floor(a * np.float32(255))  # truncated, as Taichi's GUI shows and saves it
    a = np.clip(a, 0, 255).astype(np.uint8)
    a = np.repeat(a, 3, axis=2) if a.shape[2] == 1 else a[..., :3]
    return a.transpose(1, 0, 2)[::-1]


@pytest.mark.parametrize("shape, dtype, res", [
    ((40, 30, 3), np.float32, (40, 30)),
    ((40, 30), np.float32, (40, 30)),
    ((40, 30, 4), np.float64, (40, 30)),
    ((20, 15, 3), np.float32, (40, 30)),  # scaled up
    ((40, 30), np.int32, (40, 30)),
    ((40, 30, 3), np.uint8, (40, 30)),
    ((40, 30), np.bool_, (40, 30)),
    ((40, 30, 2), np.float32, (40, 30)),  # red-green, as Taichi's vector fields of 2
    ((40, 30, 3), np.uint16, (40, 30)),
])
@pytest.mark.parametrize("conversion", ["numpy", "compiled"])
def test_set_image_matches_a_numpy_reference_frame_after_frame(tmp_path, monkeypatch, shape, dtype,
                                                               res, conversion):
    if conversion == "numpy":  # as in the first frames, before the compiled loop is ready
        monkeypatch.setattr(_gui_raster, "pack_image", lambda *args: False)
    else:
        _gui_raster.wait_image_compile()
    rng = np.random.default_rng(1)
    gui = GUI(res=res)
    for frame in range(3):  # buffers are reused between frames: each frame stands alone
        if dtype == np.bool_:
            img = rng.random(shape) > 0.5
        elif dtype == np.uint16:
            img = rng.integers(0, 65536, shape).astype(dtype)
        elif np.issubdtype(dtype, np.integer):
            img = rng.integers(-50, 300, shape).astype(dtype)
        else:
            img = (rng.random(shape) * 1.4 - 0.2).astype(dtype)
            img.flat[frame::7] = [np.nan, np.inf, -np.inf][frame]
        gui.set_image(img)
        out = shot(gui, tmp_path, f"f{frame}.png")
        np.testing.assert_array_equal(out, _reference_canvas(img, res))


def _float_canvas(gui):
    """The canvas as (H, W, 3) float bytes, row 0 at the top."""
    buf = gui._buf
    return np.stack([(buf >> 16) & 255, (buf >> 8) & 255, buf & 255], -1).astype(np.float64)


def _over(ref, alpha, colour):
    """Blend ``colour`` over the float reference by the coverage ``alpha`` (H, W) as Taichi's
    GUI blends: old (1 - a) + colour a, in float, nothing rounded between shapes."""
    a = alpha[..., None]
    ref *= 1.0 - a
    ref += a * np.array(rgb(colour), np.float64)


def _disc_alpha(shape, x, y, r):
    """Coverage of a circle centred at (x, y) pixels (y down) by Taichi's rule: clamp(r - d,
    0, 1), d from each pixel's lower-left corner (its integer point, y up): (col, row + 1)."""
    h, w = shape
    ys, xs = np.mgrid[0:h, 0:w]
    return np.clip(r - np.hypot(xs - x, ys + 1 - y), 0.0, 1.0)


def _segment_alpha(shape, a, b, r):
    """Coverage of a round-capped segment (pixels, y down): clamp(r - d, 0, 1), d from each
    pixel's centre to the segment."""
    h, w = shape
    ys, xs = np.mgrid[0:h, 0:w]
    px, py = xs + 0.5 - a[0], ys + 0.5 - a[1]
    e = np.asarray(b, np.float64) - a
    t = np.clip((px * e[0] + py * e[1]) / max(e @ e, 1e-12), 0.0, 1.0)
    return np.clip(r - np.hypot(px - t * e[0], py - t * e[1]), 0.0, 1.0)


def _assert_truncates(gui, ref):
    """The canvas holds the float reference truncated to bytes (as Taichi's frames are), up
    to float rounding."""
    d = ref - _float_canvas(gui)
    assert d.min() > -0.01 and d.max() < 1.01, (d.min(), d.max(), np.argwhere(d >= 1.01)[:5])


def test_circle_and_line_coverage_is_taichis():
    # measured on Taichi 1.7.4: a radius-1 circle centred on a pixel corner lights one pixel;
    # a radius-1 line along a pixel boundary covers the two rows beside it by half
    gui = GUI(res=(64, 48))
    gui.circle((32 / 64, 24 / 48), color=WHITE, radius=1)
    img = gui.get_image()
    assert (img[..., 0] > 0).sum() == 1 and img[32, 24, 0] == 1.0
    gui.clear()
    gui.line((5 / 64, 24 / 48), (50 / 64, 24 / 48), radius=1, color=WHITE)
    img = gui.get_image()[..., 0] * 255
    assert set(np.flatnonzero(img.any(axis=0))) == {23, 24}  # two rows (y up)
    np.testing.assert_allclose(img[10:40, 23:25], 127)  # 0.5 truncated to a byte
    assert 0 < img[4, 24] < 127  # the round cap: d = sqrt(0.5) from the end


@pytest.mark.parametrize("r", [0.5, 1.0, 1.7, 2.5, 4.2, 9.0])
def test_circles_and_lines_blend_by_coverage_over_the_background(r):
    rng = np.random.default_rng(int(r * 10))
    w, h = 40, 30
    for _ in range(3):
        gui = GUI(res=(w, h), background_color=BG)
        ref = _float_canvas(gui)
        c = rng.uniform(-0.1, 1.1, 2)
        colour = int(rng.integers(0, 1 << 24))
        gui.circle(c, color=colour, radius=r)
        _over(ref, _disc_alpha((h, w), c[0] * w, (1 - c[1]) * h, r), colour)
        _assert_truncates(gui, ref)
        ref = _float_canvas(gui)  # the canvas keeps bytes between calls (Taichi: floats)
        a, b = rng.uniform(-0.1, 1.1, (2, 2))
        gui.lines(a[None], b[None], radius=r / 2, color=WHITE)
        _over(ref, _segment_alpha((h, w), a * (w, -h) + (0, h), b * (w, -h) + (0, h), r / 2), WHITE)
        _assert_truncates(gui, ref)


@pytest.mark.parametrize("w, h, n, radii, lo, hi, colours", [
    (37, 29, 300, [0.0, 0.4, 1.0, 1.5, 2.7, 6.0], -0.1, 1.1, 4),  # some cross the edges
    (64, 48, 2000, [0.3, 1.0, 1.5, 1.9], 0.05, 0.95, 4),  # small ones, all inside
    (64, 48, 2000, [0.3, 1.0, 1.5, 1.9, 3.0], -0.05, 1.05, 1),  # one colour: any order
])
def test_circles_match_a_disc_by_disc_reference(w, h, n, radii, lo, hi, colours):
    """Overlapping discs of several colours and sizes: the canvas equals blending them one at a
    time, in order, by Taichi's coverage rule (then truncating to bytes)."""
    rng = np.random.default_rng(2)
    pos = lo + rng.random((n, 2)) * (hi - lo)
    radius = rng.choice(radii, n)
    palette = np.array([RED, GREEN, BLUE, WHITE])[:colours]
    idx = rng.integers(0, colours, n)
    gui = GUI(res=(w, h))
    ref = _float_canvas(gui)
    gui.circles(pos, radius=radius, palette=palette, palette_indices=idx)
    px, py = pos[:, 0] * w, (1.0 - pos[:, 1]) * h
    for i in range(n):
        _over(ref, _disc_alpha((h, w), px[i], py[i], radius[i]), int(palette[idx[i]]))
    _assert_truncates(gui, ref)


def test_text_drawn_again_covers_the_same_pixels_in_any_colour():
    """Labels are rasterised once per (text, size, place, canvas) and reused: a second frame,
    another GUI and another colour cover exactly the pixels of the first drawing."""
    first = GUI(res=(160, 60))
    first.text("Left click: add", (0.05, 0.8), font_size=14, color=WHITE)
    drawn = first._buf.copy()
    first.show()
    first.text("Left click: add", (0.05, 0.8), font_size=14, color=WHITE)
    np.testing.assert_array_equal(first._buf, drawn)
    other = GUI(res=(160, 60))
    other.text("Left click: add", (0.05, 0.8), font_size=14, color=RED)
    covered = drawn != first.background_color
    assert covered.sum() > 30
    np.testing.assert_array_equal(other._buf != other.background_color, covered)
    full = drawn == WHITE  # fully covered glyph pixels take the colour exactly
    assert full.any() and (other._buf[full] == RED).all()
    moved = GUI(res=(160, 60))
    moved.text("Left click: add", (0.05, 0.5), font_size=14, color=WHITE)
    assert not np.array_equal(moved._buf, drawn)


LABELS = [("Step: 12, Time: 0.300000, substeps = 5", 20.0, 0.0, 0.0, (640, 640)),
          ("Left click: add", 14.0, 8.0, 12.0, (160, 60)),
          ("fi ffl AV To. jy", 17.0, 3.3, 20.5, (300, 80)),
          ("Particles: 1024 / 11 / 9000", 20.0, 0.0, 16.0, (640, 640)),
          ("edge", 30.0, -10.0, -5.0, (40, 20))]


def _coverage_image(coverage, res):
    out = np.zeros(res[::-1], np.float32)
    out[coverage[0]] = coverage[1][..., 0]
    return out


@pytest.mark.parametrize("label", LABELS, ids=lambda label: label[0][:12])
def test_text_from_cached_glyphs_matches_matplotlibs_rendering(label):
    """A label that changes every frame (a step counter) is composed from cached glyph
    bitmaps, not rendered as a string on a whole canvas (7 ms a label, 5x Taichi's GUI): the
    same pixels as matplotlib's Agg text, but where overlapping glyphs round differently."""
    from fieldsim import gui
    composed = _coverage_image(gui._text_coverage.__wrapped__(*label), label[4])
    rendered = _coverage_image(gui._text_coverage_agg(*label), label[4])
    diff = np.abs(composed - rendered)
    assert diff.max() <= 1.001 / 255 and (diff > 0).sum() <= 4
    assert (rendered > 0).sum() > 30


def test_text_falls_back_to_whole_string_rendering(monkeypatch):
    from fieldsim import gui

    def missing(*args):
        raise AttributeError("FT2Font has no attribute '_layout'")
    monkeypatch.setattr(gui, "_glyph_placements", missing)
    label = LABELS[1]
    composed = gui._text_coverage.__wrapped__(*label)
    np.testing.assert_array_equal(composed[1], gui._text_coverage_agg(*label)[1])


def test_text_blends_over_the_canvas_and_leaves_the_rest_alone(tmp_path):
    rng = np.random.default_rng(0)
    before = rng.random((120, 60, 3)).astype(np.float32)
    gui = GUI(res=(120, 60))
    gui.set_image(before)
    base = displayed(gui, tmp_path)
    gui.text("Wq", (0.1, 0.8), font_size=24, color=0x000000)
    after = displayed(gui, tmp_path)
    changed = np.nonzero((after != base).any(axis=2))
    assert changed[0].size > 20
    # black text only darkens, and nothing changes away from the glyphs (x < 60, top rows)
    assert (after <= base + 1e-6).all()
    assert changed[0].max() < 60 and changed[1].min() > 10


def test_show_clears_and_counts_frames(tmp_path):
    gui = GUI(res=32, background_color=BG)
    gui.circle((0.5, 0.5), color=RED, radius=10)
    first = shot(gui, tmp_path, "a.png")
    second = shot(gui, tmp_path, "b.png")
    assert at(first, 0.5, 0.5) == rgb(RED)
    assert (second == rgb(BG)).all()
    assert gui.frame == 2
    gui.show()  # no file: just ends the frame
    assert gui.frame == 3
    gui.circle((0.5, 0.5), color=RED, radius=10)
    gui.clear(GREEN)
    assert (shot(gui, tmp_path, "c.png") == rgb(GREEN)).all()


def test_running_events_and_no_window():
    gui = GUI("x", res=16, show_gui=True)
    assert gui.running and gui.res == (16, 16)
    assert gui.get_events() == [] and list(gui.get_events(GUI.PRESS)) == []
    assert not gui.get_event(GUI.ESCAPE)
    # Taichi 1.7.4's GUI: (0.0, 0.0) before any mouse motion, and headless always
    assert gui.get_cursor_pos() == (0.0, 0.0)
    gui.running = False
    assert not gui.running
    other = GUI(res=16)
    other.close()
    assert not other.running


def test_frames_to_gif(tmp_path):
    gui = GUI(res=(40, 30))
    pngs = []
    for i in range(5):
        gui.circle((0.1 + 0.2 * i, 0.5), color=RED, radius=5)
        pngs.append(str(tmp_path / f"f{i:02d}.png"))
        gui.show(pngs[-1])
    out = frames_to_gif(pngs, tmp_path / "sub" / "anim.gif", fps=10)
    with Image.open(out) as im:
        assert im.format == "GIF" and im.size == (40, 30)
        assert im.n_frames == 5
        assert im.info.get("duration") == 100
    with pytest.raises(ValueError):
        frames_to_gif([], tmp_path / "none.gif")


def test_thousands_of_circles_are_fast():
    gui = GUI(res=512)
    pos = np.random.default_rng(0).random((10000, 2))
    gui.circles(pos, radius=1.5, color=WHITE)  # warm-up
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        gui.circles(pos, radius=1.5, color=0xED553B)
        gui.show()
        best = min(best, time.perf_counter() - t)
    assert best < 0.2, f"10k circles took {best:.3f} s"


def test_taichi_constructor_arguments_and_event_state():
    gui = GUI("full", (32, 16), fullscreen=True, fast_gui=True)
    assert gui.res == (32, 16) and gui.event is None and gui.fps_limit is None
    assert not gui.has_key_event() and not gui.get_event(GUI.PRESS) and gui.event is None
    assert not gui.is_pressed(GUI.LEFT, "a", GUI.TAB, GUI.CAPSLOCK)
    gui.key_pressed.add("a")  # what a received press would leave behind
    assert gui.is_pressed(GUI.LEFT, "a")
    gui.fps_limit = 30
    assert isinstance(GUI.Event().key, type(None))


def test_arrow_head_is_taichis_45_degree_tip(tmp_path):
    gui = GUI(res=200)
    gui.arrow((0.2, 0.5), (0.5, 0.0), radius=1, color=RED)
    img = shot(gui, tmp_path)
    # Tip at x = 0.7; head strokes of length 0.2 * 0.5 going back at 45 degrees.
    d = 0.1 / np.sqrt(2)
    assert at(img, 0.7 - d / 2, 0.5 + d / 2) == rgb(RED) and at(img, 0.7 - d / 2, 0.5 - d / 2) == rgb(RED)
    assert at(img, 0.7 - d / 2, 0.5 + d) == (0, 0, 0)


def test_point_and_vector_fields(tmp_path):
    gui = GUI(res=40)
    radius = np.zeros((2, 2))
    radius[1, 0] = 4.0  # bottom-right cell of a 2 x 2 grid
    gui.point_field(radius, color=BLUE)
    img = shot(gui, tmp_path, "p.png")
    assert at(img, 0.75, 0.25) == rgb(BLUE) and at(img, 0.25, 0.75) == (0, 0, 0)  # radius 0: nothing
    assert at(img, 0.75 + 0.07, 0.25) == rgb(BLUE) and at(img, 0.25 + 0.08, 0.75) == (0, 0, 0)
    v = np.zeros((10, 10, 2))
    v[0, 0] = (1.0, 0.0)
    gui.vector_field(v, arrow_spacing=5, color=GREEN)
    img = shot(gui, tmp_path, "v.png")
    assert at(img, 0.025, 0.0) == (0, 127, 0) and at(img, 0.3, 0.3) == (0, 0, 0)  # half: on the edge


def test_contour_resamples_through_plasma(tmp_path):
    from matplotlib import colormaps

    gui = GUI(res=(20, 10))
    gui.contour(np.array([[0.0, 0.0], [1.0, 1.0]]), normalize=True)  # 0 on the left, 1 on the right
    img = shot(gui, tmp_path)
    lo, hi = (tuple(int(c * 255 + 0.5) for c in colormaps["plasma"](t)[:3]) for t in (0.0, 1.0))
    assert np.abs(np.subtract(at(img, 0.0, 0.5), lo)).max() <= 1
    assert np.abs(np.subtract(at(img, 0.99, 0.5), hi)).max() <= 1


def test_widget_values_are_floats():
    gui = GUI("widgets", res=(32, 32))
    radius = gui.slider("Radius", 1, 50, step=1)
    label = gui.label("x")
    assert radius.value == 1.0 and isinstance(radius.value, float)
    radius.value += 9
    label.value = 2
    assert radius.value == 10.0 and isinstance(label.value, float)
    with pytest.raises(TypeError, match="slider 'Radius': the value must be a number, got 'x'"):
        radius.value = "x"
    assert radius.value == 10.0


def test_set_image_of_floats_truncates_clips_and_zeroes_nan(tmp_path):
    _gui_raster.wait_image_compile()
    gui = GUI("t", res=(4, 3), show_gui=False)
    img = np.linspace(-0.5, 1.5, 36, dtype=np.float32).reshape(4, 3, 3)
    img[0, 0] = [np.nan, np.inf, -np.inf]
    gui.set_image(img)
    want = (np.clip(np.nan_to_num(img), 0, 1) * np.float32(255)).astype(np.uint8)
    got = np.round(displayed(gui, tmp_path) * 255).astype(np.uint8)
    np.testing.assert_array_equal(got, want)


def _triangle_reference(want, a, b, c, colours):
    """Triangle by triangle, every pixel centre tested with the edge functions."""
    h, w = want.shape
    ys, xs = np.mgrid[0:h, 0:w]
    px, py = xs + 0.5, ys + 0.5
    for (ax, ay), (bx, by), (cx, cy), colour in zip(a, b, c, colours):
        e0 = (bx - ax) * (py - ay) - (by - ay) * (px - ax)
        e1 = (cx - bx) * (py - by) - (cy - by) * (px - bx)
        e2 = (ax - cx) * (py - cy) - (ay - cy) * (px - cx)
        inside = ((e0 >= 0) & (e1 >= 0) & (e2 >= 0)) | ((e0 <= 0) & (e1 <= 0) & (e2 <= 0))
        want[inside] = colour


def _random_triangles(rng, n, w, h):
    """Corners in pixels (y down), some off the canvas, some degenerate or on pixel centres."""
    a, b, c = (rng.uniform(-0.2, 1.2, (n, 2)) * (w, h) for _ in range(3))
    c[: n // 8] = a[: n // 8] + 0.5 * (b[: n // 8] - a[: n // 8])  # collinear corners
    b[n // 8: n // 4, 1] = a[n // 8: n // 4, 1]  # a horizontal edge
    grid = slice(n // 4, n // 2)  # corners on pixel centres and edges
    for p in (a, b, c):
        p[grid] = np.round(p[grid] * 2) / 2
    return a, b, c


@pytest.mark.parametrize("w, h, n", [(41, 33, 120), (64, 48, 400)])
def test_triangles_match_a_triangle_by_triangle_reference(w, h, n):
    """Overlapping triangles of either winding, degenerate ones, corners on pixel centres and
    off the canvas: the canvas equals testing every pixel centre triangle by triangle."""
    rng = np.random.default_rng(5)
    a, b, c = _random_triangles(rng, n, w, h)
    colours = np.array([RED, GREEN, BLUE, WHITE])[rng.integers(0, 4, n)]
    gui = GUI(res=(w, h))
    want = gui._buf.copy()
    to_unit = lambda p: np.stack([p[:, 0] / w, 1.0 - p[:, 1] / h], 1)
    gui.triangles(to_unit(a), to_unit(b), to_unit(c), color=colours)
    _triangle_reference(want, a, b, c, colours)
    np.testing.assert_array_equal(gui._buf, want)


def test_single_shape_calls_draw_in_call_order_as_one_at_a_time():
    """circle, line, triangle and rect calls are queued and drawn together when the canvas is
    used: interleaved and overlapping, the canvas equals blending each call in order (in float,
    as Taichi, truncated once), and clear() and set_image() drop what was queued before them."""
    w, h, n = 48, 40, 150
    rng = np.random.default_rng(9)
    gui = GUI(res=(w, h), background_color=BG)
    ref = _float_canvas(gui)
    to_unit = lambda p: (p[0] / w, 1.0 - p[1] / h)
    for k in range(n):
        colour = int(rng.choice([RED, GREEN, BLUE, WHITE]))
        p, q, s = (rng.uniform(-0.1, 1.1, 2) * (w, h) for _ in range(3))
        kind = k % 4
        if kind == 0:
            r = float(rng.choice([0.5, 1.5, 4.0]))
            gui.circle(to_unit(p), color=colour, radius=r)
            _over(ref, _disc_alpha((h, w), p[0], p[1], r), colour)
        elif kind == 1:
            r = float(rng.choice([0.2, 1.0, 2.5]))
            gui.line(np.array(to_unit(p)), list(to_unit(q)), radius=r, color=colour)
            _over(ref, _segment_alpha((h, w), p, q, r), colour)
        elif kind == 2:
            gui.triangle(to_unit(p), to_unit(q), to_unit(s), color=colour)
            inside = np.zeros((h, w), np.int64)
            _triangle_reference(inside, [p], [q], [s], [1])
            _over(ref, inside.astype(np.float64), colour)
        else:
            gui.rect(to_unit(p), to_unit(q), radius=1, color=colour)
            corners = [p, np.array([q[0], p[1]]), q, np.array([p[0], q[1]])]
            for i in range(4):
                _over(ref, _segment_alpha((h, w), corners[i], corners[(i + 1) % 4], 1.0), colour)
    _assert_truncates(gui, ref)
    gui.circle((0.5, 0.5), color=RED, radius=30)
    gui.clear()
    assert (gui._buf == gui._buf[0, 0]).all()
    gui.circle((0.5, 0.5), color=RED, radius=30)
    gui.set_image(np.zeros((w, h)))
    assert (gui._buf == 0).all()


def test_single_shape_calls_check_their_arguments_at_the_call():
    gui = GUI(res=32)
    with pytest.raises(ValueError):
        gui.circle((0.5, 0.5), color=np.array([RED, GREEN]))  # two colours for one circle
    with pytest.raises(ValueError):
        gui.triangle((0.1, 0.1), np.zeros((2, 2)), (0.5, 0.5))
    assert not gui._queued


def test_single_lines_drawn_together_match_one_by_one():
    # `gui.line` calls are queued and drawn by one vectorized `lines` before anything else reads
    # or draws on the canvas; overlapping segments of different colours keep their order
    rng = np.random.default_rng(0)
    segs = rng.random((300, 4))
    cols = rng.integers(0, 0xFFFFFF, 300)
    queued, direct = GUI("a", res=(200, 150)), GUI("b", res=(200, 150))
    ref = _float_canvas(queued)
    px = lambda p: np.array([p[0] * 200, (1 - p[1]) * 150])
    for k in range(300):
        queued.line(segs[k, :2], segs[k, 2:], radius=1 + k % 3, color=int(cols[k]))
        direct.lines(segs[k:k + 1, :2], segs[k:k + 1, 2:], radius=1 + k % 3, color=int(cols[k]))
        _over(ref, _segment_alpha((150, 200), px(segs[k, :2]), px(segs[k, 2:]), 1 + k % 3),
              int(cols[k]))
        if k == 150:
            queued.circle((0.5, 0.5), radius=20, color=0x123456)
            direct.circle((0.5, 0.5), radius=20, color=0x123456)
            _over(ref, _disc_alpha((150, 200), 100, 75, 20), 0x123456)
    _assert_truncates(queued, ref)  # drawn in one pass: truncated once
    # one call at a time, each truncated to bytes: at most a byte lost per overlapping call
    assert np.abs(ref - _float_canvas(direct)).max() < 4
    img = queued.get_image()
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 100  # the segments were drawn
    with pytest.raises(ValueError, match="3 color values for 1 items"):
        queued.line((0, 0), (1, 1), color=(255, 0, 0))


@pytest.mark.skipif(not subnormals.FLUSHING_MACHINE, reason="x86 CPUs flush")
def test_get_image_flushes_subnormals_as_taichis_copy_kernel():
    # Taichi 1.7.4 (x64) copies the image into its buffer in a kernel, which flushes subnormal
    # values to zero, keeping the sign (measured: 9e-45 from f64 or f32 reads 0.0, -2e-39 -0.0);
    # a phase field's f64 tail near 1e-44 gave 2,463 pixels of 1.4e-45 where Taichi has 0
    gui = GUI(res=(2, 2))
    a = np.full((2, 2), 9e-45)
    a[1, 1] = 0.5
    gui.set_image(a)
    assert gui.get_image()[0, 0].tolist() == [0.0] * 4 and gui.get_image()[1, 1].tolist() == [0.5] * 4
    gui.set_image(a.astype(np.float32))
    assert gui.get_image()[0, 0].tolist() == [0.0] * 4
    gui.set_image(np.full((2, 2, 3), -2e-39))
    back = gui.get_image()[0, 0]
    assert back.tolist() == [0.0] * 4 and np.signbit(back[:3]).all()


@pytest.mark.parametrize("flushes", [False, True])
def test_set_image_flushes_exactly_where_cpu_kernels_do(monkeypatch, flushes):
    # one definition of the flushing machine (fieldsim.ir.subnormals) for kernels and the GUI,
    # so the GUI cannot disagree with the kernels that Taichi's copy stands for
    monkeypatch.setattr(subnormals, "FLUSHING_MACHINE", flushes)
    gui = GUI(res=(1, 1))
    gui.set_image(np.full((1, 1), -9e-45, np.float32))
    back = gui.get_image()[0, 0, 0]
    assert (back == 0.0) == flushes and np.signbit(back)


def test_compiled_circles_and_lines_equal_the_numpy_path_byte_for_byte():
    """`circles`/`lines` draw through fieldsim._gui_raster's compiled loop; the numpy path
    (`_circle_pixels`/`_line_pixels` + `_paint`, still used by queues of mixed kinds) must give
    the same bytes for overlapping shapes with their own colours and radii."""
    from fieldsim import gui as G
    rng = np.random.default_rng(7)
    w, h, n = 96, 64, 3000
    gui = GUI(res=(w, h), background_color=0x203040)
    pos = rng.uniform(-0.05, 1.05, (n, 2))
    radius = rng.uniform(0.2, 6.0, n)
    colours = rng.integers(0, 1 << 24, n).astype(np.uint32)
    a, b = rng.uniform(-0.1, 1.1, (2, 400, 2))
    lradius = rng.uniform(0.2, 3.0, 400)
    gui.circles(pos, radius=radius, color=colours)
    gui.lines(a, b, radius=lradius, color=colours[:400])
    ref = np.full(w * h, 0x203040, np.uint32)
    cx, cy = pos[:, 0] * w, (1.0 - pos[:, 1]) * h
    ids, flat, alpha = G._circle_pixels(cx, cy, radius, (w, h), True)
    G._paint(ref, flat, colours[ids], alpha)
    ax, ay, bx, by = a[:, 0] * w, (1.0 - a[:, 1]) * h, b[:, 0] * w, (1.0 - b[:, 1]) * h
    for ids, flat, alpha in G._line_pixels(ax, ay, bx, by, lradius, (w, h), True):
        G._paint(ref, flat, colours[ids], alpha)
    assert np.array_equal(gui._buf.reshape(-1), ref)


@pytest.mark.parametrize("kind", ["line", "circle"])
def test_queued_shapes_of_one_kind_draw_through_the_compiled_loop_byte_for_byte(kind, monkeypatch):
    """A frame of single `gui.line` (or `gui.circle`) calls, as a FEM program draws its mesh
    edge by edge, goes to the compiled loop `lines`/`circles` use and gives the numpy
    pass's bytes; a queue of mixed kinds keeps the one numpy pass in call order."""
    from fieldsim import gui as G
    rng = np.random.default_rng(11)
    w, h, n = 80, 56, 600
    pts = rng.uniform(-0.05, 1.05, (n, 4))
    radius = rng.uniform(0.3, 5.0, n)
    colours = rng.integers(0, 1 << 24, n)
    fast, ref = GUI(res=(w, h), background_color=0x203040), GUI(res=(w, h), background_color=0x203040)
    for gui in (fast, ref):
        for (ax, ay, bx, by), r, c in zip(pts, radius, colours):
            if kind == "line":
                gui.line((ax, ay), (bx, by), radius=r, color=int(c))
            else:
                gui.circle((ax, ay), radius=r, color=int(c))
    calls = []
    draw = G._gui_raster.draw
    monkeypatch.setattr(G._gui_raster, "draw", lambda name, *a: calls.append(name) or draw(name, *a))
    queued, ref._queued = ref._queued, []
    ref._draw_queued_numpy(queued)
    assert np.array_equal(fast._buf, ref._buf) and calls == [kind + "s"]
    fast.line((0.1, 0.1), (0.9, 0.9), radius=2, color=RED)
    fast.circle((0.5, 0.5), radius=6, color=GREEN)
    assert fast._buf is not None  # draws the mixed queue
    assert calls == [kind + "s"]
