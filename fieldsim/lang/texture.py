"""`ti.Texture`, `ti.Format` and the kernel annotations `ti.types.texture` / `rw_texture`.

Takes a `Format` member and a 1-3 dimensional shape. A texture is a hidden `Vector.field` of 4
f32 channels per texel, initialised to (0, 0, 0, 1) (the values a read gives for the channels a
format lacks). A kernel parameter annotated `texture(n)` or `rw_texture(n, fmt, lod)` is bound at
compile time, like a template, to a view of the texture whose methods are `@func`s over ordinary
field loads and stores, so no IR op is specific to textures and every backend runs them:

- `sample_lod(uv, lod)`: uv in [0, 1] spans the texture, texel i's centre at (i + 0.5) / size;
  bilinear (2-D) / trilinear (3-D) filtering with repeat addressing, as Taichi's GPU samplers.
  The weights are exact (GPUs round them to 8 fractional bits).
- `fetch(index, lod)`, `load(index)`: the texel, or (0, 0, 0, 0) outside the texture.
- `store(index, value)`: quantised as the format stores it (unorm formats clamp to [0, 1] and
  round to 1/255 or 1/65535, f16 rounds to half precision, integer formats clamp and truncate);
  a store outside the texture is dropped.

A texture has one mip level: `lod` is accepted and level 0 is read. 32-bit integer formats keep
f32 precision (exact up to 2**24). Guarantees: a value of the wrong kind, dimension count or
format for an annotation raises FieldsimTypeError naming the kernel, parameter and line.
"""
from __future__ import annotations

import enum

import numpy as np

from fieldsim.errors import FieldsimRuntimeError, FieldsimTypeError
from fieldsim.lang import ops
from fieldsim.lang import types as T
from fieldsim.lang.kernel import Template, func
from fieldsim.lang.matrix import Vector
from fieldsim.lang.naming import user_loc
from fieldsim.lang.ops import cast, floor, static

Format = enum.Enum("Format", [
    "unknown", "r8", "rg8", "rgba8", "rgba8srgb", "bgra8", "bgra8srgb", "r8u", "rg8u", "rgba8u",
    "r8i", "rg8i", "rgba8i", "r16", "rg16", "rgb16", "rgba16", "r16u", "rg16u", "rgb16u",
    "rgba16u", "r16i", "rg16i", "rgb16i", "rgba16i", "r16f", "rg16f", "rgb16f", "rgba16f", "r32u",
    "rg32u", "rgb32u", "rgba32u", "r32i", "rg32i", "rgb32i", "rgba32i", "r32f", "rg32f", "rgb32f",
    "rgba32f", "depth16", "depth24stencil8", "depth32f"], module=__name__)
Format.__doc__ = """`ti.Format`: a texture's texel format (channels and their storage).

>>> fs.Format.rgba8.name
'rgba8'
"""

_DEPTH = {"depth16": (1, "unorm", 16), "depth24stencil8": (1, "unorm", 24),
          "depth32f": (1, "float", 32)}


class _Spec:
    """How a format stores a texel: channel count and quantisation (kind, bits)."""

    def __init__(self, fmt: Format):
        name = fmt.name
        if name in _DEPTH:
            self.channels, self.kind, bits = _DEPTH[name]
        else:
            letters = name[:len(name) - len(name.lstrip("rgba"))]
            rest = name[len(letters):]
            digits = rest.rstrip("uifsrgb")
            bits, suffix = int(digits), rest[len(digits):]
            self.channels = len(letters)
            self.kind = {"": "unorm", "srgb": "unorm", "u": "uint", "i": "sint", "f": "float"}[suffix]
        self.lo, self.hi = {"unorm": (0.0, 1.0), "uint": (0.0, 2.0 ** bits - 1),
                            "sint": (-2.0 ** (bits - 1), 2.0 ** (bits - 1) - 1),
                            "float": (-np.inf, np.inf)}[self.kind]
        self.scale = 2.0 ** bits - 1 if self.kind == "unorm" else 1.0
        self.half = self.kind == "float" and bits == 16

    def quantise(self, a: np.ndarray) -> np.ndarray:
        """numpy version of the store's quantisation (for `from_field`/`from_ndarray`)."""
        a = np.clip(np.asarray(a, np.float64), self.lo, self.hi)
        if self.kind == "unorm":
            a = np.round(a * self.scale) / self.scale
        elif self.kind != "float":
            a = np.trunc(a)
        elif self.half:
            a = a.astype(np.float16)
        return a.astype(np.float32)


def _check_format(fmt, what: str):
    if not isinstance(fmt, Format) or fmt is Format.unknown:
        raise FieldsimTypeError(f"{what}: fmt must be a ti.Format member, got {fmt!r}", user_loc())
    return _Spec(fmt)


class Texture:
    """`ti.Texture(fmt, arr_shape)`: a 1-3 dimensional texture of 4-channel f32 texels.

    >>> t = fs.Texture(fs.Format.r32f, (4, 4))
    >>> (t.num_dims, t.shape)
    (2, (4, 4))
    """

    def __init__(self, fmt, arr_shape):
        self._spec = _check_format(fmt, "ti.Texture")
        shape = tuple(arr_shape) if isinstance(arr_shape, (tuple, list)) else (arr_shape,)
        if not 1 <= len(shape) <= 3 or not all(isinstance(n, (int, np.integer)) and n > 0
                                               for n in shape):
            raise FieldsimTypeError("ti.Texture: arr_shape must be 1 to 3 positive ints, got "
                                    f"{arr_shape!r}", user_loc())
        self.fmt, self.num_dims, self.shape = fmt, len(shape), tuple(int(n) for n in shape)
        self._data = Vector.field(4, T.f32, shape=self.shape)
        init = np.zeros(self.shape + (4,), np.float32)
        init[..., 3] = 1.0
        self._data.from_numpy(init)
        self._sampler = _Sampler(self)
        self._rw: dict = {}

    def __repr__(self):
        return f"ti.Texture({self.fmt.name}, {self.shape})"

    def _load_array(self, arr, what: str):
        arr = np.asarray(arr)
        if arr.shape[:self.num_dims] != self.shape or arr.ndim > self.num_dims + 1:
            raise FieldsimRuntimeError(f"{self!r}.{what}: source of shape {arr.shape} does not "
                                       f"fit the texture's shape {self.shape}", user_loc())
        arr = arr.reshape(self.shape + (-1,))
        n = min(arr.shape[-1], self._spec.channels)
        data = self._data.to_numpy()
        data[..., :n] = self._spec.quantise(arr[..., :n])
        self._data.from_numpy(data)

    def _to_numpy(self, source, what: str, kind: str):
        if not hasattr(source, "to_numpy"):
            raise FieldsimTypeError(f"{self!r}.{what} takes a ti.{kind}; got "
                                    f"{type(source).__name__}", user_loc())
        return source.to_numpy()

    def from_field(self, field):
        """Loads a scalar or vector field of the texture's shape (its first channels)."""
        self._load_array(self._to_numpy(field, "from_field", "field"), "from_field")

    def from_ndarray(self, ndarray):
        """Loads a scalar or vector ndarray of the texture's shape (its first channels)."""
        self._load_array(self._to_numpy(ndarray, "from_ndarray", "ndarray"), "from_ndarray")

    def from_image(self, image):
        """Loads a PIL image of size `shape` into a 2-D texture: RGB / 255, alpha 0 (as Taichi)."""
        from PIL import Image
        if not isinstance(image, Image.Image) or self.num_dims != 2:
            raise FieldsimRuntimeError(f"{self!r}.from_image takes a PIL image into a 2-D "
                                       f"texture; got {type(image).__name__}", user_loc())
        image = image if image.mode == "RGB" else image.convert("RGB")
        if image.size != self.shape:
            raise FieldsimRuntimeError(f"{self!r}.from_image: image size {image.size} differs "
                                       f"from the texture's shape {self.shape}", user_loc())
        rgb = np.asarray(image.rotate(90, expand=True), np.float64) / 255.0
        self._load_array(np.concatenate([rgb, np.zeros(rgb.shape[:2] + (1,))], -1), "from_image")

    def to_image(self):
        """The 2-D texture's RGB channels as a PIL image (round(c * 255)), size `shape`."""
        from PIL import Image
        if self.num_dims != 2:
            raise FieldsimRuntimeError(f"{self!r}.to_image needs a 2-D texture", user_loc())
        rgb = np.clip(np.round(self._data.to_numpy()[..., :3] * 255), 0, 255).astype(np.uint8)
        return Image.fromarray(rgb).rotate(270, expand=True)


def texels(tex: Texture) -> np.ndarray:
    """The texture's texels as numpy, shape `tex.shape + (4,)` (for GGUI's `set_image`)."""
    return tex._data.to_numpy()


class _View:
    """A texture as a kernel sees it: its shape (a Python tuple, static in kernels) and texels."""

    def __init__(self, tex: Texture):
        self.tex = tex
        self.dims = tex.num_dims
        self.shape = tex.shape

    def __repr__(self):
        what = "rw_texture" if isinstance(self, _RWAccessor) else "texture"
        return f"(a {what} parameter, given {self.tex!r})"

    @func
    def inside(self, index):
        result = 1
        for d in static(range(self.dims)):
            if index[d] < 0 or index[d] >= self.shape[d]:
                result = 0
        return result

    @func
    def texel(self, index):
        v = Vector([0.0, 0.0, 0.0, 0.0])
        if self.inside(index):
            v = self.tex._data[index]
        return v


class _Sampler(_View):
    """What a `texture(n)` parameter is in a kernel: `sample_lod` and `fetch`."""

    @func
    def fetch(self, index, lod):
        return self.texel(index)

    @func
    def sample_lod(self, uv, lod):
        base = cast(floor(uv * Vector(list(self.shape)) - 0.5), T.i32)
        frac = uv * Vector(list(self.shape)) - 0.5 - base
        out = Vector([0.0, 0.0, 0.0, 0.0])
        for corner in static(range(2 ** self.dims)):
            idx = base
            w = 1.0
            for d in static(range(self.dims)):
                if static((corner >> d) & 1):
                    idx[d] = (base[d] + 1) % self.shape[d]
                    w *= frac[d]
                else:
                    idx[d] = base[d] % self.shape[d]
                    w *= 1.0 - frac[d]
            out += w * self.tex._data[idx]
        return cast(out, T.f32)  # Taichi's texture reads are vec4 of f32 whatever default_fp


class _RWAccessor(_View):
    """What an `rw_texture(n, fmt, lod)` parameter is in a kernel: `load` and `store`."""

    def __init__(self, tex: Texture):
        super().__init__(tex)
        spec = tex._spec
        self.channels, self.lo, self.hi = spec.channels, float(spec.lo), float(spec.hi)
        self.unorm, self.scale = spec.kind == "unorm", spec.scale
        self.integral, self.half = spec.kind in ("uint", "sint"), spec.half
        self.clamps = spec.kind != "float"

    @func
    def load(self, index):
        return self.texel(index)

    @func
    def store(self, index, value):
        if self.inside(index):
            for c in static(range(self.channels)):
                self.tex._data[index][c] = self.quantised(value[c])

    @func
    def quantised(self, x):
        y = cast(x, T.f32)
        if static(self.clamps):
            y = ops.min(ops.max(y, self.lo), self.hi)
        if static(self.unorm):
            y = ops.round(y * self.scale) / self.scale
        if static(self.integral):
            y = cast(cast(y, T.i64), T.f32)
        if static(self.half):
            y = cast(cast(y, T.f16), T.f32)
        return y


class TextureType(Template):
    """`ti.types.texture(num_dimensions)`: a kernel parameter taking a `ti.Texture` to sample."""

    rw = False

    def __init__(self, num_dimensions):
        self.num_dimensions = num_dimensions

    def __repr__(self):
        return f"ti.types.texture(num_dimensions={self.num_dimensions})"

    def bind_value(self, v, kname: str, pname: str, loc):
        """The view of texture `v` the kernel sees, after checking `v` fits this annotation."""
        problem = None
        if not isinstance(v, Texture):
            problem = f"got {type(v).__name__}"
        elif v.num_dims != self.num_dimensions:
            problem = f"got a {v.num_dims}-D texture"
        elif self.rw and v.fmt is not self.fmt:
            problem = f"got a texture of format {v.fmt.name}"
        if problem:
            raise FieldsimTypeError(f"kernel {kname!r}: argument {pname!r} expects {self!r}; "
                                    f"{problem}", loc)
        if not self.rw:
            return v._sampler
        return v._rw.setdefault(self.fmt, _RWAccessor(v))


class RWTextureType(TextureType):
    """`ti.types.rw_texture(num_dimensions, fmt, lod)`: a parameter taking a texture to load
    from and store to (level `lod`; fieldsim textures have level 0 only)."""

    rw = True

    def __init__(self, num_dimensions, fmt=None, lod=0):
        super().__init__(num_dimensions)
        if fmt is None:
            raise FieldsimTypeError("fmt is required for rw_texture type", user_loc())
        _check_format(fmt, "ti.types.rw_texture")
        if lod != 0:
            raise FieldsimRuntimeError(f"ti.types.rw_texture: lod={lod}, but fieldsim textures "
                                       "have one level (lod=0)", user_loc())
        self.fmt, self.lod = fmt, lod

    def __repr__(self):
        return (f"ti.types.rw_texture(num_dimensions={self.num_dimensions}, "
                f"fmt={self.fmt.name}, lod={self.lod})")


texture = TextureType
rw_texture = RWTextureType
