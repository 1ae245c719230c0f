"""Every simulation example has the one command line the README describes: built by
`_common.example_parser` (`--out` defaulting to `out/<name>`, `--quick`, `--arch`, `--seed`),
and each writes PNG frames under `--out`/frames plus a GIF."""
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "simulation"
NAMES = sorted(p.stem for p in EXAMPLES.glob("*.py") if not p.stem.startswith("_"))


@pytest.mark.parametrize("name", NAMES)
def test_example_uses_the_shared_command_line(load_example, capsys, name):
    src = (EXAMPLES / f"{name}.py").read_text()
    assert f'example_parser(__doc__, "{name}"' in src, name
    assert "ti.GUI(" in src and "frames_to_gif(" in src, name
    m = load_example(name)
    with pytest.raises(SystemExit):
        m.main(["--help"])
    usage = capsys.readouterr().out
    for opt in ("--out", "--quick", "--arch", "--seed"):
        assert opt in usage, (name, opt)


def test_checkpoint_example_writes_frames_and_gif(load_example, tmp_path):
    m = load_example("diffmpm_checkpoint")
    r = m.main(["--quick", "--steps", "8", "--every", "4", "--out", str(tmp_path)])
    assert len(r["frames"]) >= 2
    for path in r["frames"] + [r["gif"], str(tmp_path / "result.json")]:
        assert pathlib.Path(path).stat().st_size > 100, path
