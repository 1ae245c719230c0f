"""`scripts/taichi_examples.py` runs programs written for Taichi with fieldsim: `taichi` and its
submodules resolve to fieldsim's, `taichi.examples.*` helpers load from the examples folder, GUIs
stop after the asked number of frames, and failures are reported with their last line."""
import importlib.util
import pathlib
import sys
import textwrap

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "taichi_examples.py"


def _runner():
    spec = importlib.util.spec_from_file_location("taichi_examples", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(folder: pathlib.Path, name: str, text: str):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def test_runner_substitutes_fieldsim_and_stops_guis(tmp_path, capsys):
    examples = tmp_path / "examples"
    _write(examples, "patterns.py", """
        import taichi as ti
        logo = ti.field(ti.i32, shape=4)
        """)
    _write(examples, "sim/uses_math.py", """
        import taichi as ti
        import taichi.math as tm
        from taichi.examples.patterns import logo
        ti.init(arch=ti.cpu)
        x = ti.Vector.field(2, ti.f32, shape=8)

        @ti.kernel
        def step():
            for i in x:
                x[i] = tm.clamp(x[i] + tm.vec2(0.1, 0.2), 0.0, 1.0)

        gui = ti.GUI("demo", res=(16, 16))
        while gui.running:  # an offscreen GUI never closes: the runner stops it
            step()
            gui.circles(x.to_numpy(), radius=2)
            gui.show()
        """)
    _write(examples, "sim/broken.py", """
        import taichi as ti
        ti.no_such_name_in_fieldsim
        """)
    runner = _runner()
    results = {}
    for program in runner.programs(examples, ["sim/"]):
        r = runner.run_one(examples, program, "fieldsim", 3, 120, sys.executable)
        results[r["program"]] = r
    ok = results["sim/uses_math.py"]
    assert ok["status"] == "ok" and ok["frames"] == 3, ok
    bad = results["sim/broken.py"]
    assert bad["status"] == "error" and "no_such_name_in_fieldsim" in bad["detail"], bad
