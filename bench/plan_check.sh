#!/usr/bin/env bash
# The planner's answers for a fixed set of configurations, one `memfit plan --json` per line, so
# that a change meant only to make the planner faster can be checked to change no plan:
#   bench/plan_check.sh build/cli/memfit > before.txt   (on the old build)
#   bench/plan_check.sh build/cli/memfit > after.txt && diff before.txt after.txt
# With --plans-only the "search" counts (how the answer was found) are left out: a faster search
# decides the same layouts with fewer estimates.
set -euo pipefail
memfit=${1:?usage: plan_check.sh path/to/memfit [--plans-only]}
only=${2:-}
cases=(
  '{"model":{"preset":"llama-3-70b"},"training":{"seq_len":8192,"goal":"pretrain"}}|--gpus-min 1 --gpus-max 1024'
  '{"model":{"preset":"llama-3-8b"},"training":{"seq_len":4096}}|--gpus-min 1 --gpus-max 64'
  '{"model":{"preset":"mixtral-8x7b"},"training":{"seq_len":4096,"goal":"pretrain"}}|--gpus-min 8 --gpus-max 256'
  '{"model":{"preset":"llama-3.2-1b"},"training":{"seq_len":4096,"goal":"full_finetune"},"hardware":{"gpu":"l4-24gb"}}|--gpus-min 1 --gpus-max 8 --global-batch-tokens 262144 --top 3'
  '{"model":{"preset":"llama-3.2-1b"},"training":{"seq_len":2048},"hardware":{"gpu":"v100-32gb"}}|--gpus 8'
  '{"model":{"preset":"llama-3-8b"},"training":{"seq_len":4096,"goal":"pretrain"},"hardware":{"gpu":"a100-80gb"}}|--gpus 8'
  '{"model":{"preset":"llama-3-70b"},"training":{"seq_len":8192,"goal":"pretrain"}}|--gpus-min 1 --gpus-max 1024 --rank-by cost --top 5'
  '{"model":{"preset":"llama-3-70b"},"training":{"seq_len":8192,"goal":"full_finetune","attention":"eager"}}|--gpus-min 8 --gpus-max 128 --tp-comm-overlap'
  '{"model":{"preset":"llama-3-8b"},"training":{"seq_len":8192,"method":"lora","goal":"peft"},"hardware":{"gpu":"a100-40gb"}}|--gpus-min 1 --gpus-max 16'
  '{"model":{"preset":"qwen2-72b"},"training":{"seq_len":32768,"goal":"pretrain","precision":"bf16_master"},"hardware":{"gpu":"h200-141gb"}}|--gpus-min 16 --gpus-max 512 --keep-precision'
  '{"model":{"preset":"gemma-2-9b"},"training":{"seq_len":8192,"goal":"full_finetune","micro_batch_size":2,"grad_accum_steps":8},"parallel":{"num_gpus":16},"hardware":{"gpu":"a100-80gb","fragmentation":0.1}}|--gpus-min 2 --gpus-max 32'
  '{"model":{"preset":"qwen3-30b-a3b"},"training":{"seq_len":4096,"goal":"pretrain"},"hardware":{"gpu":"mi300x-192gb"}}|--gpus-min 1 --gpus-max 128 --top 20'
  '{"model":{"preset":"deepseek-v3"},"training":{"seq_len":4096,"goal":"pretrain"}}|--gpus-min 64 --gpus-max 2048 --top 3'
  '{"model":{"preset":"gpt2-xl"},"training":{"seq_len":1024,"goal":"pretrain"},"hardware":{"gpu":"t4-16gb"}}|--gpus-min 1 --gpus-max 32'
  '{"model":{"preset":"llama-3-8b"},"training":{"seq_len":4096,"goal":"full_finetune","optimizer_in_backward":true},"hardware":{"gpu":"rtx-4090-24gb"}}|--gpus-min 1 --gpus-max 16'
  '{"model":{"preset":"llama-3-8b"},"training":{"seq_len":4096},"parallel":{"pipeline_schedule":"sequential"}}|--gpus-min 1 --gpus-max 64'
)
for c in "${cases[@]}"; do
  config=${c%%|*}
  printf '== %s %s\n' "$config" "${c#*|}"
  # shellcheck disable=SC2086
  out=$(printf '%s' "$config" | "$memfit" plan --config - --json ${c#*|})
  if [ "$only" = --plans-only ]; then
    out=$(printf '%s' "$out" | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); r.pop("search",None); print(json.dumps(r,indent=1))')
  fi
  printf '%s\n' "$out"
done
