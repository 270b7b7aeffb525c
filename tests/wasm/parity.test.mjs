// The wasm module and the native command line give byte-identical answers for the same inputs,
// and no input makes the module throw.
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

function native(config) {
  const out = execFileSync(cli, ['--config', '-', '--json'], { input: JSON.stringify(config) });
  return JSON.parse(out.toString());
}

const configs = [
  {},
  { model: { preset: 'seed-toy-70m' }, training: { precision: 'seed_14p', micro_batch_size: 4, seq_len: 512 } },
  { model: { preset: 'seed-toy-70m' }, training: { precision: 'seed_14p', micro_batch_size: 4, seq_len: 512, checkpointing: 'full' } },
  { model: { preset: 'gpt2' }, training: { micro_batch_size: 8, attention: 'eager', dropout: 0.1 } },
  { model: { preset: 'mixtral-8x7b' }, training: { precision: 'bf16_master', optimizer: 'adamw_8bit' }, parallel: { num_gpus: 8, zero_stage: 3 } },
  { model: { preset: 'llama-2-7b' }, training: { finetune: { method: 'lora', base_bits: 4, lora_rank: 64, lora_targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] } } },
  { model: { preset: 'deepseek-v3' }, training: { seq_len: 4096, checkpointing: 'full' }, parallel: { num_gpus: 2048, tensor: 8, pipeline: 16, expert: 8, zero_stage: 1 } },
  { model: { preset: 'gemma-2-9b' }, training: { optimizer: 'adafactor', precision: 'bf16', chunked_loss: true }, hardware: { gpu: 'rtx-4090-24gb' } },
  { model: { preset: 'llama-3-70b' }, training: { micro_batch_size: 2, seq_len: 8192, checkpointing: 'selective' }, parallel: { num_gpus: 64, tensor: 8, pipeline: 4, sequence_parallel: true } },
];

test('wasm and native results are identical', () => {
  for (const config of configs) {
    const fromWasm = JSON.parse(memfit.estimate(JSON.stringify(config)));
    assert.equal(fromWasm.ok, true, JSON.stringify(fromWasm.errors));
    assert.deepEqual(fromWasm, native(config), JSON.stringify(config));
  }
});

test('the seeds toy table comes back in exact bytes', () => {
  const r = JSON.parse(memfit.estimate(JSON.stringify(configs[1])));
  assert.equal(r.parameter_count, 70640640);
  assert.equal(r.breakdown.parameters, 141281280);
  assert.equal(r.breakdown.activations, 465567744);
  assert.equal(r.device_total_bytes, 1991407616);
});

test('bad input comes back as data naming the field, never as a throw', () => {
  const cases = [
    ['{"training":{"seq_len":"abc"}}', 'training.seq_len'],
    ['{"training":{"micro_batch_size":-3}}', 'training.micro_batch_size'],
    ['{"model":{"num_attention_heads":0}}', 'model.num_attention_heads'],
    ['not json', '(configuration)'],
    ['', '(configuration)'],
    ['{"hardware":{"gpu":"<img src=x onerror=alert(1)>"}}', 'hardware.gpu'],
    ['[' .repeat(10000), '(configuration)'],
  ];
  for (const [text, field] of cases) {
    const r = JSON.parse(memfit.estimate(text));
    assert.equal(r.ok, false, text);
    assert.equal(r.errors[0].field, field, text);
  }
});

test('Hugging Face import, presets and the schema cross the boundary', () => {
  const gpt2 = fs.readFileSync(path.join(root, 'tests/fixtures/hf/gpt2.json'), 'utf8');
  const imported = JSON.parse(memfit.import_hf_config(gpt2));
  assert.equal(imported.ok, true);
  assert.equal(imported.parameter_count, 124439808);
  const bad = JSON.parse(memfit.import_hf_config('{"model_type":"whisper"}'));
  assert.equal(bad.ok, false);
  assert.match(bad.errors[0].message, /not supported; supported: gpt2/);
  const presets = JSON.parse(memfit.presets());
  assert.ok(presets.length >= 36);
  for (const p of presets) {
    if (p.published_parameter_count) assert.equal(p.parameter_count, p.published_parameter_count, p.id);
  }
  const schema = JSON.parse(memfit.config_schema());
  assert.ok(schema.some((f) => f.field === 'training.micro_batch_size' && f.min === 1));
  const table = JSON.parse(memfit.scaling_table('{"training":{"precision":"seed_14p","micro_batch_size":4}}'));
  assert.equal(table.rows.length, 5);
});

test('hostile config.json imports give named errors in wasm too', () => {
  const base = '"model_type":"llama","vocab_size":100,"intermediate_size":64,"num_hidden_layers":2';
  const cases = [
    ['{"model_type":', 'config.json'],
    ['[]', 'config.json'],
    ['{"model_type":"llama","hidden_size":"4096"}', 'hidden_size'],
    [`{${base},"hidden_size":-5,"num_attention_heads":4}`, 'hidden_size'],
    [`{${base},"hidden_size":30,"num_attention_heads":4}`, 'num_attention_heads'],
    [`{${base},"hidden_size":32,"num_attention_heads":4,"num_key_value_heads":3}`, 'num_key_value_heads'],
    [`{${base},"hidden_size":1e400,"num_attention_heads":4}`, 'config.json'],
    [`{${base},"hidden_size":99999999999999999999999,"num_attention_heads":4}`, 'hidden_size'],
    ['{"model_type":"<script>alert(1)</script>"}', 'model_type'],
  ];
  for (const [text, field] of cases) {
    const r = JSON.parse(memfit.import_hf_config(text));
    assert.equal(r.ok, false, text);
    assert.ok(r.errors.some((e) => e.field === field), `${text}: ${JSON.stringify(r.errors)}`);
  }
});

test('suggestions cross the boundary and every one lowers the memory', () => {
  const config = { model: { preset: 'llama-3-8b' }, training: { micro_batch_size: 4, seq_len: 4096 }, hardware: { gpu: 'a100-80gb' } };
  const now = JSON.parse(memfit.estimate(JSON.stringify(config))).device_total_bytes;
  const r = JSON.parse(memfit.suggestions(JSON.stringify(config)));
  assert.equal(r.ok, true);
  assert.ok(r.suggestions.length > 0);
  for (const s of r.suggestions) assert.ok(s.device_total_bytes < now, s.title);
});
