// The page's words for what the core says (web/src/words.js): pure, no browser.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { knowGpuNames, plainText, valueWords } from '../../web/src/words.js';

test('a recipe note names its recipe once', () => {
  assert.equal(plainText('bf16_mixed: PyTorch AMP: fp32 weights, gradients and states.'),
    'BF16 mixed precision (PyTorch AMP): fp32 weights, gradients and states.');
  assert.equal(plainText('bf16_master: Megatron / DeepSpeed: bf16 weights, fp32 main gradients.'),
    'BF16 weights, fp32 master copy (Megatron, DeepSpeed): bf16 weights, fp32 main gradients.');
  // A lead that adds something is kept.
  assert.equal(plainText('bf16_fsdp: FSDP mixed precision (param_dtype bf16): fp32 weights'),
    'BF16 with FSDP mixed precision (accelerate, torchtitan): FSDP mixed precision (param_dtype bf16): fp32 weights');
  assert.equal(plainText('fp32: fp32 weights, gradients and optimizer states.'), 'FP32, full precision: fp32 weights, gradients and optimizer states.');
  // A preset's source as the core writes it: seed paths in words, code spans without backticks.
  assert.equal(plainText('seeds/001 `config` and SimpleTransformer'), 'source document 001 config and SimpleTransformer');
  assert.equal(plainText('LoRA: 2.15 bytes of weights'), 'LoRA: 2.15 bytes of weights');
});

test('a change of GPU reads as the card\'s name once the GPU table is known', () => {
  assert.equal(valueWords('hardware.gpu', 'zz-test-card'), 'zz-test-card');
  knowGpuNames([{ id: 'zz-test-card', name: 'Test Card 99GB' }, { id: 'no-name' }, null]);
  assert.equal(valueWords('hardware.gpu', 'zz-test-card'), 'Test Card 99GB');
  assert.equal(valueWords('hardware.gpu', 'no-name'), 'no-name');
  assert.equal(valueWords('training.micro_batch_size', 4), '4');
});

test('a number typed with its thousands grouped, as the page writes it, is that number', async () => {
  const { toConfigValue } = await import('../../web/src/fields.js');
  const field = { field: 'training.micro_batch_size', kind: 'integer' };
  assert.equal(toConfigValue(field, '1,000'), 1000);
  assert.equal(toConfigValue(field, '1 000 000'), 1000000);
  assert.equal(toConfigValue(field, '-1,000'), -1000);
  // Not grouped by thousands: left as typed, for the core to name the problem.
  assert.equal(toConfigValue(field, '12,34'), '12,34');
  assert.equal(toConfigValue(field, '1,000 000'), '1,000 000');
  assert.equal(toConfigValue({ field: 'training.finetune.lora_targets', kind: 'list' }, 'q,v').length, 2);
});
