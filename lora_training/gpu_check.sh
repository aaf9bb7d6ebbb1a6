#!/usr/bin/env bash
# Real-size GPU check: a few LoRA steps at 1024x688 + one generation, per model, from LOCAL weights.
# Reports peak GPU memory and seconds per step (see gpu_check.py). Not run in CI.
#
#   FLUX_PATH=/models/FLUX.1-dev QWEN_IMAGE_PATH=/models/Qwen-Image bash lora_training/gpu_check.sh
#
# Environment: FLUX_PATH, QWEN_IMAGE_PATH (local diffusers folders; a model whose variable is unset is
# skipped), STEPS (default 6), OUT (report folder; default ./gpu_check_out), PYTHON (default python),
# LIMIT_S (seconds per model, default 540), EXTRA (extra arguments for gpu_check.py, e.g. --no_generate).
set -u
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
OUT="${OUT:-gpu_check_out}"
STEPS="${STEPS:-6}"
LIMIT_S="${LIMIT_S:-540}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
"$PYTHON" -c "import torch, diffusers, peft, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'diffusers', diffusers.__version__, 'peft', peft.__version__, 'transformers', transformers.__version__)"
status=0
run() {  # model_type path
  local mt="$1" path="$2"
  if [ -z "$path" ]; then echo "skip $mt (no path)"; return; fi
  echo "=== $mt from $path ==="
  timeout "$LIMIT_S" "$PYTHON" lora_training/gpu_check.py --model_type "$mt" --pretrained_model_name_or_path "$path" \
    --workdir "$OUT/$mt" --report "$OUT/report_$mt.json" --steps "$STEPS" ${EXTRA:-} \
    2>&1 | tee "$OUT/log_$mt.txt"
  local rc=${PIPESTATUS[0]}
  echo "=== $mt exit $rc ==="
  [ "$rc" -eq 0 ] || status=1
}
run flux "${FLUX_PATH:-}"
run qwen-image "${QWEN_IMAGE_PATH:-}"
exit $status
