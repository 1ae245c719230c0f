#!/usr/bin/env bash
# Set up ./.venv (first run only) and run the test suite; extra arguments go to pytest.
#   bash scripts/test.sh                 # everything
#   bash scripts/test.sh tests/test_gui.py -k circle
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"

rc=0
python -m pytest -q -p no:cacheprovider "$@" || rc=$?
if [ "$rc" -eq 5 ]; then
    echo "error: pytest collected no tests (exit code 5); treating that as a failure" >&2
fi
exit "$rc"
