"""A `@ti.func` parameter that receives a Python number and is reassigned in the func.

Taichi copies by-value arguments into variables, so `lo += 3` / `hi = mid - 1` work on a
number passed from kernel code (a binary search called as `search(0, 99, key, keys)` in
GeoTaichi's helpers). fieldsim kept such a parameter a compile-time constant: `+=` was refused
and a plain reassignment inside a loop could not change it. A parameter the func only reads
stays a compile-time value (so `ti.static(range(n))` on it still unrolls).
"""
import numpy as np

import fieldsim as fs


def test_reassigned_number_parameters_are_variables():
    fs.init(arch=fs.cpu)
    keys = fs.field(int, 100)
    keys.from_numpy(np.arange(0, 300, 3, dtype=np.int32))
    out = fs.field(int, 300)
    misc = fs.field(float, 3)

    @fs.func
    def search(lo, hi, key, table: fs.template()):
        loc = -1
        while lo <= hi:
            mid = (lo + hi) // 2
            if table[mid] == key:
                loc = mid
                break
            elif table[mid] > key:
                hi = mid - 1
            else:
                lo = mid + 1
        return loc

    @fs.func
    def step_up(lo, hi):
        while lo < hi:
            lo += 3
        return lo

    @fs.func
    def double(x):
        x = x * 2
        return x

    @fs.func
    def unrolled_sum(n):
        s = 0
        for i in fs.static(range(n)):  # n stays a compile-time value (it is not reassigned)
            s += i
        return s

    @fs.kernel
    def k():
        for i in range(300):
            out[i] = search(0, 99, i, keys)
        misc[0] = step_up(0, 10)
        misc[1] = double(3.5)
        misc[2] = unrolled_sum(5)

    k()
    i = np.arange(300)
    np.testing.assert_array_equal(out.to_numpy(), np.where(i % 3 == 0, i // 3, -1))
    np.testing.assert_array_equal(misc.to_numpy(), [12.0, 7.0, 10.0])
