"""Issue #10's lint gates, run with the tests: `ruff check fieldsim` (the project's ruff
configuration), vulture's dead-code check at 80% confidence with tests/vulture_whitelist.py, and
ruff's McCabe complexity (C90) at max-complexity 10 with an explicit allowlist of the functions
still above it. ruff and vulture come with the `dev` extra."""
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_COMPLEXITY = 10

# Functions still above MAX_COMPLEXITY: (file, function) -> its complexity today.
# This list may only shrink: split a function (small named helpers, early returns, dispatch
# tables) and remove its entry, or lower its number; never add an entry or raise a number.
ALLOWLIST = {
}

_C901 = re.compile(r"^`(?P<name>[^`]+)` is too complex \((?P<n>\d+) > \d+\)$")


def _run(*args):
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          check=False)


def test_ruff_is_clean():
    r = _run("ruff", "check", "--no-cache", "fieldsim")
    assert r.returncode == 0, f"ruff check fieldsim:\n{r.stdout}{r.stderr}"


def test_vulture_finds_no_dead_code():
    r = _run("vulture", "fieldsim", "tests/vulture_whitelist.py", "--min-confidence", "80")
    assert r.returncode == 0, ("vulture: remove the dead code; a parameter an API or protocol "
                               f"dictates goes into tests/vulture_whitelist.py\n{r.stdout}{r.stderr}")


def complex_functions() -> dict:
    """(file, function) -> complexity of each function above MAX_COMPLEXITY (a name defined
    twice in one file above it keeps the larger number, and counts twice in `seen`)."""
    r = _run("ruff", "check", "--no-cache", "--select", "C90", "--config",
             f"lint.mccabe.max-complexity={MAX_COMPLEXITY}", "--output-format", "json", "fieldsim")
    assert r.returncode in (0, 1), f"ruff failed:\n{r.stderr}"
    found, seen = {}, []
    for item in json.loads(r.stdout):
        m = _C901.match(item["message"])
        assert item["code"] == "C901" and m, item
        key = (Path(item["filename"]).resolve().relative_to(ROOT).as_posix(), m["name"])
        found[key] = max(found.get(key, 0), int(m["n"]))
        seen.append(key)
    duplicates = {k for k in seen if seen.count(k) > 1}
    assert not duplicates, f"two functions of one name above {MAX_COMPLEXITY} in a file: {duplicates}"
    return found


def test_complexity_only_in_allowlisted_functions():
    found = complex_functions()
    new = {k: n for k, n in found.items() if k not in ALLOWLIST}
    grown = {k: (ALLOWLIST[k], n) for k, n in found.items() if k in ALLOWLIST and n > ALLOWLIST[k]}
    assert not new, (f"functions above complexity {MAX_COMPLEXITY} (split them; the allowlist "
                     f"may only shrink): {new}")
    assert not grown, f"allowlisted functions grew (allowed, now): {grown}"


def test_allowlist_has_no_stale_entries():
    """An entry whose function is now within MAX_COMPLEXITY (or gone) is removed, so the
    allowlist shrinks as functions are split."""
    stale = sorted(set(ALLOWLIST) - set(complex_functions()))
    assert not stale, f"remove these from ALLOWLIST in tests/test_lint.py: {stale}"
