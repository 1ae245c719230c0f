#!/usr/bin/env bash
# Set up ./.venv (first run only) and run the first demo that exists; pictures go under out/.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"

demos=(
    "examples/simulation/diffmpm.py --iters 30 --out out/diffmpm"
    "examples/simulation/ad_gravity.py --out out/ad_gravity"
    "examples/simulation/mpm88.py --out out/mpm88"
)
for demo in "${demos[@]}"; do
    read -r -a argv <<< "$demo"
    script="${argv[0]}"
    [ -f "$script" ] || continue
    outdir="${argv[${#argv[@]}-1]}"
    echo "==> python ${argv[*]}"
    python "${argv[@]}"
    echo "==> pictures written to $REPO_ROOT/$outdir/"
    ls "$outdir" 2>/dev/null | head -n 5 | sed 's/^/    /' || true
    exit 0
done
echo "error: no demo found (looked for examples/simulation/{diffmpm,ad_gravity,mpm88}.py)" >&2
exit 1
