#!/usr/bin/env bash
# The CUDA path on a lent GPU machine, in one prepared run (issue 26). Every step has its own time limit, so a
# failure or a hang leaves the rest; every figure goes to $OUT (default ./gpu-out).
#
# Here (a machine with network and the project's .venv), once:   tools/gpu_check.sh --wheels
#   fills .whl/ with the wheels the GPU machine lacks (cvmc itself, xdsl and its two pure-Python dependencies);
#   the GPU machine's image has numpy, llvmlite, cuda-bindings, NVRTC, pytest(-xdist), onnx and onnxruntime.
# There (no network), from the checkout with .whl carried:       tools/gpu_check.sh [--quick]
#   --quick (fits one 10-minute call): only the host's best int8 tier for the tier corpus, fuzzer and peers.
#   --cinn: the GPU tests of the cinn path, then the CINN programs on the host's CPU only: the float Dot's register
#   blocks ranked (bench/cinn_dot_blocks.py, all cores, then the four fastest alone), the programs' kernels and
#   table with the fastest block, and cvmc's default block beside it.
#
# Steps, in order: the machine (GPU, CPU flags, versions); the tests that skip without a GPU (the corpus on the
# device among them) beside the corpus checker on device="cuda" and 300 fuzzer graphs on cuda against reference,
# all at once (16 host cores); the bench and digits models timed with CUDA events (bench/gpu_time.py, alone on the
# machine); the CPU tiers of the GPU machine's host: the tier tests, then for each int8 tier it runs (CVMC_ISA) the
# corpus and 420 fuzzer graphs on cpu, then bench/int8_peers.py at 1 and 2 threads; the C API row; the CINN
# programs' table and their kernels one by one (bench/cinn_programs.py --kernels).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

if [ "${1:-}" = "--wheels" ]; then
    rm -rf .whl && mkdir -p .whl
    .venv/bin/pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d .whl \
        "xdsl==$(.venv/bin/python -c 'import xdsl; print(xdsl.__version__)')" immutabledict ordered-set
    rm -rf build  # setuptools keeps build/lib between builds: modules since removed would ship
    .venv/bin/pip wheel -q --no-deps -w .whl .
    ls -la .whl
    exit 0
fi

QUICK=0; [ "${1:-}" = "--quick" ] && QUICK=1
CINN=0; [ "${1:-}" = "--cinn" ] && CINN=1
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
LOG=$OUT/log.txt
exec > >(tee -a "$LOG") 2>&1
SITE=/tmp/cvmc-site
export CVMC_CACHE_DIR=/tmp/cvmc-cache PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
status=0
step() {  # step NAME SECONDS COMMAND...: run with a time limit, report its exit status and time
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    echo "=== $name (limit ${limit}s) $(date -u +%H:%M:%S)"
    timeout -k 5 "$limit" "$@"
    local rc=$?
    echo "=== $name: exit $rc in $((SECONDS - t0))s"
    [ $rc -eq 0 ] || status=1
    return $rc
}

echo "=== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | head -3
lscpu | grep -E '^(Model name|CPU\(s\)|Flags)' | sed -E 's/^(Flags:).*/\1 (int8-relevant)/'
lscpu | grep -o -w -E 'avx2|avx512f|avx512bw|avx512_vnni|avx_vnni|amx_int8|amx_tile|amx_bf16' | sort -u | tr '\n' ' '; echo
python3 --version
echo "C compiler: $(command -v gcc || echo none)"
python3 -m pip list 2>/dev/null | grep -i -E '^(numpy|llvmlite|cuda-bindings|cuda-python|nvidia-cuda-nvrtc|onnx|onnxruntime|onnxruntime-gpu|openvino|pytest|pytest-xdist|torch) '

step install 120 python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" .whl/*.whl
export PYTHONPATH=$SITE
# -P: the checkout's cvmc/ folder (the package's root files only) must not shadow the installed package.
PY="python3 -P"
$PY -c "import cvmc, llvmlite.binding as l; print('cvmc', cvmc.__version__, 'from', cvmc.__file__, '| host CPU', l.get_host_cpu_name())"

if [ $CINN = 1 ]; then
    step gpu-cinn-tests 120 $PY -m pytest -rs -n 10 -p no:cacheprovider tests/runtime/test_cuda_device.py \
        tests/runtime/test_cinn_builder.py > "$OUT/tests.txt" 2>&1; tail -n 3 "$OUT/tests.txt"
    step cinn-blocks 180 $PY bench/cinn_dot_blocks.py --jobs 14 --repeat 5 | tee "$OUT/cinn_blocks.txt"
    TOP=$(awk '/MR,NR,KC/ {f = 1; next} f && NF {print $1}' "$OUT/cinn_blocks.txt" | head -n 4 | tr '\n' ';')
    step cinn-blocks-alone 120 $PY bench/cinn_dot_blocks.py --jobs 1 --repeat 10 --blocks "$TOP" \
        | tee -a "$OUT/cinn_blocks.txt"
    BEST=$(awk '/MR,NR,KC/ {getline; print $1}' "$OUT/cinn_blocks.txt" | tail -n 1)
    echo "=== the fastest block alone: ${BEST:-none}"
    step cinn-kernels 120 $PY bench/cinn_programs.py --kernels --repeat 10 ${BEST:+--dot-block $BEST} \
        > "$OUT/cinn.txt" 2>&1
    step cinn-programs 300 $PY bench/cinn_programs.py --repeat 10 ${BEST:+--dot-block $BEST} 2>&1 \
        | grep -v -E "^WARNING|Serializing" | tee -a "$OUT/cinn.txt" | tail -n 17
    step cinn-default 90 $PY bench/cinn_programs.py --cvmc-only --repeat 10 --only mlp,transformer,convnet_step 2>&1 \
        | tee -a "$OUT/cinn.txt" | tail -n 8
    echo "=== done, status $status"
    exit $status
fi

# --- 1: tests, corpus checker and fuzzer at once ----------------------------------------------------------------
(step gpu-tests 240 $PY -m pytest -rs -n 10 -p no:cacheprovider tests/runtime/test_cuda_device.py \
    tests/runtime/test_cuda_schedule.py tests/codegen/test_cuda.py tests/codegen/test_cuda_launches.py \
    tests/codegen/test_cuda_host_barriers.py tests/runtime/test_cinn_builder.py > "$OUT/tests.txt" 2>&1;
 echo "gpu-tests exit $?" >> "$OUT/tests.txt") &
pids=$!
for k in 0 1 2 3; do
    (step "corpus-$k" 240 $PY tests/corpus_tools/check_cvm_corpus.py tests/data/cvm --device cuda --shard "$k/4" \
        > "$OUT/corpus-$k.part" 2>&1) &
    pids="$pids $!"
done
for k in 0 1 2 3; do
    (step "fuzz-$k" 240 $PY -m cvmc.tools.fuzz_cvm --device cuda --seed 26 --start $((75 * k)) --count 75 \
        > "$OUT/fuzz-$k.part" 2>&1) &
    pids="$pids $!"
done
wait $pids
tail -n 25 "$OUT/tests.txt"
cat "$OUT"/corpus-*.part > "$OUT/corpus_fuzz.txt"; cat "$OUT"/fuzz-*.part >> "$OUT/corpus_fuzz.txt"
rm -f "$OUT"/corpus-*.part "$OUT"/fuzz-*.part
grep -E "on cuda:|graphs|agree|differ|FAIL|exit" "$OUT/corpus_fuzz.txt" | tail -n 30

# --- 2: timings, alone on the machine ---------------------------------------------------------------------------
step gpu-time 120 $PY bench/gpu_time.py --runs 200 --warmup 20 --json "$OUT/gpu_time.json" | tee "$OUT/gpu_time.txt"

# --- 3: the CPU tiers of this host (each int8 tier it runs, forced by CVMC_ISA) ------------------------------------
TIERS=$($PY -c "from cvmc.runtime.driver import target as t; print(' '.join(i for i in ('avx2', 'avx512-vnni', 'amx') if t.host_has(i)))")
[ $QUICK = 1 ] && TIERS=${TIERS##* }
echo "=== this host runs the int8 tiers: $TIERS"
step cpu-tier-tests 180 $PY -m pytest -rs -n 12 -p no:cacheprovider tests/passes/test_mmk.py \
    tests/passes/test_vnni_tier.py tests/passes/test_kernel_choice_slots.py tests/runtime/test_known_answer.py \
    tests/passes/test_dot_elements.py tests/passes/test_epilogue_pack.py tests/runtime/test_kernel_width.py \
    tests/runtime/test_aot.py tests/runtime/test_aot_targets.py \
    > "$OUT/cpu_tiers.txt" 2>&1
grep -E "passed|failed|SKIPPED|tiers" "$OUT/cpu_tiers.txt" | tail -n 12
for tier in $TIERS; do
    pids=
    for k in 0 1 2 3 4 5; do
        (export CVMC_ISA=$tier; step "corpus-$tier-$k" 180 $PY tests/corpus_tools/check_cvm_corpus.py tests/data/cvm \
            --device cpu --shard "$k/6" > "$OUT/tier-$k.part" 2>&1) &
        pids="$pids $!"
        (export CVMC_ISA=$tier; step "fuzz-$tier-$k" 180 $PY -m cvmc.tools.fuzz_cvm --device cpu --seed 27 \
            --start $((70 * k)) --count 70 > "$OUT/tierfuzz-$k.part" 2>&1) &
        pids="$pids $!"
    done
    wait $pids
    echo "--- CVMC_ISA=$tier" >> "$OUT/cpu_tiers.txt"
    cat "$OUT"/tier-*.part "$OUT"/tierfuzz-*.part >> "$OUT/cpu_tiers.txt"; rm -f "$OUT"/tier-*.part "$OUT"/tierfuzz-*.part
    echo "--- CVMC_ISA=$tier"; tail -n 40 "$OUT/cpu_tiers.txt" | grep -E "on cpu:|graphs,|exit [1-9]|Warning"
done
for tier in $TIERS; do
    (export CVMC_ISA=$tier; step "int8-peers-$tier" 150 $PY bench/int8_peers.py --rounds 6 --threads 1,2 2>&1 \
        | tee -a "$OUT/cpu_tiers.txt" | grep -v -E "^WARNING|onnxruntime-inference|Serializing")
done

# the C API row: an object of the host target, run by a C client, on this host's best tier
CVMC_AOT_VERBOSE=1 step aot-bench 120 $PY bench/aot.py --repeat 200 2>&1 | tee -a "$OUT/cpu_tiers.txt"

# the CINN programs on the host's CPU: the table against PyTorch and ONNX Runtime, then where each one's time goes
step cinn-programs 240 $PY bench/cinn_programs.py --repeat 10 2>&1 | grep -v -E "^WARNING|Serializing" \
    | tee "$OUT/cinn.txt" | tail -n 17
step cinn-kernels 120 $PY bench/cinn_programs.py --kernels --repeat 10 >> "$OUT/cinn.txt" 2>&1

echo "=== done, status $status"
exit $status
