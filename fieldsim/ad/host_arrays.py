"""Host arrays a Tape's launches took: changes made to them from Python between launches.

A NumPy array (or a CPU tensor's memory) passed to a kernel belongs to the user, who may change
it in place between two launches on a Tape (`k1(a); a[:] = 5.0; k2()`). Nothing in fieldsim
sees such a write, yet the backward replays `k1`'s adjoint with `a` as it is then: a silently
wrong gradient (Taichi 1.7.4 gives the same wrong numbers). Fields and `fs.ndarray`s report
Python-scope writes themselves; a host array cannot, so the Tape keeps a copy of it instead.

Takes each recorded launch's ndarray bindings (`BoundNdarray`s) before and after it runs, and
the Tape's backward. Guarantees: a host array whose bytes (or shape, dtype) differ from
what the Tape last saw (after the launch that last took it, or that last wrote it) is reported
to the Tape's checker as a Python-scope write of the whole array, before the next launch that
takes it runs and before the backward; the checker refuses it where a recorded adjoint reads
the array (rule 1), naming the array, the kernel that read it and the line where the change was
found. A change that a later recorded launch made by writing another view of the same memory
(`k(a[:]); write(a)`: two arrays, one buffer) is reported as that launch's write, named. The
copy of an array's bytes is compared once per launch that takes it and made again
after a launch that writes it (a CRC would cost 4-8x that compare); fields and `fs.ndarray`s
are not looked at.
"""
from __future__ import annotations

import numpy as np

from fieldsim.lang.ndarray import BoundNdarray, ExternalArray

_SMALL = 1 << 16  # bytes: below, Python's bytes compare (no NumPy call overhead); above, NumPy's


def _words(array):
    """The array's bytes as a flat array of the widest unsigned words that tile them (compared
    bit for bit: a NaN equals itself, -0.0 differs from 0.0)."""
    data = array if array.flags.c_contiguous else array.T  # an F-order array's transpose is C-order
    flat = data.reshape(-1).view(np.uint8)
    for word in (np.uint64, np.uint32):
        if flat.size % np.dtype(word).itemsize == 0:
            return flat.view(word)
    return flat


class _Watched:
    """One user array: its shape, dtype and bytes when the Tape last saw it, and the fields the
    checker knew it as (one per launch for a Fortran-order array, which runs on a copy)."""

    __slots__ = ("array", "dtype", "proxies", "saved", "seen", "shape", "writer")

    def __init__(self, array, launch: int):
        self.array, self.proxies, self.writer = array, [], None
        self.save(launch)

    def save(self, launch: int):
        """Copy the bytes, as they are at launch number `launch`."""
        self.seen = launch
        a = self.array
        self.shape, self.dtype = a.shape, a.dtype
        self.saved = a.tobytes(order="A") if a.nbytes <= _SMALL else _words(a).copy()

    def changed(self) -> bool:
        a = self.array
        if a.shape != self.shape or a.dtype != self.dtype:
            return True
        if a.nbytes <= _SMALL:
            return a.tobytes(order="A") != self.saved
        return not np.array_equal(_words(a), self.saved)


class HostArrays:
    """The host arrays of one Tape's recording (see the module docstring)."""

    def __init__(self):
        self.watched: dict[int, _Watched] = {}  # id(user array) -> its record (keeps it alive)

    def before_launch(self, templates: dict, launch: int, report) -> None:
        """Compare the launch's host arrays with their copies; `report(proxy, name, writer)`
        is called for each one changed since (it raises when the change breaks the rules);
        `launch`: this launch's number on the Tape."""
        for bound in _host_bindings(templates):
            array, proxy = _user_array(bound), bound.proxy
            record = self.watched.get(id(array))
            if record is None or record.array is not array:
                self.watched[id(array)] = record = _Watched(array, launch)
            elif record.changed():
                self._report(record, report)
                record.save(launch)
            if not any(p is proxy for p in record.proxies):
                record.proxies.append(proxy)

    def after_launch(self, templates: dict, written: dict, writer: tuple) -> None:
        """Save again the host arrays the launch wrote (`written`: field id -> field;
        `writer`: the launch, (kernel name, number))."""
        for bound in _host_bindings(templates):
            if id(bound.proxy) in written:
                array = _user_array(bound)
                record = self.watched.get(id(array))
                if record is not None and record.array is array:
                    record.save(writer[1])
                    record.writer = writer

    def before_backward(self, report) -> None:
        """Check every host array the Tape saw (a change after its last launch)."""
        for record in self.watched.values():
            if record.changed():
                self._report(record, report)
                record.save(record.seen)

    def _report(self, record: _Watched, report) -> None:
        writer = self._writer_through_another_view(record)
        for proxy in record.proxies:
            report(proxy, proxy.ir_name, writer)

    def _writer_through_another_view(self, record: _Watched):
        """The last launch that, since `record` was saved, wrote another array sharing its
        memory (kernel name, number); None: the change came from Python."""
        found = None
        for other in self.watched.values():
            w = other.writer
            if (other is not record and w is not None and w[1] >= record.seen
                    and (found is None or w[1] > found[1])
                    and np.shares_memory(other.array, record.array)):
                found = w
        return found


def _host_bindings(templates: dict):
    for t in templates.values():
        if isinstance(t, BoundNdarray) and isinstance(t.proxy, ExternalArray):
            yield t


def _user_array(bound: BoundNdarray):
    return bound.fortran.original if bound.fortran is not None else bound.proxy.array

