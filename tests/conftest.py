"""Shared pytest setup: a headless matplotlib, and the ``arch`` fixture.

``arch`` runs a test once per backend: always on the CPU, and on CUDA too when
``fieldsim.codegen.cuda.is_available()`` says a device works. It gives the
backend object (``fs.cpu`` / ``fs.cuda``); a test then calls
``fs.init(arch=arch)``. ``--arch=cpu`` (or a comma list) restricts the backends.
Every pass is verified (``FIELDSIM_VERIFY=1``).
Tests marked ``@pytest.mark.cuda`` are skipped where no CUDA device is available
(and when the suite runs against Taichi, FIELDSIM_AS_TAICHI=1).
"""

import functools
import os

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
# The IR verifier runs after every pass of every kernel the suite compiles (run_pass).
os.environ.setdefault("FIELDSIM_VERIFY", "1")
try:
    import matplotlib

    matplotlib.use("Agg")
except ImportError:  # pragma: no cover - matplotlib is a runtime dependency
    pass


@functools.cache
def cuda_available() -> bool:
    if os.environ.get("FIELDSIM_AS_TAICHI") == "1":
        return False
    from fieldsim.codegen import cuda  # never needs pycuda; is_available() never raises
    return cuda.is_available()


def pytest_addoption(parser):
    parser.addoption(
        "--arch",
        default=None,
        help="comma-separated backends for tests using the `arch` fixture (default: cpu, plus cuda if available)",
    )


def _archs(config) -> list:
    wanted = config.getoption("--arch")
    names = [a.strip() for a in wanted.split(",") if a.strip()] if wanted else ["cpu", "cuda"]
    params = []
    for name in names:
        if name == "cuda":
            if wanted or cuda_available():
                params.append(pytest.param("cuda", marks=pytest.mark.cuda, id="cuda"))
        else:
            params.append(pytest.param(name, id=name))
    return params


def pytest_generate_tests(metafunc):
    if "arch" in metafunc.fixturenames:
        metafunc.parametrize("arch", _archs(metafunc.config), indirect=True)


@pytest.fixture
def arch(request):
    """The backend for this run of the test: ``fs.<name>``."""
    import fieldsim as fs

    return getattr(fs, request.param)


def pytest_collection_modifyitems(config, items):
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (fieldsim.codegen.cuda.is_available() is False)")
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)
