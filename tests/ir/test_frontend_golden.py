"""Golden IR tests: the frontend + offload output for representative kernels.

A change in these strings is a change in the IR the rest of the pipeline sees; review the diff.
"""
from support.ir_kit import compiled_ir

import fieldsim as fs
from fieldsim.ir.printer import print_kernel


def ir_of(kern, *args):
    return print_kernel(compiled_ir(kern, *args))


def make_kernels():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=8, name="x")
    y = fs.field(fs.f32, shape=(4, 2), name="y")
    v = fs.Vector.field(2, fs.f32, shape=8, name="v")
    loss = fs.field(fs.f32, shape=(), name="loss")

    @fs.kernel
    def k_struct_for(a: fs.f32):
        for i, j in y:
            y[i, j] = x[i + j] * a

    @fs.kernel
    def k_control():
        for i in range(8):
            s = 0.0
            for k in range(i):
                if k % 2 == 0:
                    s += x[k]
                else:
                    continue
            v[i] = fs.Vector([s, -s])

    @fs.kernel
    def k_tasks(n: fs.i32):
        total = 0.0
        for i in range(n):
            total += x[i]
        loss[None] = total * 2

    return k_struct_for, k_control, k_tasks


EXPECTED_K_STRUCT_FOR = """\
kernel k_struct_for(a: f32):
  %0 = arg.f32 arg0
  %1 = const.i32 0
  %2 = const.i32 8
  %3 = for.i32 parallel %1, %2 {
    %4 = const.i32 2
    %5 = floordiv.i32 %3, %4
    %6 = const.i32 2
    %7 = mod.i32 %3, %6
    %8 = add.i32 %5, %7
    %9 = load.f32 x[%8]
    %10 = mul.f32 %9, %0
    store y[%5, %7], %10
  }
"""

EXPECTED_K_CONTROL = """\
kernel k_control():
  %0 = const.i32 0
  %1 = const.i32 8
  %2 = for.i32 parallel %0, %1 {
    %3 = alloca.f32
    %4 = const.f32 0.0
    local_store %3, %4
    %5 = const.i32 0
    %6 = for.i32 %5, %2 {
      %7 = const.i32 2
      %8 = mod.i32 %6, %7
      %9 = const.i32 0
      %10 = eq.i32 %8, %9
      if %10 {
        %11 = load.f32 x[%6]
        %12 = local_load.f32 %3
        %13 = add.f32 %12, %11
        local_store %3, %13
      } else {
        continue
      }
    }
    %14 = local_load.f32 %3
    %15 = local_load.f32 %3
    %16 = neg.f32 %15
    %17 = const.i32 0
    %18 = const.i32 1
    store v[%2, %17], %14
    store v[%2, %18], %16
  }
"""

EXPECTED_K_TASKS = """\
kernel k_tasks(n: i32):
  %0 = arg.i32 arg0
  %1 = const.f32 0.0
  %2 = const.i32 0
  serial {
    store k_tasks.total[], %1
  }
  %3 = for.i32 parallel %2, %0 {
    %4 = load.f32 x[%3]
    %5 = atomic_add.f32 k_tasks.total[], %4
  }
  %6 = const.f32 2.0
  serial {
    %7 = load.f32 k_tasks.total[]
    %8 = mul.f32 %7, %6
    store loss[], %8
  }
"""


def test_golden_frontend_ir():
    k_struct_for, k_control, k_tasks = make_kernels()
    assert ir_of(k_struct_for, 1.0) == EXPECTED_K_STRUCT_FOR.rstrip("\n")
    assert ir_of(k_control) == EXPECTED_K_CONTROL.rstrip("\n")
    assert ir_of(k_tasks, 8) == EXPECTED_K_TASKS.rstrip("\n")
