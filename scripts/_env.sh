# Sourced by scripts/demo.sh and scripts/test.sh: make ./.venv with fieldsim installed.
# Creates the venv when missing and (re)installs `-e .[dev,torch,jax,ray]` (the interop extras,
# torch as its CPU build) only when pyproject.toml changed
# since the last install (its sha256 is kept in .venv/.fieldsim-install-stamp).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"
export MPLBACKEND=Agg

PYTHON="${PYTHON:-python3}"
VENV="$REPO_ROOT/.venv"
STAMP="$VENV/.fieldsim-install-stamp"
TORCH_CPU="${TORCH_CPU:-2.13.0+cpu}"  # the CPU build of torch for the `torch` extra

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    echo "error: fieldsim needs Python >= 3.10 (found: $("$PYTHON" --version 2>&1 || echo none));" \
         "set PYTHON=/path/to/python3.x" >&2
    exit 1
fi

if [ ! -x "$VENV/bin/python" ]; then
    echo "==> creating $VENV"
    if ! "$PYTHON" -m venv "$VENV"; then
        echo "error: '$PYTHON -m venv' failed (on Debian/Ubuntu: apt install python3-venv)" >&2
        rm -rf "$VENV"
        exit 1
    fi
    # Editable installs from pyproject.toml alone need pip >= 21.3 (Python 3.10.0 ships 21.2).
    "$VENV/bin/python" -m pip install -q --upgrade pip
fi

want="$("$VENV/bin/python" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' pyproject.toml)"
have="$(cat "$STAMP" 2>/dev/null || true)"
if [ "$want" != "$have" ]; then
    extras="dev,torch,jax,ray"
    if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
        # torch's CPU build (the tests use no GPU; the default build pulls GBs of CUDA libraries)
        echo "==> installing torch (CPU build) into .venv"
        if ! "$VENV/bin/python" -m pip install -q --disable-pip-version-check "torch==$TORCH_CPU"; then
            echo "warning: no torch==$TORCH_CPU wheel; torch not installed (its tests skip); set" \
                 "TORCH_CPU to an available CPU build" >&2
            extras="dev,jax,ray"
        fi
    fi
    echo "==> installing fieldsim (pip install -e \".[$extras]\") into .venv"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e ".[$extras]"
    # Put the checkout itself on sys.path too: with only setuptools' editable import hook, a
    # folder named `fieldsim` in the current directory (this clone, run from its parent)
    # shadows the package as an empty namespace package.
    site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    echo "$REPO_ROOT" > "$site/_fieldsim_checkout.pth"
    echo "$want" > "$STAMP"
fi

# Activate so `python` below is the venv's.
# shellcheck disable=SC1091
source "$VENV/bin/activate"
