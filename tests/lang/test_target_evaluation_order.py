"""Taichi's order in `a[f()] += g()` and `fs.atomic_add(a[f()], g())`: the funcs the target calls
run before the value, as in Python; but a field the target only reads (`a[b[i]] += g()`) is read
after the value, as Taichi builds expressions and loads them when the statement is emitted. In
`a[f()] = g()` the value comes first. `+=` evaluated the value first always (a fuzzed program's
`v[f1(..)] += V2(..) * f2(..)`, f1 halving `y[1]` and f2 adding to it, ended with half of
Taichi's `y[1]`). Every expected value here is worked out by hand and is Taichi 1.7.4's."""
import fieldsim as fs


def _program():
    fs.init(arch=fs.cpu)
    y = fs.field(fs.i32, shape=8)

    @fs.func
    def times_ten():
        y[0] = y[0] * 10
        return 2

    @fs.func
    def plus_one():
        y[0] += 1
        return 3

    return y, times_ten, plus_one


def _run(body):
    y, times_ten, plus_one = _program()
    k = fs.kernel(body(y, times_ten, plus_one))
    y[0] = 1
    k()
    return y.to_numpy().tolist()


def test_augmented_assignment_evaluates_the_target_first():
    def body(y, a, b):
        def k():
            y[a()] += b()      # 1 -> 10 -> 11; y[2] = 3
            y[a() + 1] -= b()  # 110 -> 111; y[3] = -3
            y[a() + 2] *= b()  # 1110 -> 1111; y[4] = 0
        return k
    assert _run(body) == [1111, 0, 3, -3, 0, 0, 0, 0]


def test_augmented_assignment_in_a_parallel_loop():
    def body(y, a, b):
        def k():
            for i in range(1):
                y[a() + i] += b()
        return k
    assert _run(body) == [11, 0, 3, 0, 0, 0, 0, 0]


def test_atomic_builtin_evaluates_the_target_first():
    def body(y, a, b):
        def k():
            fs.atomic_add(y[a()], b())      # 10 -> 11
            fs.atomic_max(y[a() + 1], b())  # 110 -> 111
        return k
    assert _run(body) == [111, 0, 3, 3, 0, 0, 0, 0]


def test_plain_assignment_evaluates_the_value_first():
    def body(y, a, b):
        def k():
            y[a()] = b()  # 1 -> 2 -> 20
        return k
    assert _run(body) == [20, 0, 3, 0, 0, 0, 0, 0]


def test_a_target_that_only_reads_fields_is_read_after_the_value():
    fs.init(arch=fs.cpu)
    y = fs.field(fs.i32, shape=8)

    @fs.func
    def move():
        y[5] = 6
        return 3

    @fs.kernel
    def k():
        y[y[5]] += move()  # y[5] is 6 by the time it is read: y[6] += 3
        y[5] = 2
        fs.atomic_add(y[y[5]], move())  # y[6] += 3 again

    y[5] = 1
    k()
    assert y.to_numpy().tolist() == [0, 0, 0, 0, 0, 6, 6, 0]
