"""`fs.tools.imwrite/imread` (Taichi's (x, y) bottom-left layout, round trips, float clipping),
`fs.rgb_to_hex`/`fs.hex_to_rgb`, and errors for bad images."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_png_round_trip_keeps_layout(tmp_path, channels):
    rng = np.random.default_rng(channels)
    img = rng.integers(0, 256, size=(7, 5, channels), dtype=np.uint8)
    fs.tools.imwrite(img, tmp_path / "a.png")
    back = fs.tools.imread(tmp_path / "a.png")
    assert back.shape == (7, 5, channels) and np.array_equal(back, img)


def test_origin_is_bottom_left(tmp_path):
    from PIL import Image
    img = np.zeros((4, 3, 3), dtype=np.uint8)
    img[0, 0] = (255, 0, 0)  # x=0, y=0: the bottom-left pixel
    fs.tools.imwrite(img, tmp_path / "b.png")
    rows = np.asarray(Image.open(tmp_path / "b.png"))
    assert rows.shape == (3, 4, 3)
    assert tuple(rows[-1, 0]) == (255, 0, 0) and rows[0].sum() == 0


def test_float_field_is_clipped_and_truncated_as_taichi_writes_it(tmp_path):
    x = fs.field(fs.f32, shape=(3, 2))
    x.from_numpy(np.array([[-1.0, 0.0], [0.5, 1.0], [2.0, 0.25]], dtype=np.float32))
    fs.tools.imwrite(x, tmp_path / "c.png")
    back = fs.tools.imread(tmp_path / "c.png", channels=1)[:, :, 0]
    # Taichi stores floor(255 * clip(v, 0, 1)): 127.5 -> 127, 63.75 -> 63
    assert back.tolist() == [[0, 0], [127, 255], [255, 63]]


@pytest.mark.parametrize("dtype, values, expected", [
    (np.uint16, [0, 256, 32768, 255 * 255], [0, 1, 128, 255]),  # v // (65535 // 256 = 255)
    (np.uint32, [0, 2**24, 2**31, 255 * (2**24 - 1)], [0, 1, 128, 255]),  # v // (2**24 - 1)
])
def test_wide_unsigned_images_are_scaled_by_max_over_256(tmp_path, dtype, values, expected):
    fs.tools.imwrite(np.array(values, dtype).reshape(4, 1), tmp_path / "u.png")
    assert fs.tools.imread(tmp_path / "u.png")[:, 0, 0].tolist() == expected


def test_bmp_holds_rgb_grey_repeated_and_alpha_over_magenta(tmp_path):
    from PIL import Image
    grey = np.array([[7], [200]], np.uint8)  # (x, y): two columns, one row
    fs.tools.imwrite(grey, tmp_path / "g.bmp")
    rows = np.asarray(Image.open(tmp_path / "g.bmp"))
    assert rows.shape == (1, 2, 3) and rows[0].tolist() == [[7] * 3, [200] * 3]
    rgba = np.array([[[10, 200, 30, 128]], [[10, 200, 30, 255]], [[10, 200, 30, 0]]], np.uint8)
    fs.tools.imwrite(rgba, tmp_path / "a.bmp")
    rows = np.asarray(Image.open(tmp_path / "a.bmp"))
    # c' = bg + trunc((c - bg) * a / 255) with bg = (255, 0, 255): 255 - 122, 100, 255 - 112
    assert rows[0].tolist() == [[133, 100, 143], [10, 200, 30], [255, 0, 255]]
    fs.tools.imwrite(rgba, tmp_path / "a.jpg")  # alpha dropped (Pillow refuses RGBA JPEGs)
    assert Image.open(tmp_path / "a.jpg").mode == "RGB"


def test_imresize_steps_by_the_float_ratio_as_taichi():
    img = np.arange(299 * 2).reshape(299, 2)
    out = fs.tools.imresize(img, 276, 2)
    # column x reads floor(x * (299 / 276)) in floating point: 108 * 1.0833... lands just under 117
    expected = np.clip(np.arange(276) * (299 / 276), 0, 298).astype(np.int32)
    assert out.shape == (276, 2) and (out[:, 0] // 2).tolist() == expected.tolist()
    assert expected[108] == 116
    assert fs.tools.imresize(img, 299, 2) is img


def test_top_values_wrap_as_taichi_writes_them(tmp_path):
    # measured on Taichi 1.7.4: float64 images truncate too; u16 65535 // 255 = 257 wraps to 1
    fs.tools.imwrite(np.array([[0.999, 0.0039], [0.5, 3 / 255]]), tmp_path / "c64.png")
    assert fs.tools.imread(tmp_path / "c64.png", channels=1)[:, :, 0].tolist() == [[254, 0], [127, 3]]
    fs.tools.imwrite(np.array([[0, 255, 256], [30000, 65535, 65280]], np.uint16), tmp_path / "u.png")
    assert fs.tools.imread(tmp_path / "u.png", channels=1)[:, :, 0].tolist() == [[0, 1, 1], [117, 1, 0]]


def test_bad_images_are_errors(tmp_path):
    with pytest.raises(ValueError, match="shape"):
        fs.tools.imwrite(np.zeros((2, 2, 2), np.uint8), tmp_path / "d.png")
    with pytest.raises(ValueError, match="dtype"):
        fs.tools.imwrite(np.zeros((2, 2), np.int32), tmp_path / "d.png")


def test_rgb_hex_conversions():
    assert fs.rgb_to_hex((1.0, 0.5, 0.0)) == 0xFF7F00
    assert fs.rgb_to_hex((2.0, -1.0, 1.0)) == 0xFF00FF  # clamped
    arr = fs.rgb_to_hex(np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))
    assert arr.tolist() == [0xFF0000, 0x0000FF]
    assert fs.hex_to_rgb(0xFF0080) == pytest.approx((1.0, 0.0, 128 / 255))
    k = np.array([0.0, 0.5, 1.2])  # Taichi's per-channel arrays: one colour per item
    per_item = fs.rgb_to_hex([k, 1 - k, np.zeros(3)])
    assert per_item.tolist() == [0x00FF00, 0x7F7F00, 0xFF0000]


def test_video_manager_writes_frames_and_a_gif(tmp_path):
    from PIL import Image
    video = fs.tools.VideoManager(tmp_path / "out", framerate=10)
    for k in range(3):
        img = np.zeros((8, 6, 3), dtype=np.float32)
        img[k, 0] = 1.0
        video.write_frame(img)
    assert sorted(p.name for p in (tmp_path / "out" / "frames").iterdir()) == \
        ["0000000.png", "0000001.png", "0000002.png"]
    paths = video.make_video(mp4=False, gif=True)
    assert paths == [str(tmp_path / "out" / "video.gif")]
    with Image.open(paths[0]) as gif:
        assert gif.n_frames == 3 and gif.size == (8, 6)
    with pytest.raises(ValueError, match="the video is 8x6"):
        video.write_frame(np.zeros((4, 4), np.uint8))
