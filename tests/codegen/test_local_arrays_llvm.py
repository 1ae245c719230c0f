"""Runtime-indexed local arrays in the LLVM IR: one `alloca [n x T]` with one load or store per
access (not a select over every entry), and nothing left of it once LLVM has unrolled every
runtime index into a constant (SROA then keeps the entries in registers and the loop
vectorizes)."""
import fieldsim as fs


def test_a_stack_is_one_array_with_one_access_per_index(llvm_texts):
    fs.init(arch=fs.cpu, offline_cache=False)
    out = fs.field(fs.i32, shape=16)

    @fs.kernel
    def k():
        for i in out:
            stack = fs.Vector([0] * 64)
            sp, total = 1, 0
            while sp > 0:
                sp -= 1
                node = stack[sp]
                total += node
                if node < 20:
                    stack[sp], stack[sp + 1], sp = 2 * node + 1, 2 * node + 2 + i % 2, sp + 2
            out[i] = total

    k()
    (text,) = llvm_texts
    assert text.count("alloca [64 x i32]") == 1
    assert text.count("select") < 20  # one clamp per runtime access, not 64 per access
    want = []
    for i in range(16):
        stack, sp, total = [0] * 64, 1, 0
        while sp > 0:
            sp -= 1
            node = stack[sp]
            total += node
            if node < 20:
                stack[sp], stack[sp + 1], sp = 2 * node + 1, 2 * node + 2 + i % 2, sp + 2
        want.append(total)
    assert out.to_numpy().tolist() == want


def test_an_unrolled_array_leaves_no_alloca(monkeypatch, capsys):
    fs.init(arch=fs.cpu, offline_cache=False)
    x = fs.field(fs.f32, shape=64)
    out = fs.field(fs.f32, shape=64)

    @fs.kernel
    def k():
        for i in x:
            v = fs.Vector([0.0] * 4)
            for d in range(4):
                v[d] = x[i] * d
            out[i] = v[0] + v[3] * v[1]

    monkeypatch.setenv("FIELDSIM_PRINT_LLVM", "1")
    x.from_numpy([float(i) for i in range(64)])
    k()
    optimised = capsys.readouterr().out
    assert "define" in optimised and "alloca [4 x float]" not in optimised
    assert out.to_numpy().tolist() == [3.0 * i * i for i in range(64)]
