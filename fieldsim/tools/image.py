"""`fs.tools.image` (Taichi's `ti.tools.image`): `imwrite`, `imread`, `imresize`, `imshow`,
and `fs.rgb_to_hex`/`fs.hex_to_rgb`, with Taichi's conventions.

Takes images as numpy arrays or fields of shape (width, height) or (width, height, channels)
with 1, 3 or 4 channels; `img[x, y]` is the pixel at column x, row y counted from the BOTTOM (as
in Taichi and `fs.GUI`). Floats are in [0, 1] and are clipped and truncated to 8 bits (0.5 ->
127), as in Taichi; integer images must be uint8 (other unsigned ints are divided by
`max // 256`, as in Taichi). BMP and JPEG files hold RGB, as Taichi writes them: grey repeated
in each channel, RGBA blended over magenta in a BMP, its alpha dropped in a JPEG. Guarantees:
`imread(imwrite(img))` returns the same uint8 array, in the same (x, y, c) layout. Files are
written with Pillow (a matplotlib dependency); the format follows the file extension (PNG, JPEG,
BMP, ...). Bad shapes or dtypes raise ValueError naming the problem.
"""
from __future__ import annotations

import os

import numpy as np

__all__ = ["hex_to_rgb", "imread", "imresize", "imshow", "imwrite", "rgb_to_hex"]


def rgb_to_hex(c):
    """`(r, g, b)` floats in [0, 1] as `0xRRGGBB`. As in Taichi, r, g and b may each be an array
    (one colour per item); an (N, 3) array is read along its last axis."""
    if isinstance(c, np.ndarray) and c.ndim > 1:
        q = np.clip((c * 255).astype(np.int64), 0, 255)
        return q[..., 0] * 65536 + q[..., 1] * 256 + q[..., 2]

    def convert(x):
        q = np.clip((np.asarray(x) * 255).astype(np.int64), 0, 255)
        return int(q) if q.ndim == 0 else q

    return 65536 * convert(c[0]) + 256 * convert(c[1]) + convert(c[2])


def hex_to_rgb(color):
    """`0xRRGGBB` as `(r, g, b)` floats in [0, 1]."""
    r, g, b = (color >> 16) & 0xFF, (color >> 8) & 0xFF, color & 0xFF
    return r / 255, g / 255, b / 255


def to_uint8(img) -> np.ndarray:
    """`img` (array or field) as a uint8 (x, y, c) array with 1, 3 or 4 channels."""
    if not isinstance(img, np.ndarray):
        if not hasattr(img, "to_numpy"):
            raise ValueError(f"imwrite: expected a numpy array or a field, got {type(img).__name__}")
        img = img.to_numpy()
    if img.dtype in (np.uint16, np.uint32, np.uint64):
        # Taichi's scaling, its wrap-around at the very top included (u16 65535 -> 1)
        img = (img // (np.iinfo(img.dtype).max // 256)).astype(np.uint8)
    elif img.dtype.kind == "f":
        # truncated, not rounded: Taichi's files hold 127 for 0.5
        img = (np.clip(img, 0, 1) * 255.0).astype(np.uint8)
    elif img.dtype != np.uint8:
        raise ValueError(f"imwrite: image dtype {img.dtype} is not supported; use uint8 or floats "
                         "in [0, 1]")
    if img.ndim == 2:
        img = img[:, :, None]
    if img.ndim != 3 or img.shape[2] not in (1, 3, 4):
        raise ValueError(f"imwrite: an image has shape (width, height) or (width, height, 1|3|4), "
                         f"got {img.shape}")
    return img


def imwrite(img, filename):
    """Write `img` ((x, y[, c]), origin bottom-left) to `filename`."""
    from PIL import Image
    img = to_uint8(img)
    rows = np.ascontiguousarray(np.transpose(img, (1, 0, 2))[::-1])  # (height, width, c), top row first
    rows = _as_taichi_writes(rows, os.path.splitext(os.fspath(filename))[1].lower())
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[rows.shape[2]]
    parent = os.path.dirname(os.fspath(filename))
    if parent:
        os.makedirs(parent, exist_ok=True)
    Image.fromarray(rows[:, :, 0] if mode == "L" else rows, mode).save(os.fspath(filename))


def _as_taichi_writes(rows, ext):
    """(height, width, c) rows as Taichi's writer (stb_image_write) stores them for `ext`: BMP
    and JPEG are always RGB."""
    if ext not in (".bmp", ".jpg", ".jpeg") or rows.shape[2] == 3:
        return rows
    if rows.shape[2] == 1:
        return np.repeat(rows, 3, axis=2)
    if ext != ".bmp":
        return np.ascontiguousarray(rows[:, :, :3])
    # stb blends RGBA over (255, 0, 255) in integers, its division truncating toward zero
    bg = np.array([255, 0, 255], np.int64)
    q = (rows[:, :, :3].astype(np.int64) - bg) * rows[:, :, 3:4]
    return (bg + np.sign(q) * (np.abs(q) // 255)).astype(np.uint8)


def imread(filename, channels=0) -> np.ndarray:
    """Read an image as uint8 (width, height, channels), origin bottom-left; `channels` forces
    1 (grey), 3 (RGB) or 4 (RGBA), 0 keeps the file's."""
    from PIL import Image
    with Image.open(os.fspath(filename)) as im:
        if channels:
            if channels not in (1, 3, 4):
                raise ValueError(f"imread: channels must be 0, 1, 3 or 4, got {channels}")
            im = im.convert({1: "L", 3: "RGB", 4: "RGBA"}[channels])
        elif im.mode not in ("L", "RGB", "RGBA"):
            im = im.convert("RGBA" if "A" in im.mode else "RGB")
        rows = np.asarray(im, dtype=np.uint8)
    if rows.ndim == 2:
        rows = rows[:, :, None]
    return np.ascontiguousarray(np.transpose(rows[::-1], (1, 0, 2)))


def imresize(img, w, h=None):
    """Nearest-neighbour resize of an (x, y[, c]) array to (w, h) (h defaults to w)."""
    img = img.to_numpy() if hasattr(img, "to_numpy") else np.asarray(img)
    h = w if h is None else h
    if (w, h) == img.shape[:2]:
        return img
    # Taichi's float steps, truncated: at some sizes they pick the pixel before the one exact
    # integer division would (299 -> 276: column 108 reads 116, not 117)
    xs = np.clip(np.arange(w) * (img.shape[0] / w), 0, img.shape[0] - 1).astype(np.int32)
    ys = np.clip(np.arange(h) * (img.shape[1] / h), 0, img.shape[1] - 1).astype(np.int32)
    return img[xs][:, ys]


def imshow(img, title="imshow"):
    """Show an image in a window (matplotlib); headless backends just draw it."""
    import matplotlib.pyplot as plt
    rows = np.transpose(to_uint8(img), (1, 0, 2))[::-1]
    plt.figure(title)
    plt.imshow(rows[:, :, 0] if rows.shape[2] == 1 else rows, cmap="gray" if rows.shape[2] == 1 else None)
    plt.show()
