"""fieldsim.ui's near-plane clipping: the part of a triangle or line in front of the camera is
drawn (GGUI clips), checked against areas and pixel rows computed independently."""
import math

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.ui.near_clip import clip_segments, clip_triangles


@pytest.fixture(autouse=True)
def _cpu():
    fs.init(arch=fs.cpu)


def _signed_areas(points, tri):
    a, b, c = (points[tri[:, k]] for k in range(3))
    return 0.5 * ((b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0]))


@pytest.mark.parametrize("plane, area", [(1.0, 0.5), (0.5, 1.125), (-1.0, 2.0), (3.0, 0.0)])
@pytest.mark.parametrize("roll", [0, 1, 2])
def test_clipped_triangle_keeps_the_front_area_and_winding(plane, area, roll):
    # triangle (0,0) (2,0) (0,2); depth is x, so the front part is x >= plane
    points = np.roll(np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]]), roll, axis=0)
    tri = np.array([[0, 1, 2]])
    data, out = clip_triangles(points, points[:, 0], tri, plane)
    areas = _signed_areas(data, out)
    assert areas.sum() == pytest.approx(area)
    assert (areas >= -1e-12).all()  # counter-clockwise, as the original
    assert (data[out.reshape(-1), 0] >= plane - 1e-12).all()


def test_clipped_segment_ends_on_the_plane():
    data = np.array([[-1.0, 5.0], [3.0, 1.0], [-2.0, 0.0], [-3.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    seg = np.array([[0, 1], [2, 3], [4, 5], [1, 0]])
    out_data, out = clip_segments(data, data[:, 0], seg, 0.0)
    ends = {tuple(sorted(map(tuple, out_data[s]))) for s in out}
    assert ends == {((0.0, 4.0), (3.0, 1.0)), ((1.0, 1.0), (2.0, 2.0))}
    assert len(out) == 3  # both directions of the crossing segment kept, the behind one dropped


def _window_with_camera(res=(64, 64)):
    window = fs.ui.Window("clip", res)
    scene = fs.ui.Scene()
    camera = fs.ui.Camera()
    camera.position(0.0, 1.0, 0.0)
    camera.lookat(0.0, 1.0, -1.0)
    camera.fov(90)
    scene.set_camera(camera)
    scene.ambient_light((1.0, 1.0, 1.0))
    return window, scene


def test_floor_reaching_behind_the_camera_covers_the_lower_half():
    window, scene = _window_with_camera()
    floor = np.array([[-100.0, 0.0, 100.0], [100.0, 0.0, 100.0], [100.0, 0.0, -100.0],
                      [-100.0, 0.0, -100.0]], dtype=np.float32)
    scene.mesh(floor, indices=np.array([0, 1, 2, 0, 2, 3], dtype=np.int32), color=(1.0, 1.0, 1.0),
               two_sided=True)
    window.get_canvas().scene(scene)
    img = window.get_image_buffer_as_numpy()[..., 0].T[::-1]  # rows from the top
    # a floor 1 below the eye, 100 ahead at most, seen with a 90 degree fov: rows below the
    # horizon down to the bottom are floor; the horizon row is 32 - 32 / 100 from the top
    horizon = 32 - 32 / 100
    assert img[math.ceil(horizon) + 1:].min() == 1.0
    assert img[:31].max() == 0.0


def test_line_from_the_origin_to_behind_the_camera_reaches_the_edge():
    window, scene = _window_with_camera()
    # from 2 ahead on the ground to 10 behind the eye: seen from its front end down to the
    # bottom edge of the window, along the centre column
    scene.lines(np.array([[0.0, 0.0, -2.0], [0.0, 0.0, 10.0]], dtype=np.float32), width=3.0,
                color=(0.0, 1.0, 0.0))
    window.get_canvas().scene(scene)
    img = window.get_image_buffer_as_numpy()[..., 1].T[::-1]
    column = img[:, 31:33].max(axis=1)
    top = 32 + 32 * 1 / 2  # the front end: 1 below the eye at depth 2
    assert column[math.ceil(top) + 1:].min() == 1.0
    assert column[:math.floor(top) - 2].max() == 0.0
