"""Backends: LLVM lowering shared by all targets (llvm.py), the CPU JIT (cpu.py), CUDA (cuda.py)."""
