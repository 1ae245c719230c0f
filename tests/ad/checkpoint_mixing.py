"""A checkpointed program the carried-value tests share (test_checkpoint_carried_untracked,
test_checkpoint_copy_ndarray): each step mixes a value `a` into the state `s` through `w`, and
the loss sums the squares of the final state. The tests vary where `a` comes from."""
import fieldsim as fs


def mixing_kernels(s, w, loss, n):
    """(`use(a)`: w = sin(s) * a + s, `commit`: s = w, `total`: loss += s * s) over size n."""
    @fs.kernel
    def use(a: fs.template()):
        for i in range(n):
            w[i] = fs.sin(s[i]) * a[i] + s[i]

    @fs.kernel
    def commit():
        for i in range(n):
            s[i] = w[i]

    @fs.kernel
    def total():
        for i in range(n):
            loss[None] += s[i] * s[i]

    return use, commit, total


def runner(loss, start, step, total, state, steps=4, every=2):
    """`run(tape) -> loss`: `start()`, the steps (checkpointed with `state` on a Tape, a plain
    loop for the central differences), then `total()`."""
    def run(tape):
        loss[None] = 0.0
        if tape:
            with fs.ad.Tape(loss):
                start()
                fs.ad.checkpoint(step, steps, every, state=state)
                total()
        else:
            start()
            for t in range(steps):
                step(t)
            total()
        return loss[None]
    return run


def copy_kernel(dst, src, n):
    """`dst[i] = src[i]` over size n: a step's commit of its new state."""
    @fs.kernel
    def copy():
        for i in range(n):
            dst[i] = src[i]
    return copy


def squares_kernel(loss, s, n):
    """`loss += s[i] ** 2` over size n."""
    @fs.kernel
    def fin():
        for i in range(n):
            loss[None] += s[i] ** 2
    return fin
