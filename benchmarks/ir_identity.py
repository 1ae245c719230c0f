"""Whether two trees hand LLVM the same code for the benchmark programs: a noise-free speed check.

    python benchmarks/ir_identity.py --baseline-root DIR [--programs mpm88_substep,gravity_adj,...]

Takes: a checkout of another commit (`--baseline-root`) and the programs of
benchmarks/programs.py (default: every example-size program). Each tree compiles each program's
first step in a fresh process, offline cache off, printing the optimised LLVM module of every
kernel (`FIELDSIM_PRINT_LLVM`). Functions are compared after renaming what carries no meaning:
value names (`%.12`, `%foo.3`) become numbers in order of appearance, and kernel symbols lose
their source hash (`fs_step_0a1b..._t0` -> `fs_step_t0`). Reported: per program, the functions
equal in both trees, and for those that differ, whether at least their instruction counts per
opcode agree. Identical optimised code runs at the same speed; on a shared, noisy machine this
says "no change" where a timed comparison could only say "within the noise". Compile time is
not covered (same IR, but the frontend's and passes' Python work may differ).
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT = ["mpm88_substep", "gravity_fwd", "gravity_adj", "gravity_tape", "mpm_pair_fwd",
           "mpm_pair_adj", "diffmpm_iter", "mass_spring_iter"]

_CHILD = r'''
import os, sys
sys.path.insert(0, os.path.join(sys.argv[1], "benchmarks"))
import fieldsim as ti
import programs
ti.init(arch=ti.cpu)
step, sync = programs.PROGRAMS[sys.argv[2]](ti)
step(); sync()
'''


def dump(tree: str, program: str) -> str:
    """The LLVM text a fresh process of `tree` prints while compiling `program`'s first step."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PYTHONPATH=tree, FIELDSIM_PRINT_LLVM="1", FIELDSIM_CACHE_DIR=cache,
                   FIELDSIM_OFFLINE_CACHE="0")
        # cwd: `-c` puts the working directory first on sys.path, ahead of PYTHONPATH; run
        # from a repository root, both trees would import that root's fieldsim
        out = subprocess.run([sys.executable, "-c", _CHILD, tree, program], env=env, cwd=cache,
                             capture_output=True, text=True, check=True)
    return out.stdout


def functions(text: str) -> list[str]:
    """Every `define ... }` of `text`, names normalised (module docstring), sorted."""
    found = []
    for match in re.finditer(r"^define .*?^}", text, re.S | re.M):
        body = re.sub(r"(@fs_\w+?)_[0-9a-f]{20}(_\w+)", r"\1\2", match.group(0))
        names: dict[str, str] = {}
        body = re.sub(r"%[\w.]+", lambda m: names.setdefault(m.group(0), f"%v{len(names)}"), body)
        found.append(body)
    return sorted(found)


def opcode_counts(body: str) -> collections.Counter:
    counts = collections.Counter()
    for line in body.splitlines()[1:]:
        line = line.strip()
        op = re.match(r"(?:%v\d+ = )?(\w+)", line)
        if op and not line.endswith(":") and not line.startswith(";"):
            counts[op.group(1)] += 1
    return counts


def compare(program: str, base_root: str) -> tuple[int, int, list[str]]:
    """(functions in this tree, identical ones, a line per function that differs)."""
    ours, theirs = functions(dump(ROOT, program)), functions(dump(base_root, program))
    only_ours = collections.Counter(ours) - collections.Counter(theirs)
    only_theirs = collections.Counter(theirs) - collections.Counter(ours)
    notes = []
    for body in only_ours:
        head = body.split("(")[0].replace("define void ", "")
        twin = next((t for t in only_theirs if t.split("(")[0] == body.split("(")[0]), None)
        if twin is None:
            notes.append(f"{head}: not in the baseline")
        else:
            same = opcode_counts(body) == opcode_counts(twin)
            notes.append(f"{head}: differs ({'same' if same else 'different'} opcode counts)")
    return len(ours), len(ours) - sum(only_ours.values()), notes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-root", required=True)
    ap.add_argument("--programs", default=",".join(DEFAULT))
    args = ap.parse_args()
    differing = 0
    for program in args.programs.split(","):
        total, same, notes = compare(program, os.path.abspath(args.baseline_root))
        print(f"{program}: {same} of {total} functions identical")
        for note in notes:
            print(f"    {note}")
        differing += total - same
    print("identical LLVM code" if differing == 0 else f"{differing} functions differ")


if __name__ == "__main__":
    main()
