"""Compiled loops that draw `ti.GUI`'s antialiased circles and lines, and that convert
`set_image`'s float images to the packed canvas (fieldsim/gui.py).

Takes: shapes in pixels (y down), their packed ``0xRRGGBB`` colours and the GUI's packed canvas.
Does: what gui.py's numpy path does (coverage ``clamp(r - d, 0, 1)``, each shape blended over
what is below in call order, ``old (1 - a) + colour a`` in float64, bytes truncated once per
call), shape by shape and pixel by pixel in a small loop compiled once per process from the
LLVM IR below (about 30 ms, at the first antialiased draw). It is not a fieldsim kernel: no
kernel cache, no Tape, no fields. The float work image holds only the pixels a call touches
(a byte mask and a list of them), so a call costs what its shapes cover, not the canvas.
Why: the numpy path needed a sort of every covered pixel to keep the order of overlapping
shapes (100,000 particles of radius 1.5 with their own colours: 150 ms; this: a few ms).
The arithmetic is the numpy path's, operation for operation (no fused multiply-adds), so a
pixel's coverage is bit for bit the same; the blend is sequential where numpy used a closed
form, which differs in the last bits of the float only.

`pack_image` converts `set_image`'s float image in one pass, bit for bit what gui.py's numpy
conversion gives (f32: NaN and values below 0 to 0, above 1 to 1, times 255, plus GGUI's 0.5,
truncated): a 512 x 512 image 1.6 ms in numpy's ten passes, 0.7 ms here. Its module is small and
compiled on a thread a GUI starts when it is made (`start_image_compile`), so no frame waits
for it: until it is ready `pack_image` declines and gui.py converts with numpy.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

_COMMON = r"""
declare double @llvm.sqrt.f64(double)
declare double @llvm.floor.f64(double)

define private void @blend(i32* %canvas, double* %acc, i8* %mask, i64* %list, i64* %cnt,
                           i64 %p, i32 %col, double %a) alwaysinline {
entry:
  %pos = fcmp ogt double %a, 0.0
  br i1 %pos, label %go, label %done
go:
  %mp = getelementptr i8, i8* %mask, i64 %p
  %m = load i8, i8* %mp
  %b0 = mul i64 %p, 3
  %b1 = add i64 %b0, 1
  %b2 = add i64 %b0, 2
  %q0 = getelementptr double, double* %acc, i64 %b0
  %q1 = getelementptr double, double* %acc, i64 %b1
  %q2 = getelementptr double, double* %acc, i64 %b2
  %fresh = icmp eq i8 %m, 0
  br i1 %fresh, label %init, label %mix
init:
  store i8 1, i8* %mp
  %n = load i64, i64* %cnt
  %lp = getelementptr i64, i64* %list, i64 %n
  store i64 %p, i64* %lp
  %n1 = add i64 %n, 1
  store i64 %n1, i64* %cnt
  %cp = getelementptr i32, i32* %canvas, i64 %p
  %cv = load i32, i32* %cp
  %r0 = lshr i32 %cv, 16
  %r1 = and i32 %r0, 255
  %g0 = lshr i32 %cv, 8
  %g1 = and i32 %g0, 255
  %k1 = and i32 %cv, 255
  %rf = uitofp i32 %r1 to double
  %gf = uitofp i32 %g1 to double
  %kf = uitofp i32 %k1 to double
  store double %rf, double* %q0
  store double %gf, double* %q1
  store double %kf, double* %q2
  br label %mix
mix:
  %t = fsub double 1.0, %a
  %cr0 = lshr i32 %col, 16
  %cr1 = and i32 %cr0, 255
  %cg0 = lshr i32 %col, 8
  %cg1 = and i32 %cg0, 255
  %ck1 = and i32 %col, 255
  %crf = uitofp i32 %cr1 to double
  %cgf = uitofp i32 %cg1 to double
  %ckf = uitofp i32 %ck1 to double
  %o0 = load double, double* %q0
  %o1 = load double, double* %q1
  %o2 = load double, double* %q2
  %x0 = fmul double %o0, %t
  %y0 = fmul double %crf, %a
  %z0 = fadd double %x0, %y0
  %x1 = fmul double %o1, %t
  %y1 = fmul double %cgf, %a
  %z1 = fadd double %x1, %y1
  %x2 = fmul double %o2, %t
  %y2 = fmul double %ckf, %a
  %z2 = fadd double %x2, %y2
  store double %z0, double* %q0
  store double %z1, double* %q1
  store double %z2, double* %q2
  br label %done
done:
  ret void
}

define private double @cover(double %r, double %d2) alwaysinline {
  %d = call double @llvm.sqrt.f64(double %d2)
  %a = fsub double %r, %d
  %big = fcmp ogt double %a, 1.0
  %a1 = select i1 %big, double 1.0, double %a
  %neg = fcmp olt double %a1, 0.0
  %a2 = select i1 %neg, double 0.0, double %a1
  ret double %a2
}

; integer pixel range [floor(lo), floor(hi)] clipped to [0, size - 1], as doubles -> i64
define private i64 @clip_floor(double %v, i64 %size) alwaysinline {
  %f = call double @llvm.floor.f64(double %v)
  %top = sitofp i64 %size to double
  %m1 = fsub double %top, 1.0
  %hi = fcmp ogt double %f, %m1
  %f1 = select i1 %hi, double %m1, double %f
  %lo = fcmp olt double %f1, -1.0
  %f2 = select i1 %lo, double -1.0, double %f1
  %i = fptosi double %f2 to i64
  ret i64 %i
}

"""

# One shape after another in call order (`@circles`, `@lines`), each over the rows of its pixel
# box and the columns a row may hold: {params} are the shape's arrays, {shape} loads shape %i's
# values and gives its rows [%y0a, %y1], {row} gives row %y's columns [%x0a, %x1], {pixel}
# the squared distance %d2 of pixel (%x, %y) to the shape.
_SHAPE_LOOP = r"""
define void @{name}(i64 %n, {params}, double* %r, i32* %col, i64 %cstride, i64 %w, i64 %h,
                    i32* %canvas, double* %acc, i8* %mask, i64* %list, i64* %cnt) {{
entry:
  %i.p = alloca i64
  %y.p = alloca i64
  %x.p = alloca i64
  store i64 0, i64* %i.p
  br label %loop
loop:
  %i = load i64, i64* %i.p
  %more = icmp slt i64 %i, %n
  br i1 %more, label %body, label %exit
body:
  %rp = getelementptr double, double* %r, i64 %i
  %rv = load double, double* %rp
  %r2 = fmul double %rv, %rv
  %ci = mul i64 %i, %cstride
  %colp = getelementptr i32, i32* %col, i64 %ci
  %colv = load i32, i32* %colp
{shape}
  %y0n = icmp slt i64 %y0a, 0
  %y0 = select i1 %y0n, i64 0, i64 %y0a
  store i64 %y0, i64* %y.p
  br label %yloop
yloop:
  %y = load i64, i64* %y.p
  %ymore = icmp sle i64 %y, %y1
  br i1 %ymore, label %ybody, label %next
ybody:
  %yf = sitofp i64 %y to double
  %yc = fadd double %yf, 0.5
{row}
  %x0n = icmp slt i64 %x0a, 0
  %x0 = select i1 %x0n, i64 0, i64 %x0a
  %row = mul i64 %y, %w
  store i64 %x0, i64* %x.p
  br label %xloop
xloop:
  %x = load i64, i64* %x.p
  %xmore = icmp sle i64 %x, %x1
  br i1 %xmore, label %xbody, label %ynext
xbody:
  %xf = sitofp i64 %x to double
  %xc = fadd double %xf, 0.5
{pixel}
  %in = fcmp ole double %d2, %r2
  br i1 %in, label %draw, label %xnext
draw:
  %a = call double @cover(double %rv, double %d2)
  %p = add i64 %row, %x
  call void @blend(i32* %canvas, double* %acc, i8* %mask, i64* %list, i64* %cnt, i64 %p,
                   i32 %colv, double %a)
  br label %xnext
xnext:
  %x.n = add i64 %x, 1
  store i64 %x.n, i64* %x.p
  br label %xloop
ynext:
  %y.n = add i64 %y, 1
  store i64 %y.n, i64* %y.p
  br label %yloop
next:
  %i.n = add i64 %i, 1
  store i64 %i.n, i64* %i.p
  br label %loop
exit:
  ret void
}}
"""


def _loads(*names) -> str:
    return "\n".join(f"  %{v}p = getelementptr double, double* %{v}, i64 %i\n"
                     f"  %{v}v = load double, double* %{v}p" for v in names)


_CIRCLES = _SHAPE_LOOP.format(name="circles", params="double* %cx, double* %cy", shape=_loads("cx", "cy") + """
  %xl = fsub double %cxv, %rv
  %xh = fadd double %cxv, %rv
  %yl = fsub double %cyv, %rv
  %yh = fadd double %cyv, %rv
  %x0a = call i64 @clip_floor(double %xl, i64 %w)
  %x1 = call i64 @clip_floor(double %xh, i64 %w)
  %y0a = call i64 @clip_floor(double %yl, i64 %h)
  %y1 = call i64 @clip_floor(double %yh, i64 %h)""", row="""
  %dy = fsub double %yc, %cyv
  %dy2 = fmul double %dy, %dy""", pixel="""
  %dx = fsub double %xc, %cxv
  %dx2 = fmul double %dx, %dx
  %d2 = fadd double %dx2, %dy2""")

_LINES = _SHAPE_LOOP.format(
    name="lines", params="double* %ax, double* %ay, double* %bx, double* %by",
    shape=_loads("ax", "ay", "bx", "by") + """
  %ex = fsub double %bxv, %axv
  %ey = fsub double %byv, %ayv
  %ex2 = fmul double %ex, %ex
  %ey2 = fmul double %ey, %ey
  %ll = fadd double %ex2, %ey2
  %llsmall = fcmp olt double %ll, 1.0e-12
  %den = select i1 %llsmall, double 1.0e-12, double %ll
  %len = call double @llvm.sqrt.f64(double %ll)
  %aey = call double @llvm.fabs.f64(double %ey)
  %hwx0 = fmul double %rv, %len
  %hwx = fdiv double %hwx0, %aey
  %slopex = fdiv double %ex, %ey
  %flat = fcmp oeq double %ey, 0.0
  %xmn.c = fcmp olt double %axv, %bxv
  %xmn = select i1 %xmn.c, double %axv, double %bxv
  %xmx = select i1 %xmn.c, double %bxv, double %axv
  %ymn.c = fcmp olt double %ayv, %byv
  %ymn = select i1 %ymn.c, double %ayv, double %byv
  %ymx = select i1 %ymn.c, double %byv, double %ayv
  %bxl = fsub double %xmn, %rv
  %bxh = fadd double %xmx, %rv
  %byl = fsub double %ymn, %rv
  %byh = fadd double %ymx, %rv
  %y0a = call i64 @clip_floor(double %byl, i64 %h)
  %y1 = call i64 @clip_floor(double %byh, i64 %h)""", row="""
  %py = fsub double %yc, %ayv
  ; the columns whose centres may be within r of the line through the segment (a pixel of
  ; slack each side; the exact test below decides), within the segment's box
  %xline0 = fmul double %py, %slopex
  %xline = fadd double %axv, %xline0
  %sl0 = fsub double %xline, %hwx
  %sl1 = fsub double %sl0, 1.0
  %sh0 = fadd double %xline, %hwx
  %sh1 = fadd double %sh0, 1.0
  %sl2c = fcmp ogt double %sl1, %bxl
  %sl2 = select i1 %sl2c, double %sl1, double %bxl
  %sh2c = fcmp olt double %sh1, %bxh
  %sh2 = select i1 %sh2c, double %sh1, double %bxh
  %lo = select i1 %flat, double %bxl, double %sl2
  %hi = select i1 %flat, double %bxh, double %sh2
  %x0a = call i64 @clip_floor(double %lo, i64 %w)
  %x1 = call i64 @clip_floor(double %hi, i64 %w)""", pixel="""
  %px = fsub double %xc, %axv
  %tx = fmul double %px, %ex
  %ty = fmul double %py, %ey
  %tn = fadd double %tx, %ty
  %t0 = fdiv double %tn, %den
  %tlo = fcmp olt double %t0, 0.0
  %t1 = select i1 %tlo, double 0.0, double %t0
  %thi = fcmp ogt double %t1, 1.0
  %t = select i1 %thi, double 1.0, double %t1
  %qx0 = fmul double %t, %ex
  %qx = fsub double %px, %qx0
  %qy0 = fmul double %t, %ey
  %qy = fsub double %py, %qy0
  %qx2 = fmul double %qx, %qx
  %qy2 = fmul double %qy, %qy
  %d2 = fadd double %qx2, %qy2""")

_TAIL = r"""
declare double @llvm.fabs.f64(double)

; the touched pixels back to bytes: clip(v + 1e-4, 0, 255) truncated (gui._put_blended)
define void @finish(i32* %canvas, double* %acc, i8* %mask, i64* %list, i64 %cnt) {
entry:
  %i.p = alloca i64
  store i64 0, i64* %i.p
  br label %loop
loop:
  %i = load i64, i64* %i.p
  %more = icmp slt i64 %i, %cnt
  br i1 %more, label %body, label %exit
body:
  %lp = getelementptr i64, i64* %list, i64 %i
  %p = load i64, i64* %lp
  %mp = getelementptr i8, i8* %mask, i64 %p
  store i8 0, i8* %mp
  %b0 = mul i64 %p, 3
  %q0 = getelementptr double, double* %acc, i64 %b0
  %v0 = load double, double* %q0
  %c0 = call i32 @byte(double %v0)
  %b1 = add i64 %b0, 1
  %q1 = getelementptr double, double* %acc, i64 %b1
  %v1 = load double, double* %q1
  %c1 = call i32 @byte(double %v1)
  %b2 = add i64 %b0, 2
  %q2 = getelementptr double, double* %acc, i64 %b2
  %v2 = load double, double* %q2
  %c2 = call i32 @byte(double %v2)
  %s0 = shl i32 %c0, 16
  %s1 = shl i32 %c1, 8
  %o0 = or i32 %s0, %s1
  %o1 = or i32 %o0, %c2
  %cp = getelementptr i32, i32* %canvas, i64 %p
  store i32 %o1, i32* %cp
  %i.n = add i64 %i, 1
  store i64 %i.n, i64* %i.p
  br label %loop
exit:
  ret void
}

define private i32 @byte(double %v) alwaysinline {
  %l = fadd double %v, 1.0e-4
  %hi = fcmp ogt double %l, 255.0
  %a = select i1 %hi, double 255.0, double %l
  %lo = fcmp olt double %a, 0.0
  %b = select i1 %lo, double 0.0, double %a
  %i = fptoui double %b to i32
  ret i32 %i
}
"""

_IMAGE = r"""
; set_image: a float image (w, h, c) indexed [x, y] as packed 0x00RRGGBB canvas words, rows
; top first; per channel: NaN and values below 0 -> 0, above 1 -> 1, then * 255 + rounding,
; truncated (f32 throughout, no fused multiply-add); c = 1 is grey
define void @pack_image(float* %src, i32* %canvas, i64 %w, i64 %h, i64 %c, float %round) {
entry:
  %grey = icmp eq i64 %c, 1
  %dg = select i1 %grey, i64 0, i64 1
  %db = select i1 %grey, i64 0, i64 2
  %top = sub i64 %h, 1
  br label %xloop
xloop:
  %x = phi i64 [ 0, %entry ], [ %x.n, %xnext ]
  %xin = icmp slt i64 %x, %w
  br i1 %xin, label %xbody, label %exit
xbody:
  %base = mul i64 %x, %h
  br label %yloop
yloop:
  %y = phi i64 [ 0, %xbody ], [ %y.n, %ybody ]
  %yin = icmp slt i64 %y, %h
  br i1 %yin, label %ybody, label %xnext
ybody:
  %pix = add i64 %base, %y
  %e0 = mul i64 %pix, %c
  %e1 = add i64 %e0, %dg
  %e2 = add i64 %e0, %db
  %p0 = getelementptr float, float* %src, i64 %e0
  %p1 = getelementptr float, float* %src, i64 %e1
  %p2 = getelementptr float, float* %src, i64 %e2
  %v0 = load float, float* %p0
  %v1 = load float, float* %p1
  %v2 = load float, float* %p2
  %r = call i32 @unit_byte(float %v0, float %round)
  %g = call i32 @unit_byte(float %v1, float %round)
  %b = call i32 @unit_byte(float %v2, float %round)
  %rs = shl i32 %r, 16
  %gs = shl i32 %g, 8
  %rg = or i32 %rs, %gs
  %word = or i32 %rg, %b
  %row = sub i64 %top, %y
  %at0 = mul i64 %row, %w
  %at = add i64 %at0, %x
  %cp = getelementptr i32, i32* %canvas, i64 %at
  store i32 %word, i32* %cp
  %y.n = add i64 %y, 1
  br label %yloop
xnext:
  %x.n = add i64 %x, 1
  br label %xloop
exit:
  ret void
}

define private i32 @unit_byte(float %v, float %round) alwaysinline {
  %pos = fcmp ogt float %v, 0.0
  %a = select i1 %pos, float %v, float 0.0
  %low = fcmp olt float %a, 1.0
  %b = select i1 %low, float %a, float 1.0
  %s = fmul float %b, 255.0
  %t = fadd float %s, %round
  %i = fptoui float %t to i32
  ret i32 %i
}
"""

_IR = _COMMON + _CIRCLES + _LINES + _TAIL

_lock = threading.Lock()
_fns = None  # (circles, lines, finish, engine) once compiled
_P = ctypes.c_void_p
_I = ctypes.c_int64


def _compiled():
    """The compiled functions (compiled at the first call; kept for the process)."""
    global _fns
    if _fns is not None:
        return _fns
    with _lock:
        if _fns is None:
            engine, mod, tm = _build(_IR)
            circles = ctypes.CFUNCTYPE(None, _I, _P, _P, _P, _P, _I, _I, _I, _P, _P, _P, _P, _P)(
                engine.get_function_address("circles"))
            lines = ctypes.CFUNCTYPE(None, _I, _P, _P, _P, _P, _P, _P, _I, _I, _I, _P, _P, _P, _P,
                                     _P)(engine.get_function_address("lines"))
            finish = ctypes.CFUNCTYPE(None, _P, _P, _P, _P, _I)(engine.get_function_address("finish"))
            _fns = (circles, lines, finish, engine, mod, tm)
    return _fns


def _build(ir: str):
    """(engine, module, target machine) of the LLVM IR `ir`, optimised and JIT-compiled."""
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    tm = llvm.Target.from_default_triple().create_target_machine(opt=2)
    mod = llvm.parse_assembly(ir)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=2)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    return engine, mod, tm


_image = None  # (pack_image, engine, module, machine) once compiled
_image_thread = None


def start_image_compile():
    """Begins compiling `pack_image` on a thread, once per process (a GUI calls this when it
    is made; the thread is not a daemon: a process leaving soon after waits for it, not
    LLVM for a thread it tears down)."""
    global _image_thread
    with _lock:
        if _image_thread is None:
            _image_thread = threading.Thread(target=_compile_image, name="fieldsim-gui-image")
            _image_thread.start()


def wait_image_compile():
    """Blocks until `pack_image` is compiled (started if it was not)."""
    start_image_compile()
    _image_thread.join()


def _compile_image():
    global _image
    engine, mod, tm = _build(_IMAGE)
    fn = ctypes.CFUNCTYPE(None, _P, _P, _I, _I, _I, ctypes.c_float)(
        engine.get_function_address("pack_image"))
    _image = (fn, engine, mod, tm)


class Scratch:
    """A canvas's float work image, touched-pixel mask and list, reused from call to call."""

    def __init__(self, npix: int):
        self.acc = np.empty(3 * npix)
        self.mask = np.zeros(npix, np.uint8)
        self.list = np.empty(npix, np.int64)
        self.cnt = np.zeros(1, np.int64)


def _ptr(a: np.ndarray):
    return a.ctypes.data


def _f64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def draw(kind: str, canvas: np.ndarray, scratch: Scratch, res, shapes, radii, colors):
    """Draw circles (``shapes = (cx, cy)``) or lines (``(ax, ay, bx, by)``), in pixels with y
    down, radii ``radii`` and packed colours ``colors`` (one, or one per shape), on the packed
    C-contiguous ``canvas`` of ``res = (width, height)``. Every value must be finite."""
    circles, lines, finish = _compiled()[:3]
    n = len(radii)
    cols = np.ascontiguousarray(colors, dtype=np.uint32)
    stride = 0 if cols.size == 1 else 1
    arrays = [_f64(a) for a in shapes] + [_f64(radii)]
    w, h = int(res[0]), int(res[1])
    scratch.cnt[0] = 0
    tail = (w, h, _ptr(canvas), _ptr(scratch.acc), _ptr(scratch.mask), _ptr(scratch.list),
            _ptr(scratch.cnt))
    fn = circles if kind == "circles" else lines
    fn(n, *(_ptr(a) for a in arrays), _ptr(cols), stride, *tail)
    finish(_ptr(canvas), _ptr(scratch.acc), _ptr(scratch.mask), _ptr(scratch.list),
           int(scratch.cnt[0]))


def pack_image(img: np.ndarray, canvas: np.ndarray, rounding: float) -> bool:
    """The float image ``img`` of shape ``(W, H, 1|3|4)`` (indexed ``[x, y]``) into the
    packed C-contiguous ``canvas`` of shape ``(H, W)``, rows top first, in one pass: True; or
    False, writing nothing, while the compiled loop is not ready yet."""
    image = _image
    if image is None:
        return False
    src = np.ascontiguousarray(img, dtype=np.float32)
    w, h, c = src.shape
    image[0](_ptr(src), _ptr(canvas), w, h, c, rounding)
    return True
