"""A huge field under a pointer node (stored densely) costs memory only where it is written.

A program that writes the diagonal of a 8192^2 sparse matrix touches one cell per row; the
storage of such fields is mapped without transparent huge pages, so the resident memory grows
by a few 4 KB pages per row (about 32 MB), not a 2 MB page per written row block (256 MB).
Values, struct-for visits and numpy transfers are checked as for any field.
"""
import numpy as np

import fieldsim as fs


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_huge_pointer_field_touches_only_written_pages():
    fs.init(arch=fs.cpu)
    n = 8192
    a = fs.field(fs.f32)
    fs.root.pointer(fs.ij, (n // 16, n // 16)).dense(fs.ij, (16, 16)).place(a)

    @fs.kernel
    def diag():
        for k in range(n):
            a[k, k] = 2.0

    @fs.kernel
    def total() -> fs.f32:
        s = 0.0
        for i, j in a:
            s += a[i, j]
        return s

    before = _rss_bytes()
    diag()
    grown = _rss_bytes() - before
    assert total() == 2.0 * n
    assert grown < 128 * 2**20, f"resident memory grew by {grown / 2**20:.0f} MB"
    a[3, 5] = 1.5
    assert a[3, 5] == 1.5 and a.to_numpy()[n - 1, n - 1] == 2.0
