"""Jacobians of a function of kernel launches: `fs.ad.jacobian`, `fs.ad.jacobian_fd`, `plot_jacobian`.

Contract of `jacobian(fn, inputs, outputs, mode="auto") -> np.ndarray`:

* `fn()` runs kernel launches that compute the `outputs` fields from the `inputs` fields; it must
  be a deterministic function of the field data at the call (each run starts from a copy of
  that state with the launch counter rewound, so `fs.random` repeats).
* The result has shape (sum of output sizes, sum of input sizes), float64; rows and columns
  follow the order given, each field flattened row-major over its storage (`to_numpy()`
  order, vector/matrix components last). J[r, c] = d output_r / d input_c at the call's state.
* mode="reverse": `fn` runs once under `fs.ad.Tape()`; then one `tape.backward(grads={out:
  one_hot})` per row, with `tape.zero()` between rows. Inputs need `needs_grad`.
  mode="forward": one run of `fn` under `fs.ad.FwdMode(loss=outputs[0], param=input,
  seed=one_hot)` per column; every output's `.dual` is read (duals are made on demand).
  mode="auto": forward when there are fewer input elements than output elements, else reverse.
* On return every data field holds what it held at the call; gradients (reverse) or duals
  (forward) are left zeroed / holding the last column; the launch counter is rewound.

`jacobian_fd(fn, inputs, outputs, eps=None)`: central differences, same layout; step
`eps * max(1, |x|)` with eps 1e-3 for f32 inputs and 1e-6 for f64, the rounded step is used.
`plot_jacobian(J, path, title=None, inputs=None, outputs=None)`: a heat map PNG (matplotlib,
Agg), with lines between fields when the fields are given; returns the path.
"""
from __future__ import annotations

import numpy as np

from fieldsim.ad.check import _progress
from fieldsim.ad.checkpoint import Rewind
from fieldsim.ad.fwd_mode import FwdMode
from fieldsim.ad.tape import Tape
from fieldsim.errors import FieldsimRuntimeError
from fieldsim.lang.naming import user_loc

__all__ = ["jacobian", "jacobian_fd", "plot_jacobian"]


def jacobian(fn, inputs, outputs, mode="auto") -> np.ndarray:
    inputs, outputs = _fields(inputs, "inputs"), _fields(outputs, "outputs")
    n_in, n_out = _size(inputs), _size(outputs)
    if mode == "auto":
        mode = "forward" if n_in < n_out or any(f.adjoint is None for f in inputs) else "reverse"
    if mode not in ("forward", "reverse"):
        raise ValueError(f"jacobian: mode must be 'auto', 'forward' or 'reverse', got {mode!r}")
    with Rewind(what="fs.ad.jacobian") as start:
        if mode == "reverse":
            return _reverse(fn, inputs, outputs)
        return _forward(fn, inputs, outputs, start)


def _reverse(fn, inputs, outputs) -> np.ndarray:
    for f in inputs:
        if f.adjoint is None:
            raise ValueError(f"jacobian(mode='reverse'): input {f.ir_name!r} has no gradient: "
                             "declare it with needs_grad=True, or use mode='forward'")
    with Tape() as tape:
        fn()
    rows = []
    for out in outputs:
        if out.adjoint is None:
            raise ValueError(f"jacobian(mode='reverse'): output {out.ir_name!r} has no gradient: "
                             "declare it with needs_grad=True, or use mode='forward'")
        for r in range(_size([out])):
            tape.zero()
            tape.backward(grads={out: _one_hot(out, r)})
            rows.append(_concat(f.adjoint for f in inputs))
    tape.zero()
    return np.array(rows).reshape(_size(outputs), _size(inputs))


def _forward(fn, inputs, outputs, start) -> np.ndarray:
    for o in outputs:
        o._attach("dual")  # as FwdMode does for its loss; a kernel that never writes o leaves 0
    cols = []
    for f in inputs:
        for c in range(_size([f])):
            start.reset()
            with FwdMode(loss=outputs[0], param=f, seed=_one_hot(f, c)):
                fn()
            cols.append(_concat(o.tangent for o in outputs))
    return np.array(cols).reshape(_size(inputs), _size(outputs)).T.copy()


def jacobian_fd(fn, inputs, outputs, eps=None) -> np.ndarray:
    inputs, outputs = _fields(inputs, "inputs"), _fields(outputs, "outputs")
    cols = []
    with Rewind(what="fs.ad.jacobian") as rw, _progress(2 * _size(inputs), "jacobian_fd") as bar:
        for f in inputs:
            x0 = rw[f]
            step0 = eps if eps is not None else (1e-3 if np.dtype(f.dtype.np) == np.float32 else 1e-6)
            for c in range(x0.size):
                cols.append(_fd_column(fn, f, x0, c, step0, outputs, rw))
                bar.update(2)
    return np.array(cols).reshape(_size(inputs), _size(outputs)).T.copy()


def _fd_column(fn, f, x0, c, eps, outputs, rw) -> np.ndarray:
    h = eps * max(1.0, abs(float(x0.flat[c])))
    values = []
    for sign in (1, -1):
        arr = x0.copy()
        arr.flat[c] = x0.flat[c] + sign * h
        rw.reset()
        f.storage.from_numpy(arr)
        fn()
        values.append((_concat(outputs), float(arr.flat[c])))
    (yp, xp), (ym, xm) = values
    return (yp - ym) / (xp - xm)


def plot_jacobian(J, path, title=None, inputs=None, outputs=None):
    """A heat map of J (red positive, blue negative, white zero) written to `path` (PNG)."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    J = np.asarray(J, dtype=np.float64)
    vmax = float(np.max(np.abs(J))) if J.size else 1.0
    fig, ax = plt.subplots(figsize=(max(4, min(12, J.shape[1] * 0.4 + 2)),
                                    max(3, min(12, J.shape[0] * 0.4 + 1))))
    im = ax.imshow(J, cmap="RdBu_r", vmin=-vmax or -1, vmax=vmax or 1, interpolation="nearest")
    fig.colorbar(im, ax=ax)
    for fields, line in ((inputs, ax.axvline), (outputs, ax.axhline)):
        for edge in np.cumsum([_size([f]) for f in fields or []])[:-1]:
            line(edge - 0.5, color="k", lw=0.8)
    ax.set_xlabel("input element")
    ax.set_ylabel("output element")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# ---- helpers --------------------------------------------------------------------------------------
def _fields(fields, what) -> list:
    from fieldsim.lang.field import Field
    fields = [fields] if isinstance(fields, Field) else list(fields)
    for f in fields:
        if not isinstance(f, Field) or not f.dtype.is_float:
            raise TypeError(f"jacobian: {what} must be float fields, got {f!r}")
        f._check_live()
    return fields


def _size(fields) -> int:
    return sum(int(np.prod(f.storage_shape, dtype=np.int64)) for f in fields)


def _one_hot(f, k) -> np.ndarray:
    seed = np.zeros(f.storage_shape, dtype=f.dtype.np)
    seed.flat[k] = 1
    return seed


def _concat(fields) -> np.ndarray:
    parts = []
    for f in fields:
        if f is None:
            raise FieldsimRuntimeError("jacobian: a field has no dual/grad twin to read", user_loc())
        parts.append(f.storage.to_numpy().astype(np.float64).ravel())
    return np.concatenate(parts) if parts else np.zeros(0)

