// The native benchmark's cases through the wasm module under node (medians of many runs).
// Usage: node bench/wasm_bench.mjs   (after scripts/setup.sh)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { default: createMemfit } = await import(path.join(root, 'build-wasm/wasm/memfit.mjs'));
const memfit = await createMemfit({ wasmBinary: fs.readFileSync(path.join(root, 'build-wasm/wasm/memfit.wasm')) });

const cases = {
  'seed toy (seed_14p)': { model: { preset: 'seed-toy-70m' }, training: { precision: 'seed_14p', micro_batch_size: 4, seq_len: 512 } },
  'llama-3-8b B4 T8192': { model: { preset: 'llama-3-8b' }, training: { micro_batch_size: 4, seq_len: 8192 } },
  'deepseek-v3 3D parallel': { model: { preset: 'deepseek-v3' }, training: { checkpointing: 'full' }, parallel: { num_gpus: 2048, tensor: 8, pipeline: 16, zero_stage: 1 } },
  'llama-2-7b QLoRA': { model: { preset: 'llama-2-7b' }, training: { optimizer: 'adamw_8bit', finetune: { method: 'lora', base_bits: 4 } } },
};

function median(fn, runs = 2000) {
  for (let i = 0; i < 200; i++) fn();  // warm up
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] * 1000;  // µs
}

for (const [name, config] of Object.entries(cases)) {
  const text = JSON.stringify(config);
  const us = median(() => JSON.parse(memfit.estimate(text)));
  console.log(`${name.padEnd(28)} estimate + JSON round trip: median ${us.toFixed(1)} µs`);
}
const us = median(() => JSON.parse(memfit.scaling_table(JSON.stringify(cases['llama-3-8b B4 T8192']))), 500);
console.log(`${'scaling table (5 models x 2)'.padEnd(28)} median ${us.toFixed(1)} µs`);
