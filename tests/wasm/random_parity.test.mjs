// Native and wasm give the same bytes for seeded random configurations: the native CLI answers a
// batch (one configuration per line, `memfit --batch`), the wasm module each line, and the two
// texts must be identical. MEMFIT_PARITY_CASES overrides the default count.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const wasmDir = path.join(root, 'build-wasm/wasm');
const cli = path.join(root, 'build/cli/memfit');
const { default: createMemfit } = await import(path.join(wasmDir, 'memfit.mjs'));
const memfit = await createMemfit({ wasmBinary: fs.readFileSync(path.join(wasmDir, 'memfit.wasm')) });

// mulberry32: a small seeded generator, so every run checks the same configurations.
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const presets = JSON.parse(memfit.presets()).map((p) => p.id);
const schema = JSON.parse(memfit.config_schema());
const choices = Object.fromEntries(schema.filter((f) => f.choices).map((f) => [f.field, f.choices]));

function configuration(next) {
  const pick = (list) => list[Math.floor(next() * list.length)];
  const config = {
    model: { preset: pick(presets) },
    training: {
      micro_batch_size: 1 + Math.floor(next() * 8),
      seq_len: pick([128, 512, 1000, 2048, 4096]),
      precision: pick(choices['training.precision']),
      optimizer: pick(choices['training.optimizer']),
      optimizer_impl: pick(choices['training.optimizer_impl']),
      checkpointing: pick(choices['training.checkpointing']),
      attention: pick(choices['training.attention']),
      dropout: pick([0, 0.1]),
      finetune: next() < 0.4 ? { method: 'lora', base_bits: pick([4, 8, 16]), lora_rank: pick([4, 16, 64]) } : { method: 'full' },
    },
    parallel: pick([{}, { num_gpus: 8, zero_stage: 3 }, { num_gpus: 8, tensor: 2, zero_stage: 1 }, { num_gpus: 4, pipeline: 2 }]),
    hardware: { gpu: pick(['a100-80gb', 'h100-sxm-80gb', 'rtx-4090-24gb']) },
  };
  if (next() < 0.05) config.training.seq_len = 'not a number';  // errors must agree too
  return config;
}

test('random configurations: native and wasm answer with the same text', () => {
  const count = Number(process.env.MEMFIT_PARITY_CASES ?? 2000);
  const next = random(20261201);
  const lines = Array.from({ length: count }, () => JSON.stringify(configuration(next)));
  const native = execFileSync(cli, ['--batch'], { input: lines.join('\n') + '\n', maxBuffer: 1 << 30 })
    .toString()
    .split('\n');
  let ok = 0;
  lines.forEach((line, i) => {
    const fromWasm = memfit.estimate(line);
    assert.equal(fromWasm, native[i], `configuration ${i}: ${line}`);
    if (JSON.parse(fromWasm).ok) ok += 1;
  });
  assert.ok(ok > count / 2, `${ok} of ${count} configurations were valid`);
});
