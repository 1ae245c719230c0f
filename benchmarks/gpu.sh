#!/usr/bin/env bash
# fieldsim on a lent GPU machine, in one call from the repo root:
#
#     bash benchmarks/gpu.sh [STAGE ...]      (default: info install test suite measure)
#
# Stages
#   info     the GPU, driver, CUDA toolkit, python, llvmlite, libdevice
#   install  the project and the CUDA driver binding (see "Offline installs" below)
#   test     pytest -m cuda tests/cuda      (the CUDA backend against the CPU backend)
#   drivers  the CUDA corpus again through the other driver binding (pycuda / cuda-python)
#   suite    tests/lang and tests/ad with every fs.init forced onto CUDA (all passed on an H200)
#   bench    benchmarks/run.py on CUDA (and on the CPU with FS_BENCH_CPU=1), as a table
#   measure  benchmarks/gpu_measure.py: copy bandwidth, mpm88's p2g/g2p against it, gravity
#            N=2048/16384, diffmpm full size (results_gpu.json)
#   peers    benchmarks/run.py on CUDA, fieldsim beside Taichi 1.7.4 (wheels in .whl_taichi/)
#   baseline gpu_measure.py of an earlier fieldsim, unpacked in .baseline/ (ignored by git:
#            `git archive REV | tar -x -C .baseline`), on the same device: before / after
#   variants benchmarks/gpu_variants.py: the CUDA target's f32 x/sqrt(q) and subnormal choices,
#            side by side on gravity (results_gpu_variants.json)
#   scatters gpu_variants.py --program p2g: mpm88's scatter with and without sm_90's vector
#            reductions (results_gpu_scatters.json)
#   taichi   Taichi's own tests (../shared/taichi_suite copied into .taichi_suite/, carried) with
#            every ti.init forced onto CUDA
#   warp     benchmarks/run.py on CUDA, fieldsim beside Warp 1.2.2 (its wheel in .whl_warp/), and
#            beside Taichi too where an earlier call on the same warm machine installed it
# Each stage has a time limit (FS_T_<STAGE> seconds), cut to what is left of FS_BUDGET (570 s
# by default, inside the device tool's 10 minutes a call); a stage that fails or times out is
# reported and the rest still run, a stage with under 20 s left is skipped.
# Results go to $OUT (the device tool's output folder) or /tmp/fs-gpu-out: summary.md, the
# results' JSON and logs.tgz, the stages' logs (<stage>.log each) in one file: the device tool
# returns at most 8 files.
#
# What ran on 2026-11-28 (an H200, BENCHMARKS.md), in 250 s of one device call, carrying only
# .whl_taichi/ (below):
#
#     FS_NO_PYCUDA=1 FS_BUDGET=300 FS_T_PEERS=170 \
#     FS_BENCH_PROGRAMS=gravity_fwd,gravity16k_fwd,gravity16k_adj,mpm88_substep,diffmpm_full_iter \
#         bash benchmarks/gpu.sh info test suite measure peers
#
# The second session (BENCHMARKS.md, "second session"), 815 s of device time in four calls:
#  1. carry .whl_taichi .whl .baseline (60 MB), 351 s: pycuda built, before/after of 0eb5927
#       FS_BUDGET=560 FS_T_TEST=150 FS_T_MEASURE=120 FS_T_BASELINE=120 FS_T_SUITE=150 \
#       FS_T_PEERS=200 FS_T_INSTALL=150 FS_T_DRIVERS=60 FS_BENCH_PROGRAMS=... \
#           bash benchmarks/gpu.sh info test measure baseline suite peers install drivers
#  2. carry .whl_taichi, 54 s, then Taichi installed into /tmp/fs-site for the next call:
#       FS_NO_PYCUDA=1 bash benchmarks/gpu.sh info test variants measure suite
#  3. at once on the warm machine, carry .whl_warp (60 MB), 264 s: fieldsim, Taichi and Warp
#       FS_NO_PYCUDA=1 FS_BUDGET=290 FS_T_WARP=270 FS_BENCH_ROUNDS=2 FS_BENCH_PROGRAMS=... \
#           bash benchmarks/gpu.sh warp
#  4. at once again, no carry, 30 s: python3 -m pytest -m cuda tests/cuda/test_cuda_interop.py ...
# (`peers` with 3 rounds of 5 programs outran 200 s: 2 rounds fit.)
#
# Offline installs. The GPU machine has no network; its python3 (/opt/torch/.venv) already has
# everything fieldsim and its tests need: numpy, llvmlite 0.50.0, pytest (with xdist), tqdm,
# matplotlib, torch, cuda-bindings (NVIDIA's cuda-python, the driver binding fieldsim uses
# first) and the CUDA toolkit (nvcc, ptxas, nvvm/libdevice). No pycuda, no Taichi, no Warp.
# For `peers`, fetch Taichi HERE into .whl_taichi/ (ignored by git; name it in `carry`):
#
#     echo /.whl_taichi/ >> .git/info/exclude; mkdir -p .whl_taichi
#     python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#         --implementation cp --platform manylinux_2_27_x86_64 -d .whl_taichi taichi==1.7.4 dill
#
# (56 MB: it fits the 64 MiB carry limit with the repo.) For `warp`, Warp 1.19's wheel (149 MB)
# cannot travel; Warp 1.2.2's (63,462,023 bytes) would, with 250 KB to spare beside the repo's
# 3.4 MB (the limit counts the whole working tree). benchmarks/warp_wheel.py fetches it into
# .whl_warp/ without warp/examples and warp/tests (60,214,398 bytes; nothing `import warp` or
# the benchmark uses): 1.3 and 1.4 (66 MB) are over the limit with the repo, 1.5+ over 80 MB.
# warp_programs.py runs on Warp 1.2 and 1.19 alike (same checksums as fieldsim on the CPU).
#
#     echo /.whl_warp/ >> .git/info/exclude; python3 benchmarks/warp_wheel.py
#
# Carry .whl_warp alone (Taichi's and Warp's wheels together are over the limit): Taichi stays
# on a warm machine from an earlier call that ran `peers` (an ignored path a call does not name
# stays there), and `warp` then times all three. Warp 1.2.2 is built with CUDA 11.8: it JITs
# PTX for sm_75 (its ptx_target_arch) with its own NVRTC, which a newer driver runs on sm_90.
# For the `drivers` stage, pycuda's sdist and its needs can go in .whl/ for `install` to build
# against the toolkit (with CUDA_ROOT set, the driver library stub, without cuRAND):
#
#     echo /.whl/ >> .git/info/exclude; mkdir -p .whl
#     python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#         --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
#         -d .whl pytools==2026.1.1 platformdirs==4.14.7 mako==1.4.3 siphash24==1.9
#     python3 -m pip download --no-deps --no-binary pycuda -d .whl pycuda==2026.1
#
# The wheels are installed with `pip install --target $FS_SITE`, first on PYTHONPATH; fieldsim
# runs from the repo through PYTHONPATH.
#
# On a machine WITH network, `FS_ONLINE=1 bash benchmarks/gpu.sh` does the usual
#     CUDA_ROOT=/usr/local/cuda pip install -e ".[cuda]"
# instead (pycuda then builds from PyPI's sdist; set CUDA_ROOT to the toolkit).
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 1
REPO=$(pwd)
OUTDIR=${OUT:-/tmp/fs-gpu-out}
mkdir -p "$OUTDIR"
PY=${PYTHON:-python3}
FS_SITE=${FS_SITE:-/tmp/fs-site}
export PYTHONPATH="$FS_SITE:$REPO${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
export FIELDSIM_CACHE_DIR=${FIELDSIM_CACHE_DIR:-/tmp/fs-cache}
STAGES=("$@")
[ ${#STAGES[@]} -eq 0 ] && STAGES=(info install test suite measure)
SUMMARY=()
T_START=$(date +%s)

note() { printf '\n=== %s (%ss since start) ===\n' "$*" "$(( $(date +%s) - T_START ))"; }

cuda_root() {
    for c in "${CUDA_ROOT:-}" "${CUDA_HOME:-}" "${CUDA_PATH:-}"; do
        [ -n "$c" ] && [ -f "$c/include/cuda.h" ] && { echo "$c"; return; }
    done
    local nvcc; nvcc=$(command -v nvcc 2>/dev/null) && nvcc=$(readlink -f "$nvcc")
    if [ -n "${nvcc:-}" ] && [ -f "$(dirname "$(dirname "$nvcc")")/include/cuda.h" ]; then
        dirname "$(dirname "$nvcc")"; return
    fi
    for c in /usr/local/cuda /usr/local/cuda-* /opt/cuda; do
        [ -f "$c/include/cuda.h" ] && { echo "$c"; return; }
    done
}

# a folder holding libcuda.so for the linker: the toolkit's stub, or a link to the driver's
cudadrv_dir() {
    local root=$1
    for d in "$root/lib64/stubs" "$root/lib/stubs" "$root/targets/x86_64-linux/lib/stubs"; do
        [ -f "$d/libcuda.so" ] && { echo "$d"; return; }
    done
    local lib
    lib=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so(\.1)? /{print $NF; exit}')
    [ -z "$lib" ] && lib=$(ls /usr/local/nvidia/lib64/libcuda.so* /usr/lib/x86_64-linux-gnu/libcuda.so* 2>/dev/null | head -1)
    [ -z "$lib" ] && return
    mkdir -p /tmp/fs-cudadrv && ln -sf "$lib" /tmp/fs-cudadrv/libcuda.so && echo /tmp/fs-cudadrv
}

stage_info() {
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1 | head -3
    command -v nvcc >/dev/null && nvcc --version | tail -2
    echo "ptxas: $(command -v ptxas || echo none)   CUDA_ROOT: $(cuda_root)"
    "$PY" - <<'EOF'
import sys, importlib
print("python", sys.version.split()[0], sys.executable)
for m in ("numpy", "llvmlite", "pytest", "pycuda", "cuda.bindings"):
    try:
        mod = importlib.import_module(m)
        print(f"  {m}: {getattr(mod, '__version__', 'ok')}  ({getattr(mod, '__file__', '')})")
    except Exception as e:
        print(f"  {m}: missing ({type(e).__name__})")
try:
    from fieldsim.codegen import ptx, cuda
    print("  libdevice:", ptx.find_libdevice())
    print("  cuda.is_available():", cuda.is_available(), "driver:",
          cuda.driver().name if cuda.is_available() else cuda._driver_state.get("error"))
    if cuda.is_available():
        d = cuda.driver()
        print(f"  device: {d.device_name}, cc {d.cc}, {d.sm_count} SMs -> {cuda.device_arch(d.cc)}")
except Exception as e:
    print("  fieldsim import failed:", type(e).__name__, e)
EOF
}

stage_install() {
    local root drvdir
    root=$(cuda_root)
    [ -n "$root" ] && export CUDA_ROOT=$root CUDA_HOME=$root
    if [ -n "${FS_ONLINE:-}" ]; then
        "$PY" -m pip install -e ".[cuda]" || return 1
        return 0
    fi
    mkdir -p "$FS_SITE"
    if ls .whl/*.whl >/dev/null 2>&1; then
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target "$FS_SITE" .whl/*.whl || return 1
    else
        echo "no .whl/ folder: using the machine's own llvmlite and no pycuda"
    fi
    local sdist; sdist=$(ls .whl/pycuda-*.tar.gz 2>/dev/null | head -1)
    if [ -n "${FS_NO_PYCUDA:-}" ]; then
        echo "FS_NO_PYCUDA set: not building pycuda (fieldsim uses cuda-python's driver API)"
    elif [ -n "$sdist" ] && [ -n "$root" ]; then
        drvdir=$(cudadrv_dir "$root")
        echo "building $(basename "$sdist") against CUDA_ROOT=$root, libcuda from ${drvdir:-?}"
        rm -rf /tmp/fs-pycuda && mkdir -p /tmp/fs-pycuda && tar xzf "$sdist" -C /tmp/fs-pycuda
        ( cd /tmp/fs-pycuda/pycuda-* &&
          "$PY" configure.py --cuda-root="$root" ${drvdir:+--cudadrv-lib-dir="$drvdir"} \
              --no-cuda-enable-curand >/dev/null &&
          "$PY" setup.py -q build_ext -j "$(nproc)" >/tmp/fs-pycuda/build.log 2>&1 &&
          "$PY" -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir \
              --target "$FS_SITE" . >>/tmp/fs-pycuda/build.log 2>&1 ) \
          || { echo "pycuda did not build (tail of its log below): fieldsim falls back to cuda-python";
               tail -25 /tmp/fs-pycuda/build.log; }
    else
        echo "no pycuda sdist in .whl/ (or no CUDA toolkit): fieldsim uses cuda-python's driver API"
    fi
    "$PY" -c "import llvmlite, fieldsim; print('llvmlite', llvmlite.__version__, 'fieldsim from', fieldsim.__file__)" \
        || return 1
    stage_info | tail -4
}

# pytest-xdist spreads a stage over the machine's cores where it is installed (one CUDA context
# per worker process)
xdist() { "$PY" -c "import xdist" 2>/dev/null && echo "-n ${FS_WORKERS:-8}"; }

stage_test() {
    # shellcheck disable=SC2046
    "$PY" -m pytest -q -rfEs -m cuda tests/cuda -p no:cacheprovider --durations=5 --maxfail=40 $(xdist)
}

stage_measure() {
    "$PY" benchmarks/gpu_measure.py --out "$OUTDIR/results_gpu.json"
}

# Taichi 1.7.4 on the same device: its wheel (and dill, its one need the image lacks) carried in
# .whl_taichi/ (56 MB: too much beside llvmlite's in one call, so a second call on the warm
# machine, after `install`, carries it); Warp: the `warp` stage
stage_peers() {
    if ls .whl_taichi/*.whl >/dev/null 2>&1; then
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target "$FS_SITE" .whl_taichi/*.whl || return 1
    fi
    "$PY" benchmarks/run.py --arch cuda --no-warp --taichi-python "$PY" --rounds "${FS_BENCH_ROUNDS:-3}" \
        --reps "${FS_BENCH_REPS:-10}" --out "$OUTDIR/results_peers_cuda.json" \
        --programs "${FS_BENCH_PROGRAMS:-mpm88_substep,gravity_fwd,gravity_adj,gravity16k_fwd,gravity16k_adj,diffmpm_full_iter}"
}

stage_baseline() {
    [ -f .baseline/benchmarks/gpu_measure.py ] || { echo "no .baseline/ checkout"; return 1; }
    echo "baseline: $(cat .baseline/REV 2>/dev/null || echo '?')"
    PYTHONPATH="$FS_SITE:$REPO/.baseline" FIELDSIM_CACHE_DIR=/tmp/fs-cache-baseline \
        "$PY" .baseline/benchmarks/gpu_measure.py --out "$OUTDIR/results_gpu_baseline.json"
}

# Warp 1.2.2 (its wheel in .whl_warp/, see "Offline installs") on CUDA, beside fieldsim, and
# Taichi when it is importable (installed by `peers` in an earlier call on this machine).
# run.py runs once per program, merging each program's results into results_warp_<arch>.json
# as it ends, so a stage cut by its time limit keeps the programs it finished.
# FS_WARP_ARCH=cpu runs the same on the CPU (how the stage is tried on a machine without a GPU).
stage_warp() {
    local arch=${FS_WARP_ARCH:-cuda} p rc=0 taichi=(--no-taichi)
    local programs=${FS_BENCH_PROGRAMS:-mpm88_substep,gravity_fwd,gravity_adj,gravity16k_fwd,gravity16k_adj,diffmpm_full_iter}
    local out="$OUTDIR/results_warp_$arch.json"
    if ls .whl_warp/*.whl >/dev/null 2>&1; then
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target "$FS_SITE" .whl_warp/*.whl || return 1
    fi
    # Warp's kernel cache: run.py's workers point it at temporary folders of their own; this is
    # for anything else that initialises Warp (HOME may not be writable)
    export WARP_CACHE_PATH=${WARP_CACHE_PATH:-/tmp/fs-warp-cache}
    "$PY" -c "import warp; print('warp', warp.__version__, 'from', warp.__file__)" || return 1
    if "$PY" -c "import taichi" >/dev/null 2>&1; then
        taichi=(--taichi-python "$PY")
    else
        echo "no Taichi here (an earlier call's \`peers\` on this machine installs it): Warp alone"
    fi
    rm -f "$out"
    for p in ${programs//,/ }; do
        rm -f "/tmp/fs-warp-$p.json"
        "$PY" benchmarks/run.py --arch "$arch" --warp-python "$PY" "${taichi[@]}" \
            --rounds "${FS_BENCH_ROUNDS:-3}" --reps "${FS_BENCH_REPS:-10}" \
            --out "/tmp/fs-warp-$p.json" --programs "$p" || rc=1
        [ -f "/tmp/fs-warp-$p.json" ] || continue
        "$PY" - "$out" "/tmp/fs-warp-$p.json" "$p" <<'EOF' || rc=1
import json, os, sys
out, part, program = sys.argv[1:]
merged = json.load(open(out)) if os.path.exists(out) else {}
new = json.load(open(part))
machine = new.pop("_machine")
ok = merged.get("_machine", {}).get("checks_ok", True) and machine.get("checks_ok", False)
merged.setdefault("_machine", dict(machine))["checks_ok"] = ok
merged.setdefault("_machines", {})[program] = machine
merged.update(new)
json.dump(merged, open(out, "w"), indent=1)
EOF
    done
    return $rc
}

stage_variants() {
    "$PY" benchmarks/gpu_variants.py --rounds "${FS_VARIANT_ROUNDS:-3}" --out "$OUTDIR/results_gpu_variants.json"
}

# mpm88's scatter with and without sm_90's vector reductions (codegen.vector_scatters)
stage_scatters() {
    "$PY" benchmarks/gpu_variants.py --program p2g --rounds "${FS_VARIANT_ROUNDS:-3}" --reps 10 \
        --out "$OUTDIR/results_gpu_scatters.json"
}

stage_drivers() {
    local other
    other=$("$PY" -c "from fieldsim.codegen import cuda; print('cuda-python' if cuda.driver().name == 'pycuda' else 'pycuda')") || return 1
    echo "again through $other:"
    FIELDSIM_CUDA_DRIVER=$other "$PY" -m pytest -q -rfE -m cuda tests/cuda/test_cuda_run.py \
        -p no:cacheprovider -k "corpus and not ad_corpus or random or storage or debug or geometry"
}

stage_suite() {
    # shellcheck disable=SC2046
    FIELDSIM_FORCE_ARCH=cuda PYTHONPATH="$REPO/tests/cuda:$PYTHONPATH" "$PY" -m pytest -q -rfE \
        -p force_cuda -p no:cacheprovider tests/lang tests/ad $(xdist) ${FS_SUITE_ARGS:-}
}

# Taichi's own test suite (../shared/taichi_suite, copied into the ignored .taichi_suite/ and
# carried) with every ti.init forced onto CUDA
stage_taichi() {
    [ -d .taichi_suite/tests ] || { echo "no .taichi_suite/ (cp -r ../shared/taichi_suite .taichi_suite)"; return 1; }
    # shellcheck disable=SC2046
    ( cd .taichi_suite && IMPL=fieldsim FIELDSIM_FORCE_ARCH=cuda \
        PYTHONPATH="$PWD:$REPO/tests/cuda:$PYTHONPATH" "$PY" -m pytest -q -rfE --tb=line \
        -p force_cuda -p no:cacheprovider tests $(xdist) )
}

stage_bench() {
    local programs=${FS_BENCH_PROGRAMS:-mpm88_substep,gravity_fwd,gravity_adj,mpm_pair_fwd,mpm_pair_adj,diffmpm_iter}
    local archs=(cuda); [ -n "${FS_BENCH_CPU:-}" ] && archs+=(cpu)
    local a rc=0
    for a in "${archs[@]}"; do
        echo "--- benchmarks/run.py on $a"
        if "$PY" benchmarks/run.py --help 2>/dev/null | grep -q -- "--arch"; then
            "$PY" benchmarks/run.py --arch "$a" --rounds "${FS_BENCH_ROUNDS:-3}" --programs "$programs" || rc=1
        else
            BENCH_ARCH=$a "$PY" benchmarks/run.py --rounds "${FS_BENCH_ROUNDS:-3}" --programs "$programs" || rc=1
        fi
        cp benchmarks/results.json "$OUTDIR/results_$a.json" 2>/dev/null
    done
    for f in benchmarks/*.py; do  # any other benchmark script that takes --arch
        case $(basename "$f") in run.py|_worker.py|programs.py) continue ;; esac
        grep -q -- "--arch" "$f" && { echo "--- $f --arch cuda"; "$PY" "$f" --arch cuda || rc=1; }
    done
    return $rc
}

declare -A LIMIT=([info]=60 [install]=300 [test]=330 [drivers]=150 [suite]=300 [bench]=400 [measure]=300 [peers]=400 [baseline]=300 [warp]=400 [variants]=200 [scatters]=150 [taichi]=300)
LOGDIR=$(mktemp -d /tmp/fs-gpu-logs.XXXX)
BUDGET=${FS_BUDGET:-570}
for s in "${STAGES[@]}"; do
    declare -F "stage_$s" >/dev/null || { echo "unknown stage $s"; exit 2; }
    var="FS_T_${s^^}"; lim=${!var:-${LIMIT[$s]}}
    left=$(( BUDGET - ($(date +%s) - T_START) - 15 ))
    if [ "$left" -lt 20 ]; then
        SUMMARY+=("| $s | skipped: FS_BUDGET spent | 0s | |"); continue
    fi
    [ "$lim" -gt "$left" ] && lim=$left
    note "$s (limit ${lim}s)"
    t0=$(date +%s)
    export -f "stage_$s" note cuda_root cudadrv_dir stage_info xdist
    export PY REPO OUTDIR FS_SITE T_START
    timeout --foreground -k 10 "$lim" bash -c "stage_$s" 2>&1 | tee "$LOGDIR/$s.log"
    rc=${PIPESTATUS[0]}
    case $rc in 0) st=ok ;; 124|137) st="TIMED OUT" ;; *) st="failed ($rc)" ;; esac
    # the pytest summary line, when the stage ran pytest
    last=$(grep -E "[0-9]+ (passed|failed|error)" "$LOGDIR/$s.log" | tail -1)
    SUMMARY+=("| $s | $st | $(( $(date +%s) - t0 ))s | ${last:-} |")
done

note "summary"
echo "| stage | result | time | pytest |"
echo "|---|---|---|---|"
printf '%s\n' "${SUMMARY[@]}" | tee "$OUTDIR/summary.md"
grep -h "^|" "$LOGDIR/bench.log" 2>/dev/null | grep -v "^| stage" || true
tar czf "$OUTDIR/logs.tgz" -C "$LOGDIR" .
