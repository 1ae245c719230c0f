"""A method called on a func's result (`f().transpose()`, `g().dot(u)`) runs the func once: its
side effects (a counter it increments) happen once per call written, in an assignment and in an
`if` test alike, for plain and real funcs. Counts worked out by hand from the calls written."""
import fieldsim as fs

M2 = fs.types.matrix(2, 2, fs.f32)
V2 = fs.types.vector(2, fs.f32)


def test_method_on_call_result_calls_once():
    fs.init(arch=fs.cpu)
    c = fs.field(fs.i32, shape=3)

    @fs.func
    def fm():
        c[0] += 1
        return M2([[1.0, 2.0], [3.0, 4.0]])

    @fs.func
    def fv():
        c[1] += 1
        return V2(1.0, 2.0)

    @fs.real_func
    def rm() -> M2:
        c[2] += 1
        return M2([[1.0, 2.0], [3.0, 4.0]])

    @fs.kernel
    def k() -> fs.f32:
        a = fm().transpose()  # transpose: a[0, 1] = 3
        b = fv().dot(V2(1.0, 1.0))  # 3
        r = 0.0
        if fv().sum() > 2.0:  # 3 > 2
            r = 1.0
        e = rm().transpose()  # e[0, 0] = 1
        return a[0, 1] + b + r + e[0, 0] + rm().trace()  # 3 + 3 + 1 + 1 + 5

    assert k() == 13.0
    assert c.to_numpy().tolist() == [1, 2, 2]
