"""A huge field under a pointer or dynamic node (laid out densely) costs memory only where it is
written, even when its layout is bigger than the RAM.

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


def _ram_bytes():
    with open("/proc/meminfo") as f:
        return int(f.readline().split()[1]) * 1024


def test_dynamic_layout_bigger_than_the_ram_commits_only_written_pages():
    """A per-pixel fragment list sized like oit_renderer's (more than the machine's RAM if
    stored densely): reserved, so memory grows with the slots written; deactivating every
    pixel in a kernel touches no unused slot; `deactivate_all` hands the pages back."""
    fs.init(arch=fs.cpu)
    cap = -(-2 * _ram_bytes() // (1024 * 1024 * 4 * 4))  # twice the RAM, as vec4 f32
    color = fs.Vector.field(4, fs.f32)
    node = fs.root.dense(fs.ij, (1024, 1024)).dynamic(fs.k, cap, chunk_size=64)
    node.place(color)

    @fs.kernel
    def clear():
        for u, v in fs.ndrange(1024, 1024):
            color[u, v].deactivate()

    @fs.kernel
    def push(n: fs.i32):
        for u, v in fs.ndrange(1024, 256):  # a quarter of the pixels
            for k in range(n):
                color[u, v].append(fs.Vector([u, v, k, 1.0]))

    @fs.kernel
    def check() -> fs.f32:
        s = 0.0
        for u, v in fs.ndrange(1024, 1024):
            for k in range(color[u, v].length()):
                s += color[u, v, k][2] + color[u, v, k][3]
        return s

    before = _rss_bytes()
    clear()
    push(3)
    grown = _rss_bytes() - before
    assert check() == 1024 * 256 * (0 + 1 + 2 + 3)
    # one 4 KB page per written pixel list (1 GB would mean whole lists were touched)
    assert grown < 1024 * 256 * 4096 + 256 * 2**20, f"grew by {grown / 2**20:.0f} MB"
    assert color[5, 300, 0][3] == 0.0 and color[5, 3, cap - 1][0] == 0.0  # unwritten: 0
    clear()
    assert check() == 0.0 and color[5, 3, 1][3] == 0.0
    push(1)
    assert check() == 1024 * 256 * 1.0
    filled = _rss_bytes()
    node.deactivate_all()
    assert _rss_bytes() < filled - 512 * 2**20 and check() == 0.0 and color[5, 3, 0][3] == 0.0

