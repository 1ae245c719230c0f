"""Lifetimes of the LLVM objects behind compiled CPU kernels: what is freed, and when.

Takes llvmlite objects (modules, pass builders, pass managers, target machines, object files)
and compiled object files; guarantees:

- `dispose(*objs)` frees llvmlite objects now. It works around llvmlite's (0.44-0.50 at least)
  `ModulePassManager`/`FunctionPassManager`, whose `close()` frees nothing: their C++
  destructor is `NewPassManager._dispose`, shadowed in the MRO by `ObjectRef._dispose` (a
  no-op), so every O3 pipeline built and run stayed in memory (about 70 KB per compile).
- `EngineSlabs.load(symbol, obj, tasks)` loads an object file into an MCJIT engine and returns
  a `Code` (the task addresses). An engine takes at most `SLAB` objects; it is freed once it
  takes no more and no `Code` in it is referenced any longer (a garbage-collected kernel
  releases its machine code, in groups of `SLAB`), and `close()` (`fs.reset()`, a new
  `fs.init()`) frees every engine at once and marks every `Code` closed, so a program of a
  previous init can never jump into freed memory. The same symbol loaded twice while its
  first `Code` lives shares that `Code`.
- Engines are disposed only by `load` and `close`, which callers run under their LLVM lock:
  a `Code` that dies on another thread (a garbage collection) only queues its engine.

Why slabs and not one engine per kernel: a fresh engine costs about 0.2 ms and 30 KB beyond
the object it holds (its target machine, memory manager, linker state); one shared engine for
all kernels can never give code back (MCJIT cannot remove an object file).
"""
from __future__ import annotations

import weakref

import llvmlite.binding as llvm
from llvmlite.binding import ffi
from llvmlite.binding.newpassmanagers import NewPassManager

SLAB = 16  # objects per MCJIT engine: amortises an engine's cost, bounds what a live kernel pins


def dispose(*objs) -> None:
    """Free llvmlite objects now (None entries are skipped)."""
    for obj in objs:
        if obj is None or obj.closed:
            continue
        if isinstance(obj, NewPassManager) and type(obj)._dispose is ffi.ObjectRef._dispose:
            # llvmlite's pass managers: close() alone would free nothing (see above)
            NewPassManager._dispose(obj)
            obj.detach()
        else:
            obj.close()


class Code:
    """One object file loaded into an engine: its task functions' addresses. `closed` once
    the engine is freed by `EngineSlabs.close`."""

    __slots__ = ("__weakref__", "addresses", "closed", "slab")

    def __init__(self, addresses, slab):
        self.addresses, self.slab = addresses, slab
        self.closed = False  # a plain attribute: every launch reads it


class _Slab:
    """One MCJIT engine and the objects it took (symbol -> task addresses). When it dies (no
    `Code` refers to it and the owner took a new slab), its engine is queued for
    `EngineSlabs` to dispose."""

    __slots__ = ("__weakref__", "engine", "graveyard", "symbols")

    def __init__(self, engine, graveyard):
        self.engine, self.symbols, self.graveyard = engine, {}, graveyard

    def __del__(self):
        if self.engine is not None:
            self.graveyard.append(self.engine)  # list.append: atomic, safe from any thread


class EngineSlabs:
    """The MCJIT engines of one CPU backend (see the module docstring)."""

    def __init__(self, triple: str, cpu: str, features: str):
        self.triple, self.cpu, self.features = triple, cpu, features
        self.current: _Slab | None = None  # the slab new objects go to
        self.slabs: weakref.WeakSet = weakref.WeakSet()  # every slab not yet freed
        self.codes: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # symbol -> Code
        # symbol -> the live slab holding it: a symbol whose Code died while its slab lives is
        # not loaded a second time into an engine that defines it already
        self.slab_of: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self.graveyard: list = []  # engines of dead slabs, disposed by the next load or close
        self.engines_made = 0

    def get(self, symbol: str) -> Code | None:
        """The `Code` of a symbol already loaded in a live engine, else None. The caller holds
        the LLVM lock."""
        code = self.codes.get(symbol)
        if code is None:
            slab = self.slab_of.get(symbol)
            if slab is not None and slab.engine is not None:
                code = self.codes[symbol] = Code(slab.symbols[symbol], slab)
        return code

    def load(self, symbol: str, obj: bytes, task_symbols) -> Code:
        """The `Code` of `symbol`: loaded from `obj` unless a live engine has it already, its
        `task_symbols` looked up (an address is 0 when the object lacks one). The caller holds
        the LLVM lock."""
        self._bury()
        code = self.get(symbol)
        if code is not None:
            return code
        slab = self.current
        if slab is None or len(slab.symbols) >= SLAB:
            slab = self.current = _Slab(self._new_engine(), self.graveyard)
            self.slabs.add(slab)
            self._bury()  # the previous open slab, if none of its kernels lives
        ref = llvm.ObjectFileRef.from_data(obj)
        slab.engine.add_object_file(ref)
        dispose(ref)  # the engine took the object's bytes; the wrapper is empty
        slab.engine.finalize_object()
        slab.symbols[symbol] = [slab.engine.get_function_address(s) for s in task_symbols]
        self.slab_of[symbol] = slab
        code = self.codes[symbol] = Code(slab.symbols[symbol], slab)
        return code

    def _new_engine(self):
        tm = llvm.Target.from_triple(self.triple).create_target_machine(
            cpu=self.cpu, features=self.features, opt=3, jit=True)
        # llvmlite wants a module to make an engine; removed at once, so that finalizing
        # does not run a code generator over it (0.5 ms) and the engine owns no IR
        empty = llvm.parse_assembly("")
        engine = llvm.create_mcjit_compiler(empty, tm)  # owns (and frees) tm
        engine.remove_module(empty)
        dispose(empty)
        self.engines_made += 1
        return engine

    def _bury(self):
        while self.graveyard:
            dispose(self.graveyard.pop())

    def live_engines(self) -> int:
        return sum(1 for s in list(self.slabs) if s.engine is not None)

    def close(self):
        """Free every engine; every `Code` becomes closed. The caller holds the LLVM lock."""
        self.current = None
        for code in list(self.codes.values()):  # every live Code is there (see `get`)
            code.closed = True
        for slab in list(self.slabs):
            engine, slab.engine = slab.engine, None
            if engine is not None:
                dispose(engine)
        self.codes.clear()
        self.slab_of.clear()
        self._bury()
