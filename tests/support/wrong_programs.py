"""Running a small wrong program written to a file and checking how it fails: a located
fieldsim error at the line marked `# BAD`, at most one fieldsim frame, no chained cause, and
the watched fields (the program's `WATCH` list) as they were before the call."""
import runpy
import textwrap
import traceback

import numpy as np
import pytest

from fieldsim import errors

# a program head whose field `x` (0, 1, 2, 3) a failing call must leave as it was (`WATCH`)
WATCHED_X_HEAD = """\
import numpy as np
import fieldsim as fs
fs.init(arch=fs.cpu)
x = fs.field(fs.f32, shape=4)
x.from_numpy(np.arange(4, dtype=np.float32))
WATCH = [x]
"""


def run_marked(tmp_path, name: str, head: str, body: str):
    """Writes `head` + `body` to a file and runs it: (its globals, its path, the # BAD line)."""
    src = head + textwrap.dedent(body)
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    line = next(i for i, text in enumerate(src.splitlines(), 1) if "# BAD" in text)
    return runpy.run_path(str(path)), str(path), line


def fieldsim_frames(err):
    frames = traceback.extract_tb(err.__traceback__)
    return [f for f in frames if "/fieldsim/" in f.filename.replace("\\", "/")]


def assert_located_failure(g, path, line, classes=(), words=()):
    """Calls the program's `bad()`: it must raise as the module docstring says."""
    before = [w.to_numpy().copy() for w in g["WATCH"]]
    with pytest.raises(errors.FieldsimError) as info:
        g["bad"]()
    err = info.value
    for cls in classes:
        assert isinstance(err, cls), f"{type(err).__mro__} is not a {cls}"
    assert f'{path}", line {line}' in str(err), str(err)
    for word in words:
        assert word in str(err), str(err)
    assert len(fieldsim_frames(err)) <= 1, traceback.format_tb(err.__traceback__)
    assert err.__cause__ is None
    for old, w in zip(before, g["WATCH"]):
        np.testing.assert_array_equal(w.to_numpy(), old)
    return err
