#!/usr/bin/env bash
# ops/gpu-check.sh — the CUDA backend's check on a GPU host (the H200 box of
# /work/shared/GPU-HOST.md), run from the repository root. In order, each step logged to $OUT:
#   1. build (Release, -DEMBER_CUDA=ON, arch 90) into build-gpu — or use prebuilt binaries
#      (--prebuilt DIR, made on the dev box with `ops/gpu-check.sh --pack DIR BUILD_DIR`);
#   2. seeded random-weight models of all-MiniLM-L6-v2 and BERT-base shape and their CLS twins
#      (bench/gpu/make_random_models.py, transformers);
#   3. the gpu-labelled tests (the kernels_cuda and engine_cuda binaries), against the
#      MiniLM-shaped model;
#   4. whole-engine correctness vs the CPU engine and vs transformers fp32 (bench/gpu/check_engine.py)
#      and, when the packed DIR holds the real all-MiniLM-L6-v2 (real-minilm/, a bf16 copy made by
#      --pack), the engine with the real weights vs sentence-transformers (check_real_model.py);
#   5. kernel bench (bench_kernels_cuda), engine bench (bench_engine_cuda) and the transformers
#      bf16 peer, eager and CUDA graph (bench/gpu/transformers_peer.py), for both model shapes
#      (the engine also on their CLS twins, whose last layer it prunes; the peer's cost is the
#      same under either pooling, so it runs on the base models only);
#   6. a summary table (PASS/FAIL + the headline numbers); JSON files and logs in $OUT;
#   7. (only when --steps names it; before the summary) bench/gpu/profile_engine.sh: per-kernel
#      times of one eager pass under Nsight Compute, into $OUT/profile/.
# Exit status: 0 when every check passed. About 5-7 minutes of GPU time.
#
# Usage (GPU host):  OUT=/path ops/gpu-check.sh [--prebuilt DIR] [--quick] [--engine-only]
#                        [--reps N] [--steps 3,4,5]
#   --steps: which of steps 3-5 and 7 to run (default 3,4,5; 1, 2 and 6 always run). The device tool
#   allows 600 s per call and a full check takes longer since the engine times its GEMMs at
#   every start: run "--steps 3,4" and "--steps 5" as two calls with the same OUT and MODELS.
#   --engine-only: the engine's test and benches only (no kernels_cuda, no bench_kernels_cuda):
#   a session's final check and benches of record fit one call (~4.5 + ~1.2 min).
#   --reps N: the engine bench's repetitions (default 200, --quick 40). The engine bench
#   waits for results by spinning (spin=5000 us), as the benches of record do.
#   Through the device tool (at most 8 files come back from its $OUT): point OUT elsewhere and
#   tar it into $OUT, e.g. `OUT=/tmp/rec ops/gpu-check.sh ...; tar cf $OUT/rec.tar -C /tmp rec`.
#        (dev box):  ops/gpu-check.sh --pack DIR BUILD_DIR    # binaries + their non-system libs
#   (+ real-minilm/: a binary16 copy of models/all-MiniLM-L6-v2, its bytes in two planes and
#   xz-compressed, 38.7 MB, when that is there; the device tool's 64 MiB carry limit, the tree's
#   16 MB included, then leaves room for lib/ and bench_engine_cuda beside it only, which is all
#   step 4 needs: carry those three for the real-model check, the test binaries in another call)
#
# Build there: needs cmake, nvcc 13 and the Debian packages below unpacked from .gpudeps/*.deb
# into /opt/deps (this script does it). Fetch them on the dev box, in the repo root, with:
#   ../shared/gpu-host/fetch-debs.sh .gpudeps libjansson-dev libjansson4 libopenblas-dev \
#       libopenblas0-pthread libopenblas-pthread-dev libgfortran5 libquadmath0 \
#       pkgconf pkgconf-bin libpkgconf3
# and carry .gpudeps (and, for --prebuilt, the packed DIR). The prebuilt route needs only the
# packed DIR (binaries + libopenblas/libgfortran/libquadmath/libjansson copied by --pack).
set -uo pipefail
ROOT=$(pwd)
if [ "${1:-}" = "--pack" ]; then
    dir=${2:?usage: --pack DIR BUILD_DIR}; build=${3:?usage: --pack DIR BUILD_DIR}
    mkdir -p "$dir/lib"
    for b in tests/kernels_cuda tests/engine_cuda bench/bench_engine_cuda bench/bench_kernels_cuda; do
        cp "$build/$b" "$dir/" || exit 1
        ldd "$build/$b" | awk '/=> \//{print $3}' |
            grep -E 'libopenblas|libgfortran|libquadmath|libjansson|libmsgpack|libhiredis|libzmq' |
            xargs -r -I{} cp -L {} "$dir/lib/"
    done
    if [ -f models/all-MiniLM-L6-v2/model.safetensors ]; then
        # binary16: what the engine's default dtype loads (a bf16 copy caps it near 0.99994);
        # in byte planes, which xz packs into the device tool's limit (the script's header)
        python3 bench/gpu/pack_bf16_model.py models/all-MiniLM-L6-v2 "$dir/real-minilm" f16 \
            --planes || exit 1
    fi
    du -sh "$dir"
    exit 0
fi
PREBUILT=""
ENGINE_ONLY=0
REPS=200
STEPS=3,4,5
while [ $# -gt 0 ]; do
    case "$1" in
        --prebuilt) PREBUILT=$(cd "$2" && pwd) || { echo "--prebuilt: no directory $2"; exit 2; }
                    shift 2 ;;
        --quick) REPS=40; shift ;;
        --engine-only) ENGINE_ONLY=1; shift ;;
        --reps) REPS=$2; shift 2 ;;
        --steps) STEPS=$2; shift 2 ;;
        *) echo "unknown argument $1"; exit 2 ;;
    esac
done
OUT=${OUT:-$ROOT/gpu-check-out}
mkdir -p "$OUT"
MODELS=${MODELS:-/tmp/ember-gpu-models}
export PYTHONUNBUFFERED=1
declare -A RESULT
step() { echo; echo "#### $1"; }
record() { RESULT["$1"]=$2; echo "[$2] $1"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
if [ -d .gpudeps ] && ls .gpudeps/*.deb >/dev/null 2>&1; then
    mkdir -p /opt/deps && for f in .gpudeps/*.deb; do dpkg -x "$f" /opt/deps; done
    export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu:/opt/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$LD_LIBRARY_PATH
fi

step "1. build"
if [ -n "$PREBUILT" ]; then
    export LD_LIBRARY_PATH=$PREBUILT/lib:$LD_LIBRARY_PATH
    BIN_KT=$PREBUILT/kernels_cuda BIN_ET=$PREBUILT/engine_cuda
    BIN_EB=$PREBUILT/bench_engine_cuda BIN_KB=$PREBUILT/bench_kernels_cuda
    bins=("$BIN_EB" "$BIN_ET")
    [ $ENGINE_ONLY -eq 1 ] || bins+=("$BIN_KT" "$BIN_KB")
    missing=$(for b in "${bins[@]}"; do [ -x "$b" ] || echo "$b: missing"; done
              ldd "${bins[@]}" 2>/dev/null | grep "not found" | sort -u)
    if [ -n "$missing" ]; then echo "$missing"; record build FAIL; else record "build (prebuilt)" PASS; fi
else
    # the -dev packages' pkg-config files say prefix=/usr: a sysroot maps them into /opt/deps
    PKGBIN=$(command -v pkg-config || command -v pkgconf || echo /opt/deps/usr/bin/pkgconf)
    export PKG_CONFIG_SYSROOT_DIR=/opt/deps
    export PKG_CONFIG_PATH=/opt/deps/usr/lib/x86_64-linux-gnu/pkgconfig:/opt/deps/usr/lib/x86_64-linux-gnu/openblas-pthread/pkgconfig:/opt/deps/usr/share/pkgconfig
    # Debian's alternatives symlinks (libopenblas.so, libblas) are not made by dpkg -x
    ob=/opt/deps/usr/lib/x86_64-linux-gnu
    [ -e $ob/libopenblas.so ] || ln -sf openblas-pthread/libopenblas.so.0 $ob/libopenblas.so 2>/dev/null
    [ -e /opt/deps/usr/include/cblas.h ] || ln -sf x86_64-linux-gnu/openblas-pthread/cblas.h /opt/deps/usr/include/cblas.h 2>/dev/null
    cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DEMBER_WERROR=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90 -DPKG_CONFIG_EXECUTABLE="$PKGBIN" \
        -DCMAKE_C_FLAGS="-I/opt/deps/usr/include -I/opt/deps/usr/include/x86_64-linux-gnu" \
        -DCMAKE_EXE_LINKER_FLAGS="-L$ob -Wl,-rpath-link,$ob" \
        -DEMBER_TEST_MODEL_DIR="$MODELS/minilm" > "$OUT/build.log" 2>&1 &&
    cmake --build build-gpu -j"$(nproc)" --target kernels_cuda engine_cuda bench_engine_cuda \
        bench_kernels_cuda >> "$OUT/build.log" 2>&1
    if [ $? -eq 0 ]; then record build PASS; else tail -30 "$OUT/build.log"; record build FAIL; fi
    BIN_KT=build-gpu/tests/kernels_cuda BIN_ET=build-gpu/tests/engine_cuda
    BIN_EB=build-gpu/bench/bench_engine_cuda BIN_KB=build-gpu/bench/bench_kernels_cuda
fi

want() { case ",$STEPS," in *",$1,"*) return 0 ;; esac; return 1; }

step "2. random-weight models"
if [ -f "$MODELS/bert-base-cls/model.safetensors" ]; then
    record "models (already there)" PASS
elif python3 bench/gpu/make_random_models.py "$MODELS" > "$OUT/models.log" 2>&1; then
    record models PASS; else tail -20 "$OUT/models.log"; record models FAIL; fi

step "3. gpu tests"
export EMBER_TEST_MODEL_DIR=$MODELS/minilm EMBER_SOURCE_DIR=$ROOT EMBER_TEST_DATA_DIR=/tmp
if want 3; then
    # the gpu-labelled ctests are these two binaries: run them once, each with its own log
    tests=("$BIN_ET")
    [ $ENGINE_ONLY -eq 1 ] || tests=("$BIN_KT" "$BIN_ET")
    for t in "${tests[@]}"; do
        n=$(basename "$t")
        timeout 600 "$t" > "$OUT/test_$n.log" 2>&1
        rc=$?
        grep -E "passed|SKIPPED|worst cosine [0-9.]+ \(min|graphs mode|lazy graphs|checked" "$OUT/test_$n.log" | tail -14
        [ $rc -eq 0 ] && record "test $n" PASS || { grep -m 20 "CHECK failed" "$OUT/test_$n.log"; record "test $n" FAIL; }
    done
fi

step "4. whole-engine correctness vs CPU engine and transformers"
if want 4; then
    if python3 bench/gpu/check_engine.py --bin "$BIN_EB" --models "$MODELS" --out "$OUT/check" \
            > "$OUT/check_engine.log" 2>&1; then
        record "engine vs cpu + transformers" PASS; else record "engine vs cpu + transformers" FAIL; fi
    sed -n '/== whole-engine/,$p' "$OUT/check_engine.log"; cp "$OUT/check/check_engine.json" "$OUT/" 2>/dev/null
    rm -f "$OUT"/check/*.bin
    if [ -n "$PREBUILT" ] && [ -f "$PREBUILT/real-minilm/model.safetensors.planes.xz" ]; then
        real=/tmp/ember-real-minilm
        mkdir -p $real && cp -r "$PREBUILT/real-minilm/." $real/ &&
            rm -f $real/model.safetensors.planes.xz &&
            python3 bench/gpu/pack_bf16_model.py --unplanes \
                "$PREBUILT/real-minilm/model.safetensors.planes.xz" $real/model.safetensors
        if python3 bench/gpu/check_real_model.py --bin "$BIN_EB" --model $real \
                --fixture tests/fixtures/minilm_st_reference.bin --out "$OUT/real" \
                --devices ${REAL_DEVICES:-cuda:0 cuda:0,graphs=all} > "$OUT/check_real_model.log" 2>&1; then
            record "real MiniLM vs sentence-transformers" PASS
        else
            record "real MiniLM vs sentence-transformers" FAIL
        fi
        sed -n '/== real/,$p' "$OUT/check_real_model.log"; cp "$OUT/real/check_real_model.json" "$OUT/" 2>/dev/null
        rm -f "$OUT"/real/*.bin
    fi
fi

step "5. benches"
if want 5; then
    if [ $ENGINE_ONLY -eq 0 ]; then
        "$BIN_KB" "$OUT/bench_kernels.json" 50 > "$OUT/bench_kernels.log" 2>&1 && record "bench kernels" PASS || record "bench kernels" FAIL
    fi
    # the CLS twins (same weights, CLS pooling: the pruned last layer) beside the targets' models;
    # transformers computes every row whatever the pooling, so their peer is the base model's
    for m in minilm bert-base minilm-cls bert-base-cls; do
        "$BIN_EB" bench "$MODELS/$m" "$m" "$OUT/bench_engine_$m.json" $REPS spin=5000 > "$OUT/bench_engine_$m.log" 2>&1 &&
            record "bench engine $m" PASS || { tail -5 "$OUT/bench_engine_$m.log"; record "bench engine $m" FAIL; }
        [ "${m%-cls}" = "$m" ] || continue
        python3 bench/gpu/transformers_peer.py "$MODELS/$m" "$m" "$OUT/peer_$m.json" $((REPS / 2)) \
            > "$OUT/peer_$m.log" 2>&1 && record "peer $m" PASS || { tail -5 "$OUT/peer_$m.log"; record "peer $m" FAIL; }
    done
    [ $ENGINE_ONLY -eq 1 ] || sed -n '/== CUDA kernels/,$p' "$OUT/bench_kernels.log"
fi

if want 7; then
    step "7. profile"
    if bash bench/gpu/profile_engine.sh "$BIN_EB" "$MODELS" "$OUT/profile" > "$OUT/profile.log" 2>&1; then
        record profile PASS; else tail -5 "$OUT/profile.log"; record profile FAIL; fi
    grep -A14 "ragged: kernels" "$OUT/profile/profile.txt" | grep -E "==|^kind|^[a-z]+ +[0-9]"
    rm -f "$OUT"/profile/*.csv
fi

step "6. summary"
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, os, sys
out = sys.argv[1]
def load(n):
    try:
        return json.load(open(os.path.join(out, n)))
    except Exception:
        return None
targets = {"minilm": (0.12, 15e6), "bert-base": (0.35, 3.0e6)}
models = ["minilm", "bert-base", "minilm-cls", "bert-base-cls"]  # the CLS twins: the pruned layer
nan = float("nan")
print(f"{'model':<13} {'metric':<34} {'ember':>12} {'hf eager':>12} {'hf graph':>12} {'target':>10}")
for m in models:
    # a CLS twin's peer is its base model's run (transformers computes every row either way)
    e, p = load(f"bench_engine_{m}.json"), load(f"peer_{m.removesuffix('-cls')}.json")
    tb, tr = (f"{targets[m][0]:.2f}", f"{targets[m][1] / 1e6:.1f}") if m in targets else ("-", "-")
    if not e:
        print(f"{m:<13} (no engine bench)"); continue
    b1 = e["batch1_128"]["median_ms"]
    pe = p["batch1_128"]["eager"]["median_ms"] if p else nan
    pg = p["batch1_128"]["graph"]["median_ms"] if p else nan
    print(f"{m:<13} {'batch 1 x 128, ms (median)':<34} {b1:>12.4f} {pe:>12.4f} {pg:>12.4f} {tb:>10}")
    r = e["ragged100"]
    best = max(r["one_batch"]["tokens_per_s"], r["four_batches"]["tokens_per_s"])
    if p:
        t = p["ragged100"]["tokens"]
        pe_t, pg_t = t / p["ragged100"]["eager"]["median_ms"] * 1e3, t / p["ragged100"]["graph"]["median_ms"] * 1e3
    else:
        pe_t = pg_t = nan
    print(f"{m:<13} {'100 ragged texts, M tok/s':<34} {best/1e6:>12.2f} {pe_t/1e6:>12.2f} {pg_t/1e6:>12.2f} {tr:>10}")
    for x in e["latency_vs_tokens"]:
        k = f"tokens_{x['tokens']}"
        pp = p[k]["graph"]["median_ms"] if p and k in p else nan
        pq = p[k]["eager"]["median_ms"] if p and k in p else nan
        print(f"{m:<13} {'latency ' + str(x['tokens']) + ' tokens, ms':<34} {x['median_ms']:>12.4f} {pq:>12.4f} {pp:>12.4f}")
    en = (e.get("energy") or {}).get("ragged100_copies_in_flight")
    pen = ((p or {}).get("energy") or {}).get("ragged100_graph")
    if en:  # NVML's reading (bench/bench_energy.h): at the power cap throughput is energy
        print(f"{m:<13} energy, ragged texts in flight: {en['mj_per_1000_tokens']:.1f} mJ per 1000 tokens "
              f"({en['watts']:.0f} W, SM clock median {en['sm_mhz_median']:.0f} MHz)"
              + (f"; transformers + graph {pen['mj_per_1000_tokens']:.1f} ({pen['watts']:.0f} W)"
                 if pen else ""))
    s = e["startup"]
    print(f"{m:<13} graphs: {s['buckets']} buckets, capture-all {s['capture_all_graph_ms']:.0f} ms "
          f"(start-up {s['capture_all_ms']:.0f} ms vs lazy {s['lazy_ms']:.0f} ms); lazy run captured "
          f"{s['graphs_lazy_run']} graphs in {s['capture_lazy_ms']:.1f} ms")
r = load("check_real_model.json")
if r:
    for k, v in r.items():
        if isinstance(v, dict) and k.endswith("batches of 1"):
            print(f"{'real MiniLM':<10} worst cosine vs ST {k:<40} {v['worst_cosine']:.7f} ({v['n']}) {'PASS' if v['pass'] else 'FAIL'}")
c = load("check_engine.json")
if c:
    for m in models:
        for k, v in c.get(m, {}).get("checks", {}).items():
            print(f"{m:<13} worst cosine {k:<32} {v['worst_cosine']:.7f} ({v['n']}) {'PASS' if v['pass'] else 'FAIL'}")
PY
echo
echo "== gpu-check results =="
fail=0
for k in "${!RESULT[@]}"; do printf "%-40s %s\n" "$k" "${RESULT[$k]}"; done | sort
for k in "${!RESULT[@]}"; do [ "${RESULT[$k]}" = PASS ] || fail=1; done
echo "logs and JSON in $OUT"
[ $fail -eq 0 ] && echo "OVERALL: PASS" || echo "OVERALL: FAIL"
exit $fail
