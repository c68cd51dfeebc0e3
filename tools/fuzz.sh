#!/usr/bin/env bash
# Fuzzes the loaders of untrusted input with libFuzzer (docs/reliability.md "Fuzzing"): builds the
# `fuzz` preset (clang-14 + libFuzzer + ASan + UBSan; needs clang-14 and libclang-rt-14-dev, which
# `ADTREE_FUZZ_DEPS=1 tools/install-deps.sh` installs), then runs the targets in fuzz/ one after
# the other, each on a fresh copy of its seed corpus (fuzz/corpus/<target>/ is never written).
#
#   tools/fuzz.sh                      60 s per target
#   tools/fuzz.sh 300                  300 s per target
#   tools/fuzz.sh --runs 10000000      10 million inputs per target
#   tools/fuzz.sh --runs 10000000 --max-time 720 --targets fuzz_manifest,fuzz_settings
#
# Options: --targets a,b (default: all), --max-time S (cap per target with --runs),
# --timeout S (libFuzzer's per-input limit, 10 s; it is wall-clock, so raise it when the fuzzer
# shares the machine with builds: a starved process trips it on inputs that take milliseconds),
# --summary FILE (default docs/bench/fuzz-summary.json), --no-build. ADTREE_JOBS sets build jobs (2).
# One fuzzer runs at a time, in-process (no -jobs / -workers), under `nice -n 10`.
# Prints per target: inputs executed, exec/s, corpus size before and after, findings (crash-*,
# leak-*, timeout-*, oom-* files, kept under build/fuzz/run/<target>/artifacts/), writes the JSON
# summary and exits 1 when any target found something.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_TARGETS=(fuzz_safetensors fuzz_manifest fuzz_run_file fuzz_settings fuzz_png_text
             fuzz_torch_checkpoint fuzz_pack_cache)
# Longest input per target: a little above the largest seed, so mutations stay near real sizes.
declare -A MAX_LEN=([fuzz_safetensors]=4096 [fuzz_manifest]=8192 [fuzz_run_file]=16384
                    [fuzz_settings]=2048 [fuzz_png_text]=8192 [fuzz_torch_checkpoint]=8192
                    [fuzz_pack_cache]=8192)

seconds=60 runs="" max_time="" build=1 summary=docs/bench/fuzz-summary.json timeout=10
targets=("${ALL_TARGETS[@]}")
while (($#)); do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --max-time) max_time="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --targets) IFS=, read -r -a targets <<<"$2"; shift 2 ;;
    --summary) summary="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    [0-9]*) seconds="$1"; shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if ! command -v clang++-14 >/dev/null; then
  echo "fuzz.sh: clang++-14 not found; install clang-14 and libclang-rt-14-dev" \
       "(ADTREE_FUZZ_DEPS=1 tools/install-deps.sh)" >&2
  exit 2
fi
if ((build)); then
  # The same lock as every other build in this tree: never two builds at once on two cores.
  flock /tmp/adtree-build.lock cmake --preset fuzz >/dev/null
  flock /tmp/adtree-build.lock cmake --build --preset fuzz -j "${ADTREE_JOBS:-2}"
fi

export LSAN_OPTIONS="suppressions=$PWD/cmake/lsan.supp:print_suppressions=0"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

results=() failed=0
for t in "${targets[@]}"; do
  bin=build/fuzz/fuzz/$t
  [[ -x "$bin" ]] || { echo "fuzz.sh: $bin is not built" >&2; exit 2; }
  work=build/fuzz/run/$t
  rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts"
  cp fuzz/corpus/"$t"/* "$work/corpus/"
  seeds=$(find "$work/corpus" -type f | wc -l)
  args=(-max_len="${MAX_LEN[$t]:-4096}" -rss_limit_mb=2048 -timeout="$timeout" -print_final_stats=1
        -artifact_prefix="$work/artifacts/")
  if [[ -n "$runs" ]]; then
    args+=(-runs="$runs")
    [[ -n "$max_time" ]] && args+=(-max_total_time="$max_time")
  else
    args+=(-max_total_time="$seconds")
  fi
  echo "== $t: ${args[*]}"
  start=$(date +%s)
  rc=0
  nice -n 10 "$bin" "${args[@]}" "$work/corpus" >"$work/log.txt" 2>&1 || rc=$?
  wall=$(($(date +%s) - start))
  final_stat() { sed -n "s/^stat::$1: *//p" "$work/log.txt" | tail -1; }
  execs=$(final_stat number_of_executed_units); eps=$(final_stat average_exec_per_sec)
  rss=$(final_stat peak_rss_mb)
  corpus=$(find "$work/corpus" -type f | wc -l)
  mapfile -t found < <(find "$work/artifacts" -type f \
    \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
  # A run that stopped without leaving an artifact (e.g. the fuzzer itself failed) counts too.
  if ((rc != 0 && ${#found[@]} == 0)); then found=("exit status $rc, see $work/log.txt"); fi
  ((${#found[@]})) && failed=1
  printf '   %s inputs in %s s (%s exec/s), peak RSS %s MB, corpus %s -> %s, findings: %s\n' \
    "${execs:-?}" "$wall" "${eps:-?}" "${rss:-?}" "$seeds" "$corpus" "${#found[@]}"
  for f in "${found[@]}"; do echo "   finding: $f"; done
  ((${#found[@]})) && grep -m3 -E 'ERROR: |runtime error|==ERROR|deadly signal|uncaught' \
    "$work/log.txt" | sed 's/^/   /' || true
  results+=("$(python3 -c 'import json,sys; print(json.dumps(dict(target=sys.argv[1],
    executions=int(sys.argv[2] or 0), exec_per_s=int(sys.argv[3] or 0), wall_s=int(sys.argv[4]),
    peak_rss_mb=int(sys.argv[5] or 0), seeds=int(sys.argv[6]), corpus=int(sys.argv[7]),
    max_len=int(sys.argv[8]), findings=sys.argv[9:])))' "$t" "$execs" "$eps" "$wall" "$rss" \
    "$seeds" "$corpus" "${MAX_LEN[$t]:-4096}" "${found[@]}")")
done

FUZZ_TIMEOUT="$timeout" python3 - "$summary" "${runs:-}" "$seconds" "${max_time:-}" "${results[@]}" <<'EOF'
import datetime, json, os, subprocess, sys
path, runs, seconds, max_time, *rows = sys.argv[1:]
def sh(*cmd):
    try: return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
    except OSError: return ""
out = {
    "date": datetime.date.today().isoformat(),
    "commit": sh("git", "rev-parse", "--short", "HEAD"),
    "compiler": sh("clang++-14", "--version").splitlines()[0],
    "limit": ({"runs": int(runs), **({"max_seconds": int(max_time)} if max_time else {})}
              if runs else {"seconds_per_target": int(seconds)}),
    "options": f"-rss_limit_mb=2048 -timeout={os.environ['FUZZ_TIMEOUT']}, ASan + UBSan (fatal), "
               "nice -n 10, one at a time",
    "targets": [json.loads(r) for r in rows],
}
with open(path, "w") as f:
    json.dump(out, f, indent=2)
    f.write("\n")
print("summary:", path)
EOF
if ((failed)); then echo "fuzz.sh: findings (see above)"; exit 1; fi
echo "fuzz.sh: no findings"
