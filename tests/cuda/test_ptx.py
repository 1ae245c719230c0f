"""PTX emission without a GPU: every corpus kernel (and adjoints) to PTX, then through ptxas.

The emission always runs; the ptxas step runs where `ptxas` is on PATH. CUDA 13's ptxas no
longer targets sm_70: sm_70 PTX is then assembled for the oldest GPU it knows (sm_75), which
checks the PTX (PTX for sm_XY is valid for every sm_MN >= XY) but not sm_70 machine code.
"""
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from cuda_corpus import CORPUS
from cuda_support import ad_corpus, ad_gradients, capture_runtime

import fieldsim as fs
from fieldsim.ad.reverse import make_adjoint
from fieldsim.codegen import ptx as P
from fieldsim.codegen.llvm import CTX_WORDS
from fieldsim.errors import FieldsimError

ARCHS = ["sm_70", "sm_75", "sm_90"]
# corpus entries whose adjoints are emitted too (the AD corpus covers adjoints thoroughly)
ADJOINT_OF = ["arith_f32", "math_f32", "math_f64", "vector_matrix", "inner_loops", "if_else",
              "svd_polar", "kernel_returns", "templates_and_funcs", "zero_d_and_fill"]


def check_ptx(ptx: str, sm: str, entries: int | None = None):
    assert f".target {sm}" in ptx
    n = ptx.count(".visible .entry")
    assert n >= 1 and (entries is None or n == entries), ptx[:2000]
    assert "__nvvm_reflect" not in ptx, "NVVMReflect did not run"
    # vprintf (print) is the one external call: the driver's own device printf
    externs = re.findall(r"\.extern \.func[^;]*?(\w+)\s*\(", ptx)
    assert set(externs) <= {"vprintf"}, f"an unresolved call (libdevice not linked?): {externs}"
    gpu = P.ptxas_target(sm)  # CUDA 13's ptxas assembles sm_70 PTX only for sm_75 and newer
    if gpu is not None:
        r = P.run_ptxas(ptx, gpu)
        assert r.returncode == 0, f"ptxas -arch={gpu} failed on {sm} PTX:\n{r.stderr}\n{ptx[:4000]}"


def forward_irs(entry, grads=False):
    fs.init(arch=fs.cpu, **entry.init)
    program = entry.build(fs)
    if grads:
        fs.root.lazy_grad()  # every float field gets a gradient: the adjoints are not empty
    return [P.kernel_ir(k, *args) for k, args in program.launches]


# (not `arch`: tests/conftest.py parametrises that name over backends)
@pytest.mark.parametrize("sm", ARCHS)
@pytest.mark.parametrize("entry", CORPUS, ids=lambda e: e.name)
def test_corpus_ptx(entry, sm):
    for ir in forward_irs(entry):
        tasks = sum(1 for s in ir.body if s.op.name in ("FOR", "SERIAL"))
        check_ptx(P.emit_ptx(ir, sm), sm, tasks)


@pytest.mark.parametrize("sm", ["sm_90"])
@pytest.mark.parametrize("name", ADJOINT_OF)
def test_corpus_adjoint_ptx(name, sm):
    entry = next(e for e in CORPUS if e.name == name)
    made = 0
    for ir in forward_irs(entry, grads=True):
        try:
            adj = make_adjoint(ir)
        except FieldsimError:
            continue  # refused (e.g. an integer-only kernel): nothing to emit
        if not any(s.op.name in ("FOR", "SERIAL") for s in adj.body):
            continue  # nothing active: the adjoint is empty
        check_ptx(P.emit_ptx(adj, sm), sm)
        made += 1
    assert made, f"no adjoint of {name} was emitted"


AD = ad_corpus()


@pytest.mark.parametrize("entry", AD, ids=lambda e: e.name)
def test_ad_corpus_ptx(entry):
    """Every kernel the Tape compiles for an AD-corpus entry (forward and adjoint) emits."""
    rt = capture_runtime(default_fp=fs.f32)
    ad_gradients(entry)
    irs = rt.device.irs
    assert any(ir.name.endswith(".grad") for ir in irs), [ir.name for ir in irs]
    for ir in irs:
        check_ptx(P.emit_ptx(ir, "sm_90"), "sm_90")


def test_debug_checks_emit():
    fs.init(arch=fs.cpu, debug=True)
    x = fs.field(fs.f32, shape=8, name="x")

    @fs.kernel
    def k(j: fs.i32):
        for i in x:
            assert x[i] >= 0, "negative"
            x[(i + j) % 8] = 1.0

    check_ptx(P.emit_ptx(P.kernel_ir(k, 3), "sm_90", debug=True), "sm_90")


def test_entry_signature_and_grid_stride():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=100, name="x")

    @fs.kernel
    def k(a: fs.f32, b: fs.i32):
        for i in x:
            x[i] = a * i + b

    ptx = P.emit_ptx(P.kernel_ir(k, 1.0, 2), "sm_90", symbol="kk")
    assert ".visible .entry kk_t0_entry(" in ptx
    params = [line for line in ptx.splitlines() if ".param .u64 kk_t0_entry_param_" in line]
    assert len(params) == CTX_WORDS + 2  # the ctx words, then one word per runtime argument
    for sreg in ("%tid.x", "%ntid.x", "%ctaid.x", "%nctaid.x"):
        assert sreg in ptx
    assert "__local_depot" not in ptx  # ctx and args were promoted to registers


def test_atomics_have_device_scope():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=8, name="x")
    y = fs.field(fs.f64, shape=8, name="y")

    @fs.kernel
    def k():
        for i in range(64):
            fs.atomic_min(x[i % 8], i * 1.0)
            fs.atomic_max(y[i % 8], i * 1.0)
            x[(i + 1) % 8] += 1.0

    ptx = P.emit_ptx(P.kernel_ir(k), "sm_90")
    atoms = [line for line in ptx.splitlines() if "atom." in line]
    assert atoms and not any(".sys" in line for line in atoms), atoms
    assert any(".add.f32" in line for line in atoms)  # native f32 atomic add
    assert any(".cas.b64" in line for line in atoms)  # f64 max: a CAS loop
    check_ptx(ptx, "sm_90")


def test_device_scope_rewrite():
    text = ('  %"a" = atomicrmw fadd ptr %"p", float %"v" monotonic\n'
            '  %"b" = cmpxchg ptr %"q", i32 1, i32 2 monotonic monotonic\n'
            '  store float 0.0, ptr %"monotonic"\n')
    out = P.device_scope_atomics(text).splitlines()
    assert out[0].endswith('float %"v" syncscope("device") monotonic')
    assert out[1].endswith('i32 2 syncscope("device") monotonic monotonic')
    assert out[2] == text.splitlines()[2]


@pytest.mark.skipif(P.find_libdevice() is None, reason="no libdevice")
def test_libdevice_names_exist():
    have = P.libdevice_functions()
    for base in set(P.LIBDEVICE.values()):
        for name in ("__nv_" + base, "__nv_" + base + "f"):
            assert name in have, name


def test_without_libdevice(monkeypatch, tmp_path):
    monkeypatch.setenv("FIELDSIM_LIBDEVICE", str(tmp_path / "missing.bc"))
    assert P.find_libdevice() is None
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=8, name="x")

    @fs.kernel
    def exact():
        for i in x:
            x[i] = fs.sqrt(abs(x[i])) + fs.floor(x[i]) + fs.ceil(x[i]) + fs.round(x[i])

    @fs.kernel
    def transcendental():
        for i in x:
            x[i] = fs.sin(x[i])

    check_ptx(P.emit_ptx(P.kernel_ir(exact), "sm_90"), "sm_90")
    with pytest.raises(P.LibdeviceNotFound, match="libdevice"):
        P.emit_ptx(P.kernel_ir(transcendental), "sm_90")


def test_print_is_a_vprintf_of_eight_byte_words():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def show(n: fs.i32):
        for i in x:
            print("x", i, "=", x[i], n)

    text = P.emit_ptx(P.kernel_ir(show, 3), "sm_90")
    assert re.search(r"call\.uni[^;]*vprintf", text)
    strings = [bytes(int(c) for c in body.split(",")) for body in
               re.findall(r"\.global \.align 1 \.b8 \S+\[\d+\] = \{([^}]*)\}", text)]
    assert b"x %lld = %f %lld\n" in strings  # i32 and i64 as %lld words, f32 widened to %f
    check_ptx(text, "sm_90", entries=1)


def test_fast_math_divides_and_roots_f32_approximately_and_f64_exactly():
    fs.init(arch=fs.cpu)
    a = fs.field(fs.f32, shape=8)
    d = fs.field(fs.f64, shape=8)

    @fs.kernel
    def k(s: fs.f32):
        for i in a:
            a[i] = s / (a[i] + 1.0) + fs.sqrt(s + a[i])
            d[i] = 2.0 / fs.sqrt(d[i] + fs.cast(s, fs.f64))

    ir = P.kernel_ir(k, 1.0)
    fast, exact = (P.emit_ptx(ir, "sm_90", fast_math=f) for f in (True, False))
    ops = lambda text: set(re.findall(r"\b((?:div|sqrt)\.\w+(?:\.ftz)?\.f(?:32|64))", text))
    # Taichi's fast_math on CUDA: f32 div.approx (2 ulp) and sqrt.approx, subnormals flushed;
    # f64 correctly rounded
    assert ops(fast) == {"div.approx.ftz.f32", "sqrt.approx.ftz.f32", "div.rn.f64", "sqrt.rn.f64"}
    assert ops(exact) == {"div.rn.f32", "sqrt.rn.f32", "div.rn.f64", "sqrt.rn.f64"}  # IEEE
    check_ptx(fast, "sm_90", entries=1)
    check_ptx(exact, "sm_90", entries=1)


def root_quotient_ir():
    """gravity's pair term, f32 `c / sqrt(q)`, as the IR of a kernel."""
    fs.init(arch=fs.cpu)
    a = fs.field(fs.f32, shape=8)

    @fs.kernel
    def k():
        for i in a:
            a[i] = -3.0 / fs.sqrt(a[i] * a[i] + 0.5)

    return P.kernel_ir(k)


def test_fast_math_divides_f32_by_a_root_with_one_reciprocal_root():
    ir = root_quotient_ir()
    fast, exact = (P.emit_ptx(ir, "sm_90", fast_math=f) for f in (True, False))
    ops = lambda text: set(re.findall(r"\b((?:div|sqrt|rsqrt)\.\w+(?:\.ftz)?\.f32)", text))
    # gravity's pair term: one special-function op, subnormals flushed as Taichi does
    assert ops(fast) == {"rsqrt.approx.ftz.f32"}
    assert ops(exact) == {"div.rn.f32", "sqrt.rn.f32"}
    assert ".ftz" not in exact  # IEEE subnormals in exact mode
    check_ptx(fast, "sm_90", entries=1)


def test_reciprocal_root_variants_of_the_cuda_target(monkeypatch):
    """benchmarks/gpu_variants.py's switches: the Newton step and subnormal flushing."""
    ir = root_quotient_ir()
    monkeypatch.setattr(P.CudaTarget, "refine_rsqrt", True)
    refined = P.emit_ptx(ir, "sm_90", fast_math=True)
    assert "rsqrt.approx.ftz.f32" in refined and refined.count("fma.rn.ftz.f32") >= 3
    monkeypatch.setattr(P.CudaTarget, "flush_subnormals", False)
    ieee = P.emit_ptx(ir, "sm_90", fast_math=True)
    assert "rsqrt.approx.f32" in ieee and ".ftz" not in ieee
    check_ptx(refined, "sm_90", entries=1)
    check_ptx(ieee, "sm_90", entries=1)


@pytest.mark.cuda
def test_fast_math_reciprocal_root_on_the_device_within_two_ulps():
    fs.init(arch=fs.cuda, fast_math=True)
    n = 1 << 16
    q = fs.field(fs.f32, shape=n)
    out = fs.field(fs.f32, shape=n)

    @fs.kernel
    def k():
        for i in q:
            out[i] = 2.0 / fs.sqrt(q[i])

    rng = np.random.default_rng(0)
    values = np.concatenate([4.0 ** np.arange(-20, 20), rng.uniform(1e-6, 1e6, n - 40)])
    q.from_numpy(values.astype(np.float32))
    k()
    got = out.to_numpy().astype(np.float64)
    want = 2.0 / np.sqrt(values.astype(np.float32).astype(np.float64))
    ulp = np.spacing(want.astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - want) / ulp) <= 2.0
    # exact where the result is: powers of 4 (a polar decomposition of I needs 1/sqrt(4) = 0.5)
    np.testing.assert_array_equal(got[:40], want[:40])
    fs.init(arch=fs.cpu)


class _LoadCountingDriver:
    """The driver calls CudaBackend makes while compiling, counted; no device behind them."""
    name, cc, sm_count, device_name, version = "counting", (9, 0), 2, "none", 13000

    def __init__(self):
        self.loaded = []

    def alloc(self, nbytes):
        return 4096, None

    def memset8(self, dptr, value, nbytes):
        pass

    def load(self, ptx):
        import threading
        self.loaded.append((ptx, threading.get_ident()))
        return len(self.loaded)

    def function(self, module, name, nwords):
        return (module, name, nwords)

    def max_threads(self, fn):
        return 1024


def test_template_specialisations_share_one_ptx_build_and_module(monkeypatch):
    from fieldsim.codegen import cuda as C
    rt = fs.init(arch=fs.cpu, offline_cache=False)
    builds = []
    real_build = P.optimise_to_ptx
    monkeypatch.setattr(C, "optimise_to_ptx", lambda *a, **k: builds.append(1) or real_build(*a, **k))
    be = C.CudaBackend(rt, _LoadCountingDriver())
    a, b = fs.field(fs.f32, shape=4), fs.field(fs.f32, shape=4)
    c = fs.field(fs.f64, shape=4)

    @fs.kernel
    def inc(f: fs.template()):
        for i in f:
            f[i] += 1

    pa, pb = (be.compile(P.kernel_ir(inc, f), rt) for f in (a, b))
    assert len(builds) == 1 and len(be.drv.loaded) == 1  # same IR: one PTX, one module
    assert pa is not pb and pa.functions == pb.functions and pa.info.fields != pb.info.fields
    pc = be.compile(P.kernel_ir(inc, c), rt)  # f64: other IR, its own module
    assert len(be.drv.loaded) == 2 and pc.functions != pa.functions
    check_ptx(pc.ptx, be.arch, entries=1)


def test_ptx_built_on_several_threads_at_once_is_the_ptx_built_alone():
    from concurrent.futures import ThreadPoolExecutor
    # NVPTX numbers call sequences in comments (`// callseq 3`) per target machine: not code
    def ptx(ir):
        return re.sub(r"callseq \d+", "callseq", P.emit_ptx(ir, "sm_90", fast_math=True))
    irs = [ir for entry in CORPUS for ir in forward_irs(entry)]
    alone = [ptx(ir) for ir in irs]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(2):
            assert list(pool.map(ptx, irs)) == alone


def test_compile_many_builds_ptx_on_threads_and_loads_modules_on_the_caller(monkeypatch):
    import threading

    from fieldsim.codegen import cuda as C
    rt = fs.init(arch=fs.cpu, offline_cache=False)
    be = C.CudaBackend(rt, _LoadCountingDriver())
    monkeypatch.setattr(be, "compile_pool", lambda: ThreadPoolExecutor(3))
    built_on = []
    real_build = P.optimise_to_ptx
    monkeypatch.setattr(C, "optimise_to_ptx",
                        lambda *a, **k: built_on.append(threading.get_ident()) or real_build(*a, **k))
    fields = [fs.field(dt, shape=8) for dt in (fs.f32, fs.f64, fs.i32, fs.f32)]

    @fs.kernel
    def double(f: fs.template()):
        for i in f:
            f[i] = f[i] + f[i]

    @fs.kernel
    def broken(f: fs.template()):
        for i in f:
            f[i] = fs.sin(f[i])  # libdevice missing (below): this one fails to build

    irs = [P.kernel_ir(double, f) for f in fields] + [P.kernel_ir(broken, fields[0])]
    be.libdevice = "/nonexistent/libdevice.10.bc"
    programs = be.compile_many(irs, rt)
    assert all(isinstance(p, C.CudaProgram) for p in programs[:4])
    assert isinstance(programs[4], Exception)  # handed back, not raised
    assert threading.get_ident() not in built_on  # LLVM's work on the compile threads
    assert {tid for _, tid in be.drv.loaded} == {threading.get_ident()}  # modules: the caller
    assert len(be.drv.loaded) == 3  # f32 twice: one module
    assert programs[0].functions == programs[3].functions != programs[1].functions


def test_half_precision_math():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f16, shape=8, name="x")

    @fs.kernel
    def k():
        for i in x:
            x[i] = fs.exp(x[i]) + fs.sqrt(x[i])

    check_ptx(P.emit_ptx(P.kernel_ir(k), "sm_90"), "sm_90")


def test_importing_fieldsim_does_not_import_a_driver():
    code = ("import sys, fieldsim, fieldsim.codegen.cuda; "
            "bad = [m for m in ('pycuda', 'pycuda.driver', 'cuda.bindings') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert r.returncode == 0, r.stdout + r.stderr


def test_is_available_never_raises():
    from fieldsim.codegen import cuda
    assert isinstance(cuda.is_available(), bool)


def test_init_cuda_without_device_falls_back_to_cpu_with_a_warning():
    from fieldsim.codegen import cuda
    if cuda.is_available():
        pytest.skip("a CUDA device is available")
    with pytest.warns(UserWarning, match="no usable CUDA device"):
        rt = fs.init(arch=fs.cuda)
    assert rt.arch == fs.cpu
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def fill():
        for i in x:
            x[i] = i * 2.0

    fill()
    assert x.to_numpy().tolist() == [0.0, 2.0, 4.0, 6.0]
    fs.init(arch=fs.cpu)


@pytest.mark.parametrize("backend_name", ["vulkan", "metal", "opengl", "gles", "dx11", "amdgpu"])
def test_init_with_another_backend_falls_back_to_cpu(backend_name):
    with pytest.warns(UserWarning, match=f"no {backend_name} backend"):
        rt = fs.init(arch=getattr(fs, backend_name))
    assert rt.arch == fs.cpu
    fs.init(arch=fs.cpu)


def test_device_arch_mapping():
    from fieldsim.codegen.cuda import device_arch
    assert device_arch((9, 0)) == "sm_90"
    assert device_arch((8, 6)) == "sm_86"
    assert device_arch((7, 0)) == "sm_70"
    assert device_arch((12, 9)) == "sm_121"
    assert device_arch((8, 8)) == "sm_87"


def test_bad_arch_is_a_clear_error():
    """LLVM only warns on an unknown processor and prints PTX no GPU loads: refuse it."""
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=8, name="x")

    @fs.kernel
    def k():
        for i in x:
            x[i] = 1.0

    for bad in ("90", "SM_90", "ampere"):
        with pytest.raises(FieldsimError, match=f"arch='{bad}' is not a CUDA architecture"):
            P.emit_ptx(P.kernel_ir(k), bad)
    assert ".target sm_90a" in P.emit_ptx(P.kernel_ir(k), "sm_90a")  # arch-specific features
