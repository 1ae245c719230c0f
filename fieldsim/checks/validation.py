"""`Tape(validation=True)`: the per-element run-time check of what the static checker left open.

Takes a compiled kernel launched on a validating Tape and the `tape_rules.Checked` record that
`TapeState.launch` made for the launch (undecided in-kernel findings, data-dependent reads whose
elements the Tape must learn, writes to compare with earlier reads). `runner(...)` returns a
callable that runs the launch *instead of* the plain program, once:

* an instrumented copy of the kernel IR (made and compiled once per `CompiledKernel`) runs with
  the same arguments and RNG key, so its results are the plain kernel's. Next to each access it
  watches (those named in an undecided finding, and every read or write whose element set is
  inexact), it ORs a bit mask into a hidden i32 (or i64) field shaped like the target field: READ, the
  write class (ADD, STORE, MIN, MAX) and one bit per access site. The old mask decides, per
  element and exactly, the rule breaks that follow in time (rule 1: a write after a read; rule 2:
  a non-accumulating write after a write), and records the offending site into a hidden
  violation field. What the old mask cannot see is a read after another thread's write, or an
  add after another thread's store (threads run in no fixed order, so both break the rules):
  in a parallel task, an owner (atomic max of the thread's loop index) and a witness (set by
  the first other thread to come) per element, in hidden i32 fields, decide those exactly.
  Serial tasks are one thread: program order decides there. A field with one watched read and
  nothing to check gets a plain store of its bits instead of an atomic.
* before the run, what the launch may write is copied (the hulls of its write boxes); on a
  violation it is restored,
  the launch is dropped from the Tape and its checker state (`TapeState.discard`), and
  `AccessRuleError` names the rule, kernel, field, the element (`x[17]`) and both accesses.
  Inside a `grad_replaced` unit the in-kernel rules are not checked (as statically).
* otherwise the run stands: the actual read and write sets go to `TapeState.resolve`, which
  makes rule 1 across launches exact and refuses (with the same undo) a write that hit an element
  an earlier launch read.

Limits: a field with more than 58 watched access sites shares the last site bit among the
rest, so naming (and a read set of one of those sites) may then cover more than that site.
A launch in `fs.ad.FwdMode` runs the fused tangent program, which is not instrumented: there the
undecided finding is refused as without validation.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from dataclasses import field as dc_field

import numpy as np

from fieldsim.checks.access_rules import (
    RULE_TEXT,
    Access,
    AccessKind,
    Finding,
    Verdict,
    access_lines,
    fix_hint,
    is_parallel_task,
    to_error,
)
from fieldsim.checks.boxes import box_of, box_slices, exact_box
from fieldsim.checks.index_expr import Affine, Arg
from fieldsim.checks.tape_rules import Checked, TapeState
from fieldsim.errors import AccessRuleError
from fieldsim.ir import dtypes as T
from fieldsim.ir.builder import IRBuilder
from fieldsim.ir.ir import Kernel, Op, Stmt
from fieldsim.ir.printer import field_name

READ, ADD, STORE, MIN, MAX = 1, 2, 4, 8, 16
WRITE_BITS = ADD | STORE | MIN | MAX
_SITE_BIT0, _SITE_BITS = 5, 58
_I32_MAX, _I32_MIN = np.iinfo(np.int32).max, np.iinfo(np.int32).min
# rule 2: the earlier write classes a write of each class may not follow
_RULE2 = {STORE: WRITE_BITS, ADD: 0, MIN: ADD | STORE | MAX, MAX: ADD | STORE | MIN}


@dataclass(eq=False)
class Site:
    """One watched LOAD/STORE/ATOMIC statement (an ATOMIC may both read and write)."""

    number: int
    stmt: Stmt
    field: object
    task: int
    parallel: bool
    bit: int
    read: bool = False
    wclass: int = 0
    accesses: list = dc_field(default_factory=list)
    check: int = 0  # mask bits whose earlier presence breaks a rule at this site


@dataclass(eq=False)
class TaskTags:
    """Hidden per-(field, parallel task) fields: the classes seen per element (None: the field's
    own mask, when all its sites are in this task), and (owner, witness) pairs: owner = atomic
    max of the threads that touched the element; a thread that finds another owner there puts
    the smaller of the two into witness (atomic min), so witness is set exactly when two
    different threads touched the element, and (witness, owner) are two of them."""

    classes: object = None
    rw: tuple | None = None  # over reads and writes: rule 1 between threads
    w: tuple | None = None  # over writes: rule 2 between threads


@dataclass(eq=False)
class FieldTags:
    field: object
    mask: object
    sites: list
    viol: object = None
    tasks: dict = dc_field(default_factory=dict)
    plain: bool = False  # one site, nothing to check: a plain store of its bits suffices


def _class_of(a: Access) -> int:
    if a.kind is AccessKind.ATOMIC_ADD:
        return ADD
    if a.kind is AccessKind.ATOMIC_OTHER and a.op in ("min", "max"):
        return MIN if a.op == "min" else MAX
    return STORE


def _has_grad(f) -> bool:
    return getattr(f, "adjoint", None) is not None


# ------------------------------------------------------------------------------------ the plan
def watched_sites(check) -> list[Site]:
    """Accesses named in an undecided finding, and reads/writes whose element set some launch
    may find inexact (the Tape then asks for the elements they touched)."""
    chosen = {id(a): a for f in check.symbolic if f.verdict is Verdict.UNDECIDED for a in (f.first, f.second)}
    for a in check.accesses:
        if _may_be_inexact(a):
            chosen.setdefault(id(a), a)
    by_stmt: dict[int, Site] = {}
    per_field: dict[int, int] = {}
    order = sorted(chosen.values(), key=lambda a: (a.is_write, a.position))  # reads get bits first
    for a in order:
        site = by_stmt.get(id(a.stmt))
        if site is None:
            k = per_field.get(id(a.field), 0)
            per_field[id(a.field)] = k + 1
            site = Site(len(by_stmt), a.stmt, a.field, a.task_index, a.thread_mode == "parallel",
                        1 << (_SITE_BIT0 + min(k, _SITE_BITS - 1)))
            by_stmt[id(a.stmt)] = site
        site.accesses.append(a)
        if a.is_write:
            site.wclass = _class_of(a)
        else:
            site.read = True
    return sorted(by_stmt.values(), key=lambda s: s.number)


def _may_be_inexact(a: Access) -> bool:
    """Can a launch's box of `a` (`boxes.LaunchBoxes.of_launch`) be inexact? A guarded access's
    always is (`boxes.guarded_box`). Else a launch makes the kernel's integer arguments
    constants, which leaves a component exact where it is exact without them (a loop whose
    bounds use an argument counts as inexact): `x[t, i]` is exact at every launch."""
    if a.guards:
        return True
    fixed = tuple(Affine(f.const, {t: c for t, c in f.terms.items() if not isinstance(t, Arg)})
                  for f in a.indices)
    return not exact_box(box_of(replace(a, indices=fixed), {}))


def _tag(dtype, field, what: str):
    from fieldsim.lang.field import Field
    return Field(dtype, tuple(field.storage_shape), f"{field.ir_name}.{what}", _role="validation")


def make_tags(sites: list[Site]) -> list[FieldTags]:
    groups: dict[int, list[Site]] = {}
    for s in sites:
        groups.setdefault(id(s.field), []).append(s)
    out = []
    for group in groups.values():
        f = group[0].field
        wide = len(group) > 32 - _SITE_BIT0 - 1  # i32 masks hold the bits of up to 26 sites
        ft = FieldTags(f, _tag(T.i64 if wide else T.i32, f, "touched"), group)
        any_read = any(s.read for s in group)
        for s in group:
            if s.wclass:
                s.check = (READ if any_read else 0) | (_RULE2[s.wclass] if _has_grad(f) else 0)
        if any(s.check for s in group):
            ft.viol = _tag(T.i32, f, "violation")
        one_task = len({s.task for s in group}) == 1
        for task in sorted({s.task for s in group if s.parallel}):
            here = [s for s in group if s.task == task]
            classes = {s.wclass for s in here if s.wclass}
            tt = TaskTags()
            # a write that follows (in time) a read or a write it may not follow is caught by
            # its own check; what is left between threads: a read after another thread's
            # write (rule 1), an add after another thread's non-add write (rule 2)
            if any(s.read for s in here) and classes:
                tt.rw = (_tag(T.i32, f, f"t{task}.rw_owner"), _tag(T.i32, f, f"t{task}.rw_witness"))
            if _has_grad(f) and ADD in classes and len(classes) > 1:
                tt.w = (_tag(T.i32, f, f"t{task}.w_owner"), _tag(T.i32, f, f"t{task}.w_witness"))
            if tt.rw or tt.w:
                tt.classes = None if one_task else _tag(T.i32, f, f"t{task}.classes")
                ft.tasks[task] = tt
        ft.plain = len(group) == 1 and not group[0].check and not ft.tasks
        out.append(ft)
    return out


# ---------------------------------------------------------------------------- instrumentation
def instrument(kernel: Kernel, tags: list[FieldTags]) -> Kernel:
    """A copy of `kernel` with the tag updates after each watched access (new statements
    throughout: the original IR is left as it is)."""
    sites = {id(s.stmt): (s, ft) for ft in tags for s in ft.sites}
    vmap: dict[int, Stmt] = {}

    def clone(block, tid) -> list[Stmt]:
        out: list[Stmt] = []
        b = IRBuilder(out)
        for s in block:
            new = b.clone(s, vmap)
            new.blocks = [clone(blk, tid) for blk in s.blocks]
            if id(s) in sites:
                out.extend(_marks(new, *sites[id(s)], tid))
        return out

    body = []
    for s in kernel.body:
        tid = None
        if is_parallel_task(s):  # as `Access.thread_mode`, hence `Site.parallel`
            tid = IRBuilder([]).clone(s, vmap)
            tid.blocks = [clone(b, tid) for b in s.blocks]
            body.append(tid)
            continue
        new = clone([s], None)
        body.append(new[0])
        if len(new) > 1:  # a watched prologue load: mark it in a task of its own, right after it
            body.append(Stmt(Op.SERIAL, None, blocks=[new[1:]], loc=s.loc))
    return Kernel(kernel.name, kernel.params, body, kernel.ret, kernel.loc, dict(kernel.meta),
                  kernel.funcs)


def _marks(access: Stmt, site: Site, ft: FieldTags, tid) -> list[Stmt]:
    """The statements that follow one watched access: its bits into the field's mask; in a
    checked site, a rule break the old mask shows into the violation field; in a parallel task,
    the thread's classes and owner/witness marks."""
    out: list[Stmt] = []
    b = IRBuilder(out, loc=access.loc)
    idx = access.indices
    bits = (READ if site.read else 0) | site.wclass
    if ft.plain:
        b.store(ft.mask, idx, _mask_const(b, ft, bits | site.bit))
        return out
    old = b.atomic("or", ft.mask, idx, _mask_const(b, ft, bits | site.bit))
    if site.check:
        _record_violation(b, ft, idx, site, old)
    tt = ft.tasks.get(site.task)
    if tid is not None and tt is not None:
        _mark_thread(b, tt, idx, bits, tid, site.wclass)
    return out


def _mask_const(b: IRBuilder, ft: FieldTags, v: int) -> Stmt:
    return b.const(v, ft.mask.dtype)


def _any_bit(b: IRBuilder, ft: FieldTags, v: Stmt, bits: int) -> Stmt:
    """`(v & bits) != 0` in the mask's dtype."""
    return b.binary(Op.NE, b.binary(Op.BIT_AND, v, _mask_const(b, ft, bits)), _mask_const(b, ft, 0))


def _record_violation(b: IRBuilder, ft: FieldTags, idx, site: Site, old: Stmt):
    """Where the old mask has a bit this site may not follow: atomic max of the site's code
    into the violation field ((number + 1) * 4, + 1 after a read, + 2 after a forbidden write)."""
    with b.into(b.if_(_any_bit(b, ft, old, site.check)).blocks[0]):
        code = b.const((site.number + 1) * 4, T.i32)
        if site.check & READ:
            code = b.add(code, _any_bit(b, ft, old, READ))
        if site.check & WRITE_BITS:
            r2 = _any_bit(b, ft, old, site.check & WRITE_BITS)
            code = b.add(code, b.add(r2, r2))
        b.atomic("max", ft.viol, idx, code)


def _mark_thread(b: IRBuilder, tt: TaskTags, idx, bits: int, tid: Stmt, wclass: int):
    """In a parallel task: the site's classes, and per (owner, witness) pair the thread as
    owner; a thread that finds another owner puts the smaller of the two into the witness."""
    if tt.classes is not None:
        b.atomic("or", tt.classes, idx, b.const(bits, T.i32))
    for pair in (tt.rw, tt.w if wclass else None):
        if pair is None:
            continue
        owner = b.atomic("max", pair[0], idx, tid)
        other = b.binary(Op.BIT_AND, b.binary(Op.NE, owner, b.const(_I32_MIN, T.i32)),
                         b.binary(Op.NE, owner, tid))
        with b.into(b.if_(other).blocks[0]):
            b.atomic("min", pair[1], idx, b.binary(Op.MIN, owner, tid))


# ------------------------------------------------------------------------------- run and judge
class Instrumented:
    """The instrumented program of one compiled kernel and its hidden fields."""

    def __init__(self, ck, check, rt):
        from fieldsim.ir.passes.run import run_pass
        self.sites = watched_sites(check)
        self.tags = make_tags(self.sites)
        self.can_refuse = any(ft.viol is not None or ft.tasks for ft in self.tags)
        ir = run_pass("validation", instrument, ck.ir, self.tags, verify=rt.debug)
        self.ir = ir
        self.program = rt.backend().compile(ir, rt)

    def reset(self):
        for ft in self.tags:
            ft.mask.storage.zero()
            if ft.viol is not None:
                ft.viol.storage.zero()
            for tt in ft.tasks.values():
                if tt.classes is not None:
                    tt.classes.storage.zero()
                for pair in (tt.rw, tt.w):
                    if pair is not None:
                        pair[0].storage.fill(np.int32(_I32_MIN))
                        pair[1].storage.fill(np.int32(_I32_MAX))

    def collect(self, kernel_name: str, findings: list[Finding], need: set, judge: bool = True):
        """(violation error or None, read sets, write sets): the element sets of the accesses
        whose statement ids are in `need`, keyed by id(Access.stmt). `judge` False (inside a
        unit): the in-kernel rules are not judged."""
        reads, writes, error = {}, {}, None
        for ft in self.tags:
            mask = _view(ft.mask)
            for s in ft.sites:
                if id(s.stmt) in need:
                    hit = (mask & s.bit) != 0
                    for a in s.accesses:
                        (writes if a.is_write else reads)[id(a.stmt)] = hit
            if error is None and judge:
                error = self._judge(ft, mask, kernel_name, findings)
        return error, reads, writes

    def _judge(self, ft: FieldTags, mask, kernel_name, findings):
        viol = _view(ft.viol) if ft.viol is not None else None
        if viol is not None and viol.any():
            bad = np.argwhere(viol)
            e = tuple(bad[0])
            code = int(viol[e])
            second = self.sites[code // 4 - 1]
            rule = 1 if code & 1 else 2
            first = _partner(ft, mask[e], second, rule, findings)
            return _error(rule, kernel_name, ft.field, e, len(bad), first, second, None)
        for task, tt in ft.tasks.items():
            classes = mask if tt.classes is None else _view(tt.classes)
            for rule, pair in ((1, tt.rw), (2, tt.w)):
                if pair is None:
                    continue
                hi, lo = _view(pair[0]), _view(pair[1])
                k = classes & WRITE_BITS
                if rule == 1:
                    broken = ((classes & READ) != 0) & (k != 0) & (lo < hi)
                else:
                    broken = (k != 0) & (k != ADD) & (k != MIN) & (k != MAX) & (lo < hi)
                bad = np.argwhere(broken)
                if len(bad):
                    e = tuple(bad[0])
                    here = [s for s in ft.sites if s.task == task and mask[e] & s.bit]
                    writers = sorted((s for s in here if s.wclass), key=lambda s: s.wclass == ADD)
                    second = (writers or here or ft.sites)[0]
                    first = _partner(ft, mask[e], second, rule, findings, task)
                    threads = (int(lo[e]), int(hi[e]))
                    return _error(rule, kernel_name, ft.field, e, len(bad), first, second, threads)
        return None


def _view(tag):
    """A hidden field's data, without a copy where the backend keeps it in host memory."""
    array = getattr(tag.storage, "array", None)
    return array if isinstance(array, np.ndarray) else tag.storage.to_numpy()


def _partner(ft: FieldTags, bits, second: Site, rule: int, findings, task=None) -> Site:
    """The site that touched the element first: one that reads it (rule 1) or writes it (rule 2),
    preferring the pair an undecided finding names."""
    here = [s for s in ft.sites if bits & s.bit and (task is None or s.task == task)
            and (s.read if rule == 1 else s.wclass)]
    named = {(id(f.first.stmt), id(f.second.stmt)) for f in findings if f.rule == rule}
    paired = [s for s in here if (id(s.stmt), id(second.stmt)) in named]
    for pool in (paired, here):
        other = [s for s in pool if s is not second]
        if other:
            return other[0]
    return (paired or here or [second])[0]


def _access(site: Site, write: bool) -> Access:
    return next((a for a in site.accesses if a.is_write == write), site.accesses[0])


def _error(rule, kernel_name, field, element, count, first: Site, second: Site, threads):
    name = field_name(field)
    text = f"{name}[{', '.join(str(int(i)) for i in element) or 'None'}]"
    a, b = _access(first, rule == 2), _access(second, True)
    more = f" (and {count - 1} more element{'s' * (count > 2)})" if count > 1 else ""
    if threads is not None:
        line = f" at line {b.loops[0].loc.line}" if b.loops and b.loops[0].loc else ""
        rel = (f"At run time both touched {text}{more}, from different threads of the parallel "
               f"loop{line} (iterations {threads[0]} and {threads[1]}, which run in no fixed "
               "order).")
    else:
        done = "read" if rule == 1 else "written"
        rel = (f"At run time the offending access wrote {text}{more} after the first access had "
               f"{done} it.")
    message = "\n".join([
        RULE_TEXT[rule],
        (f"Kernel '{kernel_name}' breaks it on field '{name}' at element {text} (checked per "
         "element at run time by Tape(validation=True)):"),
        access_lines(a, b), rel,
        "The launch was undone: the fields it writes hold their values from before it.",
        "To fix: " + fix_hint(rule, b, "thread" if threads is not None else "same")])
    related = (("earlier access", a.loc),) if a.loc is not None else ()
    return AccessRuleError(message, loc=b.loc, related=related)


class Runner:
    """Runs one validated launch in place of the plain program (see the module docstring)."""

    def __init__(self, ck, kernel_name: str, found: Checked, state: TapeState):
        self.ck, self.name, self.found, self.state = ck, kernel_name, found, state
        self.undo = None  # set by the Tape: drops the launch's entry

    def __call__(self, program, values, rng_key):
        from fieldsim.lang import runtime
        rt = runtime.get()
        found = self.found
        if program is not self.ck.program:  # FwdMode runs its fused tangent program
            if found.in_kernel or found.captures or found.unresolved:
                self._refuse("it runs inside fs.ad.FwdMode, whose fused tangent program is not "
                             "instrumented")
            return rt.backend().launch(program, values, rng_key)  # its reads stay undecided
        if found.unresolved:
            self._refuse("the elements the earlier launch read were not recorded")
        inst = getattr(self.ck, "validation", None)
        if inst is None:
            inst = self.ck.validation = Instrumented(self.ck, self.state.kernel_check(self.ck.ir), rt)
        inst.reset()
        judge = found.kernel_checked
        risky = found.captures or (judge and inst.can_refuse)
        saved = _snapshot(found.entries) if risky else []
        result = rt.backend().launch(inst.program, values, rng_key)
        try:
            need = {id(a.stmt) for _, a in found.reads}
            need |= {id(origin.access.stmt) for origin, _, _ in found.captures}
            error, reads, writes = inst.collect(self.name, found.in_kernel, need, judge)
            if error is not None:
                raise error
            self.state.resolve(found, reads, writes)
            self.ck.checked = self.ck.checked or found.kernel_checked
        except AccessRuleError:
            for target, where, data in saved:
                if where is None:
                    target.from_numpy(data)
                else:
                    target[where] = data
            self._drop()
            raise
        return result

    def _refuse(self, why: str):
        self._drop()
        worst = (self.found.unresolved or self.found)[0]
        raise AccessRuleError(f"{worst.message}\nTape(validation=True) cannot check this launch "
                              f"at run time: {why}.", loc=worst.second.loc,
                              related=to_error(worst).related)

    def _drop(self):
        self.state.discard(self.found)
        if self.undo is not None:
            self.undo()


def _snapshot(entries) -> list:
    """(target, where, data) to undo a launch with: per write box (`Checked.entries`), the hull
    of the elements it may write, from a field kept in host memory; else the whole field."""
    saved, whole = [], set()
    for a, box, _ in entries:
        if not a.is_write:
            continue
        storage = a.field.storage
        array = getattr(storage, "array", None)
        if isinstance(array, np.ndarray):
            where = box_slices(box, array.shape)
            saved.append((array, where, array[where].copy()))
        elif id(storage) not in whole:
            whole.add(id(storage))
            saved.append((storage, None, storage.to_numpy()))
    return saved


def runner(ck, kernel_name: str, found: Checked, state: TapeState) -> Runner | None:
    """The callable that runs this launch checked, or None when the plain run is exact."""
    if not state.validation or not (found.needs_run or found.unresolved):
        return None
    return Runner(ck, kernel_name, found, state)
