# Sourced by the GPU training scripts (train.sh, train-stages.sh) after `cd` to the repository
# root with OUT and IN set: OUT made absolute, a timed `step` logger into OUT/run.log, and the
# carried inputs checked.
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
t0=$SECONDS
step() { echo "== $* ($((SECONDS - t0)) s)" | tee -a "$OUT/run.log"; }
[[ -f $IN/codes.safetensors && -f $IN/vq/vq.safetensors ]] || {
  echo "$(basename "$0"): no inputs in $IN (run tools/gpu-train-inputs.sh on a CPU machine)" >&2
  exit 1
}
