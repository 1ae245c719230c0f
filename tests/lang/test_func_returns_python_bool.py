"""A func whose one tail return is a Python `True` (`return not (p >> 7)` with a constant `p`
folds to `not 0`) returns it: the value was mistaken for the "no return yet" marker, and the
call gave None ("expected a scalar, got NoneType None")."""
import fieldsim as fs


def test_func_returning_python_true_and_false():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=3)

    @fs.func
    def shifted_is_zero(p):
        return not (p >> 7)

    @fs.func
    def always_false():
        return not 5

    @fs.kernel
    def k():
        out[0] = shifted_is_zero(4) + 10  # 4 >> 7 is 0: True
        out[1] = shifted_is_zero(1000) + 10  # 1000 >> 7 is 7: False
        out[2] = always_false() + 10

    k()
    assert out.to_numpy().tolist() == [11, 10, 10]
