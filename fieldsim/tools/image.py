"""`fs.tools.image` (Taichi's `ti.tools.image`): `imwrite`, `imread`, `imresize`, `imshow`,
and `fs.rgb_to_hex`/`fs.hex_to_rgb`, with Taichi's conventions.

Takes images as numpy arrays or fields of shape (width, height) or (width, height, channels)
with 1, 3 or 4 channels; `img[x, y]` is the pixel at column x, row y counted from the BOTTOM (as
in Taichi and `fs.GUI`). Floats are in [0, 1] and are clipped and rounded to 8 bits; integer
images must be uint8 (other unsigned ints are cast, as in Taichi). Guarantees:
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
        # Taichi 1.7.4's scaling, byte wrap included (u16 65535 // 255 = 257 writes 1)
        img = (img // (np.iinfo(img.dtype).max // 256)).astype(np.uint8)
    elif img.dtype.kind == "f":
        img = (np.clip(img, 0, 1) * 255.0).astype(np.uint8)  # truncated, as Taichi's: 0.5 -> 127
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
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[rows.shape[2]]
    parent = os.path.dirname(os.fspath(filename))
    if parent:
        os.makedirs(parent, exist_ok=True)
    Image.fromarray(rows[:, :, 0] if mode == "L" else rows, mode).save(os.fspath(filename))


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
    xs = (np.arange(w) * img.shape[0] // w).astype(int)
    ys = (np.arange(h) * img.shape[1] // h).astype(int)
    return img[xs][:, ys]


def imshow(img, title="imshow"):
    """Show an image in a window (matplotlib); headless backends just draw it."""
    import matplotlib.pyplot as plt
    rows = np.transpose(to_uint8(img), (1, 0, 2))[::-1]
    plt.figure(title)
    plt.imshow(rows[:, :, 0] if rows.shape[2] == 1 else rows, cmap="gray" if rows.shape[2] == 1 else None)
    plt.show()
