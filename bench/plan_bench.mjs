// The planner through the wasm module under node: medians of the same cases as bench/plan_bench.cpp,
// layouts decided per second, and the wasm / native ratio (native from build/bench/memfit_bench).
// Usage: node bench/plan_bench.mjs   (after scripts/setup.sh)
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// The planner's module (memfit-planner.mjs: the page loads it when the planner opens).
const { default: createMemfit } = await import(path.join(root, 'build-wasm/wasm/memfit-planner.mjs'));
const memfit = await createMemfit({ wasmBinary: fs.readFileSync(path.join(root, 'build-wasm/wasm/memfit-planner.wasm')) });

// The same JSON as bench/plan_bench.cpp's kPlanCases, in the same order.
const cases = [
  ['llama-3-70b, 1-1024 GPUs', { model: { preset: 'llama-3-70b' }, training: { seq_len: 8192, goal: 'pretrain' } }, { gpus_min: 1, gpus_max: 1024 }],
  ['llama-3-8b, 1-64 GPUs', { model: { preset: 'llama-3-8b' }, training: { seq_len: 4096 } }, { gpus_min: 1, gpus_max: 64 }],
  ['mixtral-8x7b, 8-256 GPUs', { model: { preset: 'mixtral-8x7b' }, training: { seq_len: 4096, goal: 'pretrain' } }, { gpus_min: 8, gpus_max: 256 }],
];

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function nativeMedians() {
  try {
    const out = execFileSync(path.join(root, 'build/bench/memfit_bench'),
      ['--benchmark_filter=BM_PlanJson', '--benchmark_repetitions=5', '--benchmark_format=json'], { maxBuffer: 1 << 26 });
    const runs = JSON.parse(out.toString()).benchmarks.filter((b) => b.aggregate_name === 'median');
    return runs.map((b) => b.cpu_time);  // ms (the benchmark's unit)
  } catch {
    return [];
  }
}

const native = nativeMedians();
cases.forEach(([name, config, options], i) => {
  const c = JSON.stringify(config), o = JSON.stringify(options);
  let result = JSON.parse(memfit.plan(c, o));  // warm up
  const times = [];
  for (let run = 0; run < 9; run++) {
    const t0 = performance.now();
    result = JSON.parse(memfit.plan(c, o));
    times.push(performance.now() - t0);
  }
  const ms = median(times);
  const layouts = result.search.layouts;
  const ratio = native[i] ? ` (native ${native[i].toFixed(1)} ms, wasm/native ${(ms / native[i]).toFixed(2)})` : '';
  console.log(`${name.padEnd(28)} median ${ms.toFixed(1)} ms, ${(layouts / ms / 1000).toFixed(2)} M layouts/s ` +
              `(${layouts} decided, ${result.search.timed} timed, ${result.search.estimates} estimates)${ratio}`);
});
