# Sourced by scripts/demo.sh and scripts/test.sh: make ./.venv with fieldsim installed.
# Creates the venv when missing and (re)installs `-e .[dev]` only when pyproject.toml changed
# since the last install (its sha256 is kept in .venv/.fieldsim-install-stamp).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"
export MPLBACKEND=Agg

PYTHON="${PYTHON:-python3}"
VENV="$REPO_ROOT/.venv"
STAMP="$VENV/.fieldsim-install-stamp"

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
    echo "==> installing fieldsim (pip install -e \".[dev]\") into .venv"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e ".[dev]"
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
