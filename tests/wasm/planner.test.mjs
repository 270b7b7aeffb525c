// The planner's functions in the wasm module: the same answers as the native command line, byte for
// byte, and errors as data.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const wasmDir = path.join(root, 'build-wasm/wasm');
const cli = path.join(root, 'build/cli/memfit');
// The planner's module; solve and step_time are in the page's main module too.
const { default: createMemfit } = await import(path.join(wasmDir, 'memfit-planner.mjs'));
const memfit = await createMemfit({ wasmBinary: fs.readFileSync(path.join(wasmDir, 'memfit-planner.wasm')) });
const { default: createMain } = await import(path.join(wasmDir, 'memfit.mjs'));
const main = await createMain({ wasmBinary: fs.readFileSync(path.join(wasmDir, 'memfit.wasm')) });

function native(args, config) {
  return JSON.parse(execFileSync(cli, [...args, '--config', '-', '--json'], { input: JSON.stringify(config) }).toString());
}

const seventy = { model: { preset: 'llama-3-70b' }, training: { seq_len: 8192, goal: 'pretrain' } };

test('solve: wasm = native', () => {
  const config = { model: { preset: 'llama-3-8b' }, training: { seq_len: 4096, checkpointing: 'full' }, parallel: { num_gpus: 8, zero_stage: 3 } };
  for (const target of ['max-micro-batch', 'max-seq-len', 'min-gpus', 'max-layers', 'max-width']) {
    const fromWasm = JSON.parse(memfit.solve(JSON.stringify(config), target, ''));
    assert.equal(fromWasm.ok, true, target);
    assert.deepEqual(fromWasm, native(['solve', target], config), target);
  }
  const tensor = JSON.parse(memfit.solve(JSON.stringify(seventy), 'min-gpus', 'tensor'));
  assert.deepEqual(tensor, native(['solve', 'min-gpus', '--family', 'tensor'], seventy));
});

test('plan and step time: wasm = native', () => {
  const options = { gpus_min: 1, gpus_max: 1024, top: 5 };
  const fromWasm = JSON.parse(memfit.plan(JSON.stringify(seventy), JSON.stringify(options)));
  assert.equal(fromWasm.ok, true);
  assert.equal(fromWasm.plans.length, 5);
  assert.deepEqual(fromWasm, native(['plan', '--gpus-min', '1', '--gpus-max', '1024', '--top', '5'], seventy));
  const t = JSON.parse(memfit.step_time(JSON.stringify(fromWasm.plans[0].config), JSON.stringify({ train_tokens: 1e12 })));
  assert.equal(t.step_time_s, fromWasm.plans[0].step_time_s);
  assert.deepEqual(t, native(['time', '--train-tokens', '1e12'], fromWasm.plans[0].config));
});

test('exports: wasm = native', () => {
  const config = { model: { preset: 'llama-3-70b' }, training: { precision: 'bf16_master', checkpointing: 'selective', seq_len: 8192, grad_accum_steps: 16 },
    parallel: { num_gpus: 64, tensor: 8, pipeline: 4, virtual_stages: 5, sequence_parallel: true, zero_stage: 1 } };
  for (const engine of ['megatron', 'deepspeed', 'fsdp', 'torchtitan', 'torchtune']) {
    const fromWasm = JSON.parse(memfit.export_plan(JSON.stringify(config), engine));
    if (engine === 'megatron') assert.equal(fromWasm.ok, true);
    else assert.equal(fromWasm.ok, false, engine);  // TP + PP + master weights: Megatron-LM only
    if (fromWasm.ok) assert.deepEqual(fromWasm, native(['export', engine], config));
  }
});

test('the main module has solve and step_time, not the planner', () => {
  assert.equal(typeof main.solve, 'function');
  assert.equal(typeof main.step_time, 'function');
  assert.equal(main.plan, undefined);
  assert.equal(main.export_plan, undefined);
  const config = JSON.stringify({ model: { preset: 'llama-3-8b' }, training: { seq_len: 4096 } });
  assert.equal(main.solve(config, 'max-micro-batch', ''), memfit.solve(config, 'max-micro-batch', ''));
});

test('bad input comes back as data, never as a throw', () => {
  const cases = [
    () => memfit.solve('not json', 'max-micro-batch', ''),
    () => memfit.solve('{}', 'max-gpus', ''),
    () => memfit.solve('{}', 'min-gpus', 'nope'),
    () => memfit.plan('{}', '{"gpus_max": -1}'),
    () => memfit.plan('{}', '[1,2]'),
    () => memfit.step_time('{"training":{"precision":"fp8_mixed"},"hardware":{"gpu":"a100-80gb"}}', ''),
    () => memfit.export_plan('{}', 'horovod'),
  ];
  for (const call of cases) {
    const r = JSON.parse(call());
    assert.equal(r.ok, false);
    assert.ok(r.errors.length > 0 && r.errors[0].field && r.errors[0].message);
  }
});
