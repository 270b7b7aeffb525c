// The page in Chromium: every number shown must be the core's (compared with the same wasm module
// loaded in node), the form must keep what the user typed, and the share link must reopen the
// same state. Needs web/dist/ (npm run build:web), build-wasm/ and /usr/bin/chromium; no network.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { formatBytes, formatCount } from '../../web/src/format.js';
import { plainText } from '../../web/src/words.js';
import { RESULTS_DIR, ROOT, launchBrowser, loadNodeCore, missingPrerequisites, startServer, waitForAnswer } from './helpers.mjs';

const missing = missingPrerequisites();
if (missing) console.warn(`browser tests skipped: ${missing}`);

const SEED_CONFIG = { model: { preset: 'seed-toy-70m' }, training: { precision: 'seed_14p', micro_batch_size: 4, seq_len: 512 } };
const withTraining = (config, training) => ({ ...config, training: { ...config.training, ...training } });
const id = (path) => `#field-${path.replace(/\./g, '-')}`;
let TOY_NAME = '';  // the preset's display name, from the core

describe('memfit page', { skip: missing || false, concurrency: false }, () => {
  let server;
  let browser;
  let core;
  let page;  // one page walked through tests 1–4, as a user would
  const consoleErrors = [];

  before(async () => {
    [server, browser, core] = await Promise.all([startServer(), launchBrowser(), loadNodeCore()]);
    TOY_NAME = plainText(core.presets().find((p) => p.id === 'seed-toy-70m').name);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  // Console errors are collected from every page (and must stay empty), except on a page that
  // tests failing Hub requests (`quiet`), where Chromium logs each failed fetch.
  async function open(search = '', { quiet = false } = {}) {
    const p = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
    if (!quiet) p.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
    p.on('pageerror', (e) => consoleErrors.push(e.message));
    await p.goto(`${server.url}${search}`);
    await p.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
    return p;
  }

  // The numbers on the page equal the core's for `config`: exact bytes in data-bytes, text by the
  // page's formatting rule (GiB by default).
  async function assertShows(p, config) {
    const expected = core.estimate(config);
    assert.equal(expected.ok, true, JSON.stringify(expected.errors));
    await waitForAnswer(p, expected);
    for (const [key, bytes] of Object.entries(expected.breakdown)) {
      const cell = p.getByTestId(`breakdown-${key}`);
      assert.equal(await cell.getAttribute('data-bytes'), String(bytes), `breakdown.${key} bytes`);
      assert.equal((await cell.textContent()).trim(), formatBytes(bytes), `breakdown.${key} text`);
    }
    for (const [testid, bytes] of [['peak-allocated', expected.peak_allocated_bytes], ['device-total', expected.device_total_bytes]]) {
      const el = p.getByTestId(testid);
      assert.equal(await el.getAttribute('data-bytes'), String(bytes), testid);
      assert.equal((await el.textContent()).trim(), formatBytes(bytes), testid);
    }
    assert.equal(await p.getByTestId('verdict').locator('[data-verdict]').getAttribute('data-verdict'), expected.fits.verdict);
    if (expected.device_total_band_bytes) {
      // The published runs' band on the device total: its top is the number the verdict judges.
      const band = p.getByTestId('device-total-band').locator('[data-bytes]');
      assert.deepEqual(await band.evaluateAll((els) => els.map((e) => Number(e.dataset.bytes))), expected.device_total_band_bytes);
      assert.equal(expected.device_total_band_bytes[1], expected.fits.need_high_bytes);
    }
    if (expected.fits.verdict === 'fits') {
      // Beside the headroom to the whole card: what is left under the budget at the band's top.
      assert.equal(await p.getByTestId('budget-left').getAttribute('data-bytes'), String(expected.fits.budget_left_bytes));
      assert.equal(expected.fits.budget_left_bytes, expected.fits.budget_bytes - expected.fits.need_high_bytes);
    }
    assert.equal((await p.getByTestId('parameter-count').textContent()).trim(), formatCount(expected.parameter_count));
    const gpuRows = p.getByTestId('gpu-table').locator('tbody tr');
    assert.equal(await gpuRows.count(), expected.gpus.length);
    for (const [i, g] of expected.gpus.entries()) {
      assert.equal(await gpuRows.nth(i).getAttribute('data-gpu'), g.gpu);
      // A card without the recipe's tensor cores (the core's `lacks`) says so instead of a memory verdict.
      assert.equal(await gpuRows.nth(i).locator('[data-verdict]').getAttribute('data-verdict'), g.runs ? g.verdict : 'lacks');
    }
    assert.equal(await p.locator('.answer').getAttribute('data-stale'), 'false');
    return expected;
  }

  test('1. the seeds\' toy model, chosen through the form, shows the core\'s numbers', async () => {
    page = await open();
    await page.locator('#preset-input').click();
    await page.locator('#preset-input').fill('toy');
    await page.locator('[data-preset-id="seed-toy-70m"]').click();
    assert.equal(await page.locator('#preset-input').inputValue(), TOY_NAME);
    await page.selectOption(id('training.precision'), 'seed_14p');
    await page.fill(id('training.micro_batch_size'), '4');
    await page.fill(id('training.seq_len'), '512');

    const expected = await assertShows(page, SEED_CONFIG);
    // The seeds' own numbers (seeds/000): 1.85 GiB on the device; 1.49 GiB with full checkpointing.
    assert.equal(formatBytes(expected.device_total_bytes), '1.85 GiB');
    assert.equal((await page.getByTestId('device-total').textContent()).trim(), '1.85 GiB');
    assert.match(await page.getByTestId('recipe').textContent(), /14 bytes per parameter/);
    assert.match(await page.getByTestId('budget-rule').textContent(), /80.85\s%/);

    await page.selectOption(id('training.checkpointing'), 'full');
    await assertShows(page, withTraining(SEED_CONFIG, { checkpointing: 'full' }));
    assert.equal((await page.getByTestId('device-total').textContent()).trim(), '1.49 GiB');
    await page.selectOption(id('training.checkpointing'), 'none');

    // The address bar follows once typing pauses (replaceState is debounced).
    const search = '?v=2&preset=seed-toy-70m&micro_batch_size=4&seq_len=512&precision=seed_14p';
    await page.waitForFunction((s) => location.search === s, search, { timeout: 5000 });
    assert.equal(await page.getByTestId('copy-link').getAttribute('data-href'), `${server.url}${search}`);
  });

  test('2. changing the batch size updates every number', async () => {
    await page.fill(id('training.micro_batch_size'), '16');
    await assertShows(page, withTraining(SEED_CONFIG, { micro_batch_size: 16 }));
    await page.fill(id('training.micro_batch_size'), '8');
    await assertShows(page, withTraining(SEED_CONFIG, { micro_batch_size: 8 }));
    // The scaling table is the core's too.
    const scaling = core.scalingTable(withTraining(SEED_CONFIG, { micro_batch_size: 8 }));
    const rows = page.getByTestId('scaling-table').locator('tbody tr');
    assert.equal(await rows.count(), scaling.rows.length);
    const first = await rows.first().locator('[data-bytes]').evaluateAll((els) => els.map((e) => e.dataset.bytes));
    const r = scaling.rows[0];
    assert.deepEqual(first, [r.static_bytes, r.activation_bytes, r.total_bytes, r.activation_checkpointed_bytes, r.total_checkpointed_bytes].map(String));
  });

  test('3. the share link reopens the same state in a new page', async () => {
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url.slice(0, -1) });
    await page.getByTestId('copy-link').click();
    await page.getByTestId('copy-link').filter({ hasText: 'Link copied' }).waitFor({ timeout: 5000 });
    const link = await page.evaluate(() => navigator.clipboard.readText());
    assert.equal(link, await page.getByTestId('copy-link').getAttribute('data-href'));
    await page.waitForFunction((href) => location.href === href, link, { timeout: 5000 });
    assert.match(link, /[?&]micro_batch_size=8(&|$)/);
    const fields = ['training.micro_batch_size', 'training.seq_len', 'training.precision', 'training.checkpointing', 'model.hidden_size'];
    await page.locator('.architecture > summary').click();
    const before = {};
    for (const f of fields) before[f] = await page.inputValue(id(f));

    const second = await open(new URL(link).search);
    assert.equal(await second.locator('#preset-input').inputValue(), TOY_NAME);
    await second.locator('.architecture > summary').click();
    for (const f of fields) assert.equal(await second.inputValue(id(f)), before[f], f);
    await assertShows(second, withTraining(SEED_CONFIG, { micro_batch_size: 8 }));
    await second.waitForFunction((href) => location.href === href, link, { timeout: 5000 });
    await second.close();
  });

  test('4. an invalid value is marked with the core\'s message and kept as typed', async () => {
    const box = page.locator(id('training.micro_batch_size'));
    const field = page.locator('[data-field="training.micro_batch_size"]');
    // Where the answer and the field typed in stand before any input is refused.
    const tops = () => page.evaluate(() => [
      document.querySelector('[data-testid="device-total"]').getBoundingClientRect().top + scrollY,
      document.querySelector('#field-training-micro_batch_size').getBoundingClientRect().top + scrollY,
    ]);
    const before = await tops();
    for (const typed of ['abc', '0']) {
      await box.fill(typed);
      const config = withTraining(SEED_CONFIG, { micro_batch_size: typed === 'abc' ? 'abc' : 0 });
      const answer = core.estimate(config);
      assert.equal(answer.ok, false);
      const message = answer.errors.find((e) => e.field === 'training.micro_batch_size').message;
      assert.match(message, /from 1 to 1,000,000/);
      assert.equal(await box.inputValue(), typed);
      // The core answers from its worker: wait for its message under the field.
      await field.locator('.field-error').filter({ hasText: message }).waitFor({ timeout: 10000 });
      assert.equal(await box.getAttribute('aria-invalid'), 'true');
      assert.equal((await field.locator('.field-error').textContent()).trim(), message);
      assert.match(await page.getByTestId('error-banner').textContent(), /Micro-batch size/);
      assert.equal(await page.locator('.answer').getAttribute('data-stale'), 'true');
      // The banner lies over the faded answer: nothing on the page moved when it came.
      assert.deepEqual(await tops(), before);
      // Announced once, by the banner (an alert): the polite summary does not repeat it.
      assert.equal((await page.locator('.answer-area > p[aria-live]').textContent()).trim(), '');
      const text = await page.locator('body').innerText();
      assert.doesNotMatch(text, /\bNaN\b|\bundefined\b|\bInfinity\b/);
      // The link keeps the bad value as typed, so it reopens the same problem.
      assert.match(await page.getByTestId('copy-link').getAttribute('data-href'), new RegExp(`micro_batch_size=${typed}(&|$)`));
    }
    // The greyed result is still the last valid one (micro-batch 8).
    const last = core.estimate(withTraining(SEED_CONFIG, { micro_batch_size: 8 }));
    assert.equal(await page.getByTestId('device-total').getAttribute('data-bytes'), String(last.device_total_bytes));
    await box.fill('4');
    await assertShows(page, SEED_CONFIG);
  });

  test('5. a pasted Hugging Face config.json fills the model; bad JSON and the Hub\'s errors are explained', async () => {
    const p = await open('', { quiet: true });
    await p.locator('.import > summary').click();
    const gpt2 = readFileSync(join(ROOT, 'tests/fixtures/hf/gpt2.json'), 'utf8');
    await p.fill('#hf-config-text', gpt2);
    await p.getByRole('button', { name: 'Use this config' }).click();
    assert.equal((await p.getByTestId('import-parameter-count').textContent()).trim(), '124,439,808');
    // The import's own count is the core's answer to the paste; the results follow from the worker,
    // so wait for them rather than read them at once.
    await p.getByTestId('parameter-count').filter({ hasText: /^\s*124,439,808\s*$/ }).waitFor({ timeout: 10000 });
    assert.match(await p.locator('#preset-input').inputValue(), /^custom \(gpt2/);
    await p.locator('.architecture > summary').click();
    assert.equal(await p.inputValue(id('model.hidden_size')), '768');
    assert.equal(await p.inputValue(id('model.model_type')), 'gpt2');
    // The page's numbers are the core's for the imported model run as its transformers class runs
    // (GPT-2: softmax in the compute dtype, fused q/k/v), as `memfit --hf-config` gives.
    // The core reads the class from model_type: the model alone carries it.
    const imported = core.importHfConfig(gpt2);
    const { preset: _unused, ...model } = imported.model;
    const fromFile = core.estimate({ model: { preset: '', ...model } });
    assert.equal(fromFile.implementation.softmax_dtype, 'compute');
    assert.equal(fromFile.implementation.projections, 'fused');
    assert.equal(fromFile.peak_allocated_bytes, core.estimate({ model: { preset: 'gpt2' } }).peak_allocated_bytes);
    await assertShows(p, { model: { preset: '', ...model } });

    // The link reopens the imported model, with the same numbers (its class comes back with model_type).
    const second = await open(new URL(await p.getByTestId('copy-link').getAttribute('data-href')).search);
    await second.getByTestId('parameter-count').filter({ hasText: /^\s*124,439,808\s*$/ }).waitFor({ timeout: 10000 });
    await assertShows(second, { model: { preset: '', ...model } });
    await second.close();

    await p.fill('#hf-config-text', '{"model_type": "gpt2", "n_embd": 768,');
    await p.getByRole('button', { name: 'Use this config' }).click();
    const errors = p.getByTestId('import-errors');
    assert.match(await errors.textContent(), /not valid JSON/);
    assert.match(await errors.textContent(), /line 1, column/);

    // The Hub: offline, gated and missing, all without the network (requests intercepted).
    const answers = [
      [(route) => route.abort('internetdisconnected'), /Could not reach huggingface\.co/],
      [(route) => route.fulfill({ status: 401, body: 'unauthorized' }), /gated or private/],
      [(route) => route.fulfill({ status: 404, body: 'missing' }), /No config\.json found/],
    ];
    for (const [handler, message] of answers) {
      await p.route('https://huggingface.co/**', handler);
      await p.fill('#hub-model-id', 'meta-llama/Llama-3.1-8B');
      await p.getByRole('button', { name: 'Fetch' }).click();
      await p.getByTestId('hub-status').filter({ hasText: message }).waitFor({ timeout: 5000 });
      await p.unroute('https://huggingface.co/**');
    }
    // A config.json served by the (intercepted) Hub is imported like a pasted one.
    await p.route('https://huggingface.co/**', (route) => route.fulfill({ status: 200, body: gpt2, contentType: 'application/json' }));
    await p.fill('#hub-model-id', 'openai-community/gpt2');
    await p.getByRole('button', { name: 'Fetch' }).click();
    await p.getByTestId('import-parameter-count').filter({ hasText: '124,439,808' }).waitFor({ timeout: 5000 });
    // The page kept working throughout.
    assert.equal(await p.locator('.answer').getAttribute('data-stale'), 'false');
    await p.close();
  });

  test('a vision-language config.json brings its vision tower, held frozen, into the numbers and the link', async () => {
    // Qwen2.5-VL-7B's shapes (the Hub file's keys, as tests/core/hf_import_test.cpp reads them).
    const file = JSON.stringify({
      model_type: 'qwen2_5_vl', hidden_size: 3584, intermediate_size: 18944, num_hidden_layers: 28,
      num_attention_heads: 28, num_key_value_heads: 4, vocab_size: 152064, max_position_embeddings: 128000,
      tie_word_embeddings: false,
      vision_config: { depth: 32, hidden_size: 1280, intermediate_size: 3420, out_hidden_size: 3584 },
    });
    const p = await open('', { quiet: true });
    await p.locator('.import > summary').click();
    await p.fill('#hf-config-text', file);
    await p.getByRole('button', { name: 'Use this config' }).click();
    await p.getByTestId('parameter-count').filter({ hasText: /^\s*7,615,616,512\s*$/ }).waitFor({ timeout: 10000 });
    const imported = core.importHfConfig(file);
    assert.equal(imported.model.vision_type, 'qwen2_5_vl');
    const { preset: _unused, ...model } = imported.model;
    const config = { model: { preset: '', ...model } };
    const answer = core.estimate(config);
    assert.equal(answer.vision_parameter_count, 676550144);
    // The tower is in the weights: 16 bits of the fp32-loaded AMP model's 32 per parameter more than
    // the same model without it.
    const without = core.estimate({ model: { ...config.model, vision_type: 'none' } });
    assert.equal(answer.breakdown.parameters - without.breakdown.parameters, 4 * 676550144);
    await assertShows(p, config);
    assert.match(await p.locator('body').innerText(), /vision encoder and projector \(676,550,144 parameters, outside the parameter count\)/);
    assert.equal((await p.getByTestId('vision-parameter-count').textContent()).trim(), '676,550,144');
    assert.match(await p.getByTestId('import-result').textContent(), /7,615,616,512 parameters in its language model, and a vision tower of 676,550,144, held frozen\./);
    // The form shows the tower in its own group; the link carries it and reopens the same numbers.
    await p.locator('.architecture > summary').click();
    assert.equal(await p.inputValue(id('model.vision_type')), 'qwen2_5_vl');
    assert.equal(await p.inputValue(id('model.vision_depth')), '32');
    const href = await p.getByTestId('copy-link').getAttribute('data-href');
    assert.match(href, /vision_type=qwen2_5_vl/);
    const second = await open(new URL(href).search);
    await assertShows(second, config);
    // A full fine-tune that trains the tower too (TRL's default; here asked for): its choice sits in
    // the training section's fold, and its gradients and states join the numbers and the link.
    const more = second.locator('section[aria-labelledby="section-training"] details.more');
    await more.locator('summary').click();
    await second.selectOption(id('training.finetune.train_vision'), 'all');
    const trained = { ...config, training: { finetune: { train_vision: 'all' } } };
    const trainedAnswer = core.estimate(trained);
    assert.equal(trainedAnswer.trainable_parameter_count - answer.trainable_parameter_count, 676550144);
    assert.equal(trainedAnswer.breakdown.optimizer_states - answer.breakdown.optimizer_states, 8 * 676550144);
    await assertShows(second, trained);
    assert.match(await second.locator('body').innerText(), /vision encoder and projector \(676,550,144 parameters, outside the parameter count\) train with the language model/);
    assert.match(await second.getByTestId('copy-link').getAttribute('data-href'), /train_vision=all/);
    assert.match(await second.locator('#h-params').locator('..').innerText(), /Vision tower \(trained\)\s*676,550,144/);
    // Images through the tower: what they keep joins the activations, from the core.
    await second.fill(id('training.images_per_sample'), '1');
    await second.locator(id('training.image_patches')).waitFor({ timeout: 10000 });
    await second.fill(id('training.image_patches'), '1024');
    const withImages = { ...config, training: { images_per_sample: 1, image_patches: 1024, finetune: { train_vision: 'all' } } };
    const imagesAnswer = core.estimate(withImages);
    assert.ok(imagesAnswer.vision_activation_bytes > 0);
    assert.equal(imagesAnswer.breakdown.activations - trainedAnswer.breakdown.activations, imagesAnswer.vision_activation_bytes);
    await assertShows(second, withImages);
    assert.match(await second.getByTestId('copy-link').getAttribute('data-href'), /images_per_sample=1&image_patches=1024|image_patches=1024/);
    await second.close();
    await p.close();
  });

  test('editing an architecture field makes the preset custom; a GPU row selects the GPU; units switch', async () => {
    const p = await open('?v=2&preset=seed-toy-70m&precision=seed_14p');
    await p.locator('.architecture > summary').click();
    await p.fill(id('model.num_hidden_layers'), '12');
    assert.equal(await p.locator('#preset-input').inputValue(), `custom (from ${TOY_NAME})`);
    assert.match(await p.getByTestId('copy-link').getAttribute('data-href'), /preset=seed-toy-70m&num_hidden_layers=12&precision=seed_14p$/);
    const config = { model: { preset: 'seed-toy-70m', num_hidden_layers: 12 }, training: { precision: 'seed_14p' } };
    await assertShows(p, config);
    // Typing the preset's own value back makes it the preset again.
    await p.fill(id('model.num_hidden_layers'), '6');
    assert.equal(await p.locator('#preset-input').inputValue(), TOY_NAME);

    await p.getByTestId('gpu-table').locator('tr[data-gpu="a100-40gb"] button').click();
    assert.equal(await p.inputValue(id('hardware.gpu')), 'a100-40gb');
    const onA100 = await assertShows(p, { ...config, model: { preset: 'seed-toy-70m' }, hardware: { gpu: 'a100-40gb' } });
    assert.match(await p.getByTestId('verdict').textContent(), /A100 40GB/);

    await p.getByRole('radio', { name: 'GB' }).click();
    assert.equal((await p.getByTestId('device-total').textContent()).trim(), formatBytes(onA100.device_total_bytes, 'GB'));
    assert.match((await p.getByTestId('device-total').textContent()).trim(), / GB$/);
    await p.close();
  });

  test('a field the core does not read under the current settings is disabled or left out, and never lost', async () => {
    const p = await open('');
    const galore = p.locator('[data-field="training.galore_rank"]');
    assert.equal(await galore.count(), 0);  // "More" leaves out what does not apply and was not touched
    await p.selectOption(id('training.optimizer'), 'galore_adamw');
    assert.equal(await galore.count(), 1);
    assert.equal(await p.isEnabled(id('training.galore_rank')), true);
    await p.fill(id('training.galore_rank'), '64');
    await p.selectOption(id('training.optimizer'), 'adamw');
    // Typed, then made irrelevant: still shown, disabled, with the reason and the value kept.
    assert.equal(await galore.count(), 1);
    assert.equal(await p.isEnabled(id('training.galore_rank')), false);
    assert.equal(await p.inputValue(id('training.galore_rank')), '64');
    assert.match(await galore.locator('.field-hint').textContent(), /applies when .* is galore_adamw, galore_adamw_8bit or apollo/);
    // The rank applies to DoRA as to LoRA (the core's list, not the page's).
    await p.selectOption(id('training.finetune.method'), 'dora');
    assert.equal(await p.isEnabled(id('training.finetune.lora_rank')), true);
    await p.selectOption(id('training.finetune.method'), 'ia3');
    assert.equal(await p.isEnabled(id('training.finetune.lora_rank')), false);
    await p.close();
    // A value the core refuses stays editable where the field does not apply, so it can be put
    // right: an FSDP version left set when DeepSpeed's engine shards.
    const refused = await open('?v=2&num_gpus=8&zero_stage=3&framework=deepspeed&fsdp_version=2', { quiet: true });
    const version = refused.locator('[data-field="parallel.fsdp_version"]');
    await version.locator('.field-error').waitFor({ timeout: 10000 });
    assert.match(await version.locator('.field-hint').textContent(), /does not apply when framework is deepspeed/);
    assert.equal(await refused.isEnabled(id('parallel.fsdp_version')), true);
    await refused.selectOption(id('parallel.fsdp_version'), 'auto');
    await version.waitFor({ state: 'detached', timeout: 10000 });
    await refused.close();
  });

  test('the run line names the method: a PEFT method by name, a full fine-tune of some blocks by count', async () => {
    const some = await open('?v=2&preset=llama-2-7b&trainable_layers=4');
    assert.match(await some.getByTestId('run-line').textContent(), /full fine-tune of 4 of 32 blocks/);
    await some.close();
    const prefix = await open('?v=2&preset=llama-2-7b&method=prefix_tuning');
    const line = await prefix.getByTestId('run-line').textContent();
    assert.doesNotMatch(line, /full fine-tune/);
    assert.match(line, /prefix/i);
    await prefix.close();
    // The framework, when it is not transformers (the default), is named too.
    const litgpt = await open('?v=2&preset=llama-2-7b&framework=litgpt');
    assert.match(await litgpt.getByTestId('run-line').textContent(), /Llama 2 7B · LitGPT · micro-batch/);
    await litgpt.close();
    assert.doesNotMatch(line, /Hugging Face/);
  });

  test('the run line names the layout over the GPUs: ZeRO, the parallel degrees, offload', async () => {
    const p = await open('?v=2&preset=mixtral-8x7b&num_gpus=16&zero_stage=3&tensor=2&expert=8&offload_optimizer=true');
    assert.match(await p.getByTestId('run-line').textContent(), / · 16 GPUs, ZeRO-3, TP 2, EP 8, states offloaded$/);
    await p.close();
    const one = await open('?v=2&preset=llama-2-7b');
    assert.match(await one.getByTestId('run-line').textContent(), / · 1 GPU$/);
    // AdamW's step as the core resolved it: the Trainer's own fused step, unless the link says
    // otherwise (a version-1 link meant PyTorch's multi-tensor step).
    assert.match(await one.getByTestId('run-line').textContent(), / · AdamW \(fused\) · /);
    await one.close();
    const old = await open('?v=1&preset=llama-2-7b');
    assert.match(await old.getByTestId('run-line').textContent(), / · AdamW \(multi-tensor\) · /);
    await old.close();
    const offloaded = await open('?v=2&preset=llama-2-7b&zero_stage=3&offload_optimizer=true&offload_params=true');
    assert.match(await offloaded.getByTestId('run-line').textContent(), / · 1 GPU, ZeRO-3, states and weights offloaded$/);
    await offloaded.close();
  });

  test('the "More settings" folds: closed, counting what is changed, opened by a refused value', async () => {
    const p = await open('?v=2&preset=llama-2-7b&optimizer_impl=fused');
    const more = p.locator('section[aria-labelledby="section-training"] details.more');
    assert.equal(await more.getAttribute('open'), null);
    assert.match(await more.locator('summary').textContent(), /More settings\s*1 changed/);
    assert.equal(await p.locator(id('training.optimizer_impl')).count(), 0);
    await more.locator('summary').click();
    assert.equal(await p.inputValue(id('training.optimizer_impl')), 'fused');
    await p.close();
    // A fold counts what opening it shows, and is left out when that is nothing (ZeRO-3 makes
    // the parallelism section's one plain-DDP knob irrelevant).
    const z3 = await open('?v=2&num_gpus=8&zero_stage=3');
    assert.equal(await z3.locator('section[aria-labelledby="section-parallel"] details.more').count(), 0);
    for (const fold of await z3.locator('details.more').all()) {
      const said = Number((await fold.locator('summary .summary-note').textContent()).match(/^(\d+) fields?$/)[1]);
      await fold.locator('summary').click();
      // The fold draws its fields after the toggle event: wait for that render, then count.
      await fold.locator('.field').nth(said - 1).waitFor({ timeout: 10000 });
      assert.equal(await fold.locator('.field').count(), said);
    }
    await z3.close();
    // A value the core refuses opens its fold, so the message by the field is in sight.
    const bad = await open('?v=2&price_per_gpu_hour=-3', { quiet: true });
    const hardware = bad.locator('section[aria-labelledby="section-hardware"] details.more');
    await bad.waitForFunction(() => document.querySelector('section[aria-labelledby="section-hardware"] details.more')?.open, null, { timeout: 10000 });
    assert.equal(await bad.inputValue(id('hardware.price_per_gpu_hour')), '-3');
    assert.match(await hardware.locator('.field-error').textContent(), /got -3/);
    await bad.close();
  });

  test('an idealised model from the source documents shows the count the estimate uses, and its shape\'s', async () => {
    const p = await open('?v=2&preset=seed-llama-7b');
    const expected = core.estimate({ model: { preset: 'seed-llama-7b' } });
    assert.equal(expected.parameter_count, 7000000000);
    assert.match(await p.locator('#preset-detail').innerText(),
      new RegExp(`^7,000,000,000 parameters as the source states \\(its shape counts ${formatCount(expected.architecture_parameter_count)}\\)`));
    await p.close();
  });

  test('on a card without the recipe\'s number format the verdict says so, as the core\'s warning does', async () => {
    const p = await open('?v=2&method=lora&gpu=v100-32gb');
    assert.equal((await p.getByTestId('verdict-lacks').innerText()).trim(), 'No bf16 tensor cores: PyTorch emulates it here, far slower');
    await p.close();
    const runs = await open('?v=2&method=lora&gpu=a100-80gb');
    assert.equal(await runs.getByTestId('verdict-lacks').count(), 0);
    await runs.close();
  });

  test('the precision recipe of a PEFT run states its frozen base apart, and names the recipe once', async () => {
    const p = await open('?v=2&method=lora&base_bits=4');
    const recipe = (await p.getByTestId('recipe').innerText()).replace(/\s+/g, ' ');
    assert.match(recipe, /^BF16 mixed precision \(PyTorch AMP\): fp32 weights/);
    assert.match(recipe, /4 B \/ trainable parameter trained weights/);
    assert.match(recipe, /0\.5 B \/ frozen parameter frozen base \(4-bit\)/);
    await p.close();
  });

  test('with no answer, the page points at the fields it marked, or at the message when no field carries it', async () => {
    const fields = await open('?v=2&zero_stage=7', { quiet: true });
    await fields.locator('.empty-results').filter({ hasText: 'fix the highlighted fields' }).waitFor({ timeout: 10000 });
    await fields.close();
    // Too large to count in bytes: the message names the fields to reduce; none is marked.
    const whole = await open('?v=2&seq_len=100000000&micro_batch_size=1000000', { quiet: true });
    await whole.locator('.empty-results').filter({ hasText: 'as the message above says' }).waitFor({ timeout: 10000 });
    assert.equal(await whole.locator('.field-error').count(), 0);
    await whole.close();
  });

  test('a greyed answer keeps its own model in the run line when the model changes under an invalid field', async () => {
    const p = await open('?v=2&preset=llama-2-7b', { quiet: true });
    const before = await p.getByTestId('peak-allocated').getAttribute('data-bytes');
    await p.fill(id('training.micro_batch_size'), 'abc');
    await p.locator('.answer[data-stale="true"]').waitFor({ timeout: 10000 });
    await p.locator('#preset-input').click();
    await p.locator('#preset-input').fill('gpt-2');
    await p.locator('[data-preset-id="gpt2"]').click();
    await p.waitForFunction(() => document.querySelector('#preset-input')?.value.startsWith('GPT-2'), null, { timeout: 5000 });
    // Still invalid: the numbers are Llama 2 7B's, and so is the name beside them.
    assert.equal(await p.locator('.answer').getAttribute('data-stale'), 'true');
    assert.equal(await p.getByTestId('peak-allocated').getAttribute('data-bytes'), before);
    assert.match(await p.getByTestId('run-line').textContent(), /^Llama 2 7B · /);
    // Fixed: GPT-2's answer, under its name.
    await p.fill(id('training.micro_batch_size'), '1');
    await p.locator('.answer[data-stale="false"]').waitFor({ timeout: 10000 });
    await p.waitForFunction(() => /^GPT-2/.test(document.querySelector('[data-testid="run-line"]')?.textContent ?? ''), null, { timeout: 10000 });
    await p.close();
  });

  test('a link with names memfit does not know says so on the page, and the rest of it is used', async () => {
    const p = await open('?v=2&preset=llama-2-7b&seq_len=1024&foo=1&seqlen=4&units=MB', { quiet: true });
    const notes = p.getByTestId('link-notes');
    const text = await notes.textContent();
    assert.match(text, /^Part of this link could not be used as written: settings memfit does not know, left out: "foo", "seqlen"; units must be GiB or GB; got "MB"\./);
    assert.match(await p.getByTestId('run-line').textContent(), /1,024 tokens/);
    await notes.getByRole('button', { name: 'Dismiss' }).click();
    assert.equal(await notes.count(), 0);
    // The focus goes to the answer, not to the page's top.
    assert.equal(await p.evaluate(() => document.activeElement?.id), 'results');
    await p.close();
    // Bounded: the first five unknown names, then a count.
    const many = await open('?v=2&a=1&b=1&c=1&d=1&e=1&f=1&g=1', { quiet: true });
    assert.match(await many.getByTestId('link-notes').textContent(), /"a", "b", "c", "d", "e" and 2 more\./);
    await many.close();
    const clean = await open('?v=2&preset=llama-2-7b');
    assert.equal(await clean.getByTestId('link-notes').count(), 0);
    await clean.close();
  });

  test('a .json file dropped on the paste box is imported', async () => {
    const p = await open();
    await p.locator('.import > summary').click();
    const text = readFileSync(join(ROOT, 'tests/fixtures/hf/gpt2.json'), 'utf8');
    await p.locator('#hf-config-text').evaluate((area, content) => {
      const data = new DataTransfer();
      data.items.add(new File([content], 'config.json', { type: 'application/json' }));
      area.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    }, text);
    await p.getByTestId('import-parameter-count').filter({ hasText: '124,439,808' }).waitFor({ timeout: 5000 });
    await p.close();
  });

  test('links: unknown parameters are ignored with a warning; bad values reach the form as typed', async () => {
    const warnings = [];
    const p = await browser.newPage();
    p.on('console', (m) => m.type() === 'warning' && warnings.push(m.text()));
    await p.goto(`${server.url}?v=2&preset=seed-gpt2-small&seq_len=-3&colour=red&lora_targets=q,zz`);
    await p.waitForSelector('html[data-ready="true"]');
    assert.ok(warnings.some((w) => w.includes('colour')), warnings.join('\n'));
    assert.equal(await p.inputValue(id('training.seq_len')), '-3');
    assert.match(await p.locator('[data-field="training.seq_len"] .field-error').textContent(), /must be an integer from 1 to/);
    assert.match(await p.locator('.empty-results').textContent(), /No result yet/);
    assert.doesNotMatch(await p.locator('body').innerText(), /\bNaN\b|\bundefined\b/);
    await p.close();
  });

  test('LoRA targets offer only the modules the model has; one it lacks, from a link, stays with the reason', async () => {
    const chips = async (search) => {
      const p = await browser.newPage();
      await p.goto(`${server.url}?v=2&method=lora&${search}`);
      await p.waitForSelector('html[data-ready="true"]');
      const found = await p.$$eval('[data-field="training.finetune.lora_targets"] .chip',
        (els) => els.map((e) => ({ text: e.textContent, bad: e.classList.contains('chip-bad') })));
      const error = await p.locator('[data-field="training.finetune.lora_targets"] .field-error').allTextContents();
      await p.close();
      return { found, error: error.join(' ') };
    };
    const names = ({ found }) => found.map((c) => c.text);
    const dense = await chips('preset=llama-3-8b');
    assert.ok(names(dense).includes('Query') && names(dense).includes('Fused q/k/v'), names(dense).join(', '));
    assert.ok(!names(dense).some((n) => /MoE router|Gated DeltaNet/.test(n)), names(dense).join(', '));
    const hybrid = await chips('preset=qwen3.5-9b');
    assert.ok(names(hybrid).includes('Gated DeltaNet') && !names(hybrid).includes('MoE router'), names(hybrid).join(', '));
    const moe = await chips('preset=mixtral-8x7b');
    assert.ok(names(moe).includes('MoE router') && !names(moe).includes('Gated DeltaNet'), names(moe).join(', '));
    // Chosen in a link for a dense model: kept, marked, and the core's refusal shown beside it.
    const chosen = await chips('preset=llama-3-8b&lora_targets=q,v,router');
    const router = chosen.found.find((c) => c.text.startsWith('MoE router'));
    assert.ok(router?.bad && /not in this model/.test(router.text), JSON.stringify(chosen.found));
    assert.match(chosen.error, /router needs a mixture-of-experts model/);
  });

  test('nothing from a link is inserted as HTML', async () => {
    const p = await browser.newPage();
    await p.goto(`${server.url}?v=2&model_type=${encodeURIComponent('<img src=x onerror=window.pwned=1>')}&gpu=${encodeURIComponent('<b>x</b>')}`);
    await p.waitForSelector('html[data-ready="true"]');
    assert.equal(await p.evaluate(() => window.pwned), undefined);
    assert.equal(await p.locator('img').count(), 0);
    assert.match(await p.locator('.banner').textContent(), /<b>x<\/b>/);
    await p.close();
  });

  test('a tight run says whether its estimate or only the band of published runs is over the budget', async () => {
    // Llama 3 8B on 8 H100s under FSDP: the estimate is within the 85 % budget, the top of the band
    // where published runs like it landed is not.
    const search = '?v=2&preset=llama-3-8b&framework=torchtitan&loss=compiled_ce&compile=yes&num_gpus=8&zero_stage=3' +
      '&precision=bf16_fsdp&seq_len=8192';
    const config = { model: { preset: 'llama-3-8b' }, training: { framework: 'torchtitan', loss: 'compiled_ce', compile: 'yes',
      precision: 'bf16_fsdp', seq_len: 8192 }, parallel: { num_gpus: 8, zero_stage: 3 } };
    const expected = core.estimate(config);
    assert.equal(expected.fits.verdict, 'tight');
    assert.ok(expected.fits.need_bytes <= expected.fits.budget_bytes && expected.fits.need_high_bytes > expected.fits.budget_bytes);
    const p = await open(search);
    await waitForAnswer(p, expected);
    const text = (await p.getByTestId('verdict').textContent()).replace(/\s+/g, ' ');
    const ratio = (expected.fits.need_high_bytes / expected.fits.need_bytes).toFixed(2).replace(/[.]/g, '\\.');
    assert.match(text, new RegExp(`1 in 10 published runs like it measured ${ratio}× memfit's estimate or more: ${formatBytes(expected.fits.need_high_bytes).replace(/[.]/g, '\\.')} on this card, over the 85 % budget`));
    await p.close();
  });

  test('6. screenshots for the record (test-results/)', async () => {
    mkdirSync(RESULTS_DIR, { recursive: true });
    const wide = await open('?v=2&preset=seed-toy-70m&micro_batch_size=4&seq_len=512&precision=seed_14p');
    await wide.screenshot({ path: join(RESULTS_DIR, 'page.png') });
    await wide.screenshot({ path: join(RESULTS_DIR, 'page-full.png'), fullPage: true });
    const wideEditLink = await wide.getByTestId('run-edit').isVisible();
    await wide.close();
    const narrow = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
    await narrow.goto(`${server.url}?v=2&preset=seed-toy-70m&micro_batch_size=4&seq_len=512&precision=seed_14p`);
    await narrow.waitForSelector('html[data-ready="true"]');
    await narrow.screenshot({ path: join(RESULTS_DIR, 'page-narrow.png'), fullPage: true });
    // QA pass 3: on a phone the form comes after the whole answer; the run's summary links to it
    // (a wide screen has the form beside the answer, and no such link).
    assert.equal(wideEditLink, false);
    await narrow.getByTestId('run-edit').click();
    await narrow.waitForFunction(() => Math.abs(document.getElementById('inputs').getBoundingClientRect().top) < 40);
    assert.equal(await narrow.evaluate(() => location.hash), '', 'the address keeps no #inputs');
    await narrow.screenshot({ path: join(RESULTS_DIR, 'page-narrow-inputs.png') });
    // Review: on a phone the banner is in the flow above (nothing lies over the form or the link),
    // and the field typed in stays where it is when it comes (the browser's scroll anchoring).
    const box = narrow.locator(id('training.micro_batch_size'));
    await box.scrollIntoViewIfNeeded();
    const top = () => box.evaluate((e) => e.getBoundingClientRect().top);
    const was = await top();
    await box.fill('0');
    await narrow.getByTestId('error-banner').waitFor();
    assert.ok(Math.abs((await top()) - was) < 2, `the field moved by ${(await top()) - was} px`);
    assert.equal(await narrow.getByTestId('error-banner').evaluate((e) => getComputedStyle(e).position), 'static');
    await narrow.close();
    assert.deepEqual(consoleErrors, []);
  });
});
