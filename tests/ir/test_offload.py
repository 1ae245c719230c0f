"""The offload pass keeps program order for loads a task reads.

A field load that bounds a loop running inside a SERIAL block (a func's loop inlined at the
kernel's top level) must be read after the block's earlier stores, not hoisted to the task's
start (it read the value from before the store: TiBox2d's shape matching took the centre of mass
over an empty range and got NaN). Expected values are plain Python sums.
"""
import fieldsim as fs


def test_func_loop_bounds_read_after_earlier_store(arch):
    fs.init(arch=arch)
    x = fs.field(fs.f32, 10)
    span = fs.field(fs.i32, 2)

    @fs.func
    def total(a: fs.i32, b: fs.i32):
        t = 0.0
        for i in range(a, b):
            t += x[i]
        return t

    @fs.func
    def mean(a, b):
        t = 0.0
        n = 0.0
        for i in range(a, b):
            t += x[i]
            n += 1.0
        return t / n

    @fs.kernel
    def k_total(lo: fs.i32) -> fs.f32:
        span[0] = lo
        span[1] = 10
        return total(span[0], span[1])

    @fs.kernel
    def k_mean(lo: fs.i32, hi: fs.i32) -> fs.f32:
        span[0] = lo
        span[1] = hi
        return mean(span[0], span[1])

    for i in range(10):
        x[i] = i
    assert k_total(2) == sum(range(2, 10))
    assert k_total(7) == sum(range(7, 10))
    assert k_mean(0, 4) == 1.5
    assert k_mean(4, 6) == 4.5
