// The headline's answer and the planner on the page: every number is the core's (solve() from the
// page's wasm module, plan() and exports() from the planner's, both loaded in node as the oracle),
// Apply changes the form and the estimate, the exports copy (or say why not), the planner's state
// travels in the share link (and a hostile link does no harm), and the main thread never blocks
// for more than 50 ms while the planner works. Also the planner's link codec and words (pure).
// Needs web/dist/ (npm run build:web), build-wasm/ and /usr/bin/chromium; no network.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { formatBytes, formatPercent } from '../../web/src/format.js';
import {
  ENGINE_WORDS, formatDuration, formatMoney, formatRate, formatTokens, layoutWords, planOptions, plannerMessage,
} from '../../web/src/planner.js';
import { DEFAULT_PLANNER, decodeView, encodeView } from '../../web/src/view.js';
import {
  RESULTS_DIR, launchBrowser, loadNodeCore, loadNodePlanner, longTasksDuring, missingPrerequisites, startServer, waitForAnswer,
  waitForIdle,
} from './helpers.mjs';

const missing = missingPrerequisites();
if (missing) console.warn(`browser tests skipped: ${missing}`);

// The default configuration (Llama 3 8B, full fine-tune on one H100) does not fit; the seeds' toy
// model fits.
const TOO_BIG = { model: { preset: 'llama-3-8b' } };
const FITS = { model: { preset: 'seed-toy-70m' } };
const FITS_LINK = '?v=2&preset=seed-toy-70m';
// The planner's default options, as the page sends them (view.js DEFAULT_PLANNER).
const DEFAULT_OPTIONS = { top: 10, gpus_min: 1, gpus_max: 64 };

describe('the planner\'s link and words (pure)', () => {
  test('closed, the planner writes nothing; open, only what differs from its defaults', () => {
    const view = { units: 'GiB', tables: [], sweep: 'micro_batch_size' };
    assert.equal(encodeView({ ...view, planner: { ...DEFAULT_PLANNER, gpus_max: '8' } }), '');
    assert.equal(encodeView({ ...view, planner: { ...DEFAULT_PLANNER, open: 1 } }), '&planner=1');
    const planner = { ...DEFAULT_PLANNER, open: 1, gpus_min: '8', gpus_max: '128', global_batch_tokens: '2e6', rank_by: 'cost', keep_precision: 1, plan: 3 };
    const q = encodeView({ ...view, planner });
    assert.equal(q, '&planner=1&plan_gpus_min=8&plan_gpus_max=128&plan_global_batch_tokens=2e6&plan_rank_by=cost&plan_keep_precision=1&plan=3');
    assert.deepEqual(decodeView(q).view.planner, planner);
    assert.deepEqual(decodeView(q).problems, []);
  });

  test('text as typed survives the trip, odd characters included', () => {
    const planner = { ...DEFAULT_PLANNER, open: 1, gpus_min: 'a&b=c d/é', train_tokens: ' 1e12' };
    const back = decodeView(encodeView({ units: 'GiB', tables: [], sweep: 'micro_batch_size', planner })).view.planner;
    assert.equal(back.gpus_min, 'a&b=c d/é');
    assert.equal(back.train_tokens, ' 1e12');
  });

  test('a hostile link: each bad value is named and falls back to its default', () => {
    const long = '9'.repeat(500);
    const { view, problems } = decodeView(`?planner=yes&plan=abc&plan_rank_by=<script>&plan_gpus_max=${long}&plan_keep_precision=2&plan_gpus_min=<b>x</b>`);
    assert.deepEqual(view.planner, { ...DEFAULT_PLANNER, gpus_min: '<b>x</b>' });
    assert.equal(problems.length, 5);
    for (const p of problems) assert.ok(p.length < 120, p);
    assert.deepEqual(decodeView('?plan=1000').view.planner.plan, 0);
    assert.deepEqual(decodeView('?plan=-1').problems.length, 1);
  });

  test('fuzz: 20,000 seeded hostile links never throw, keep only the planner\'s own values, and survive a round trip', () => {
    let seed = 12345;
    const next = () => {
      seed ^= seed << 13; seed >>>= 0;
      seed ^= seed >> 17;
      seed ^= seed << 5; seed >>>= 0;
      return seed / 2 ** 32;
    };
    const pick = (list) => list[Math.floor(next() * list.length)];
    const names = ['planner', 'plan', 'plan_gpus_min', 'plan_gpus_max', 'plan_global_batch_tokens', 'plan_train_tokens',
      'plan_rank_by', 'plan_keep_precision', '__proto__', 'constructor', 'plan_open', 'plan_top', 'open'];
    const values = ['', '0', '1', '2', '-1', '001', '999', '1000', 'cost', 'step_time', 'COST', '1e12', 'NaN', 'Infinity',
      '<script>alert(1)</script>', '\u0000', '%', '%zz', 'x'.repeat(41), 'x'.repeat(40), '🙂'.repeat(30), 'a&b=c'];
    for (let i = 0; i < 20000; i += 1) {
      const parts = Array.from({ length: Math.floor(next() * 10) }, () => `${encodeURIComponent(pick(names))}=${next() < 0.9 ? encodeURIComponent(pick(values)) : pick(values)}`);
      const link = `?${parts.join('&')}`;
      const { view } = decodeView(link);
      const p = view.planner;
      assert.deepEqual(Object.keys(p), Object.keys(DEFAULT_PLANNER), link);
      assert.ok([0, 1].includes(p.open) && [0, 1].includes(p.keep_precision) && ['step_time', 'cost'].includes(p.rank_by), link);
      assert.ok(Number.isInteger(p.plan) && p.plan >= 0 && p.plan <= 999, link);
      for (const k of ['gpus_min', 'gpus_max', 'global_batch_tokens', 'train_tokens']) assert.ok(typeof p[k] === 'string' && p[k].length <= 40, link);
      const again = decodeView(encodeView({ ...view, planner: { ...p, open: 1 } })).view.planner;
      assert.deepEqual(again, { ...p, open: 1 }, link);
    }
    assert.equal(({}).open, undefined);
    assert.equal(Object.prototype.plan, undefined);
  });

  test('the inputs → the core\'s options: numbers as numbers, text as typed, empty left to the core', () => {
    assert.deepEqual(planOptions(DEFAULT_PLANNER), DEFAULT_OPTIONS);
    assert.deepEqual(planOptions({ ...DEFAULT_PLANNER, gpus_min: ' 8 ', gpus_max: 'abc', global_batch_tokens: 'auto', train_tokens: '2e12', rank_by: 'cost', keep_precision: 1 }),
      { top: 10, gpus_min: 8, gpus_max: 'abc', train_tokens: 2e12, rank_by: 'cost', keep_precision: true });
  });

  test('durations, money and rates never show NaN', () => {
    assert.equal(formatDuration(0.11458), '0.115 s');
    assert.equal(formatDuration(42), '42.0 s');
    assert.equal(formatDuration(210), '3.5 min');
    assert.equal(formatDuration(109273.5), '30.4 h');
    assert.equal(formatDuration(86400 * 12.44), '12.4 days');
    assert.equal(formatDuration(86400 * 365 * 3.1), '3.1 years');
    assert.equal(formatMoney(117490.86), '$117,491');
    assert.equal(formatMoney(4.2), '$4.20');
    assert.equal(formatMoney(2.5e6), '$2.50M');
    assert.equal(formatTokens(1e12), '1T');
    assert.equal(formatRate(9151349.9), '9.15M');
    for (const bad of [NaN, Infinity, -1, undefined, null, 'x']) {
      for (const f of [formatDuration, formatMoney, formatTokens, formatRate]) assert.equal(f(bad), '\u2014', `${f.name}(${bad})`);
    }
    assert.doesNotMatch(layoutWords({}).gpus + layoutWords({}).parallel, /NaN|undefined/);
    assert.equal(plannerMessage('global batch not given (set global_batch_tokens)'), 'global batch not given (set the global batch)');
  });
});

describe('the headline\'s answer and the planner', { skip: missing || false, concurrency: false }, () => {
  let server;
  let browser;
  let core;
  let planner;
  const consoleErrors = [];

  before(async () => {
    [server, browser, core, planner] = await Promise.all([startServer(), launchBrowser(), loadNodeCore(), loadNodePlanner()]);
    mkdirSync(RESULTS_DIR, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  async function open(search, { viewport = { width: 1280, height: 1400 }, colorScheme = 'light', context } = {}) {
    const p = await (context ?? browser).newPage({ viewport, colorScheme });
    p.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
    p.on('pageerror', (e) => consoleErrors.push(e.message));
    await p.goto(`${server.url}${search}`);
    await p.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
    return p;
  }

  // The page shows the core's solve() answer for `config` under the headline.
  async function assertSolve(p, config, target) {
    const expected = core.solve(config, target);
    assert.equal(expected.ok, true, JSON.stringify(expected.errors));
    const line = p.getByTestId('solve-answer');
    await p.waitForFunction((t) => document.querySelector('[data-testid="solve-answer"]')?.dataset.target === t, target, { timeout: 10000 });
    assert.equal(await line.getAttribute('data-found'), String(expected.found));
    assert.equal(await line.getAttribute('data-value'), expected.found ? String(expected.value) : null);
    assert.equal(await line.getAttribute('data-binding'), expected.binding);
    return { expected, text: (await line.locator('.solve-text').textContent()).replace(/\s+/g, ' ').trim() };
  }

  // The plans on the page equal the core's plan() for `config` and `options`: every number in
  // data-bytes / data-value, and its text by the planner's formatting.
  async function assertPlans(p, config, options) {
    const expected = planner.plan(config, options);
    assert.equal(expected.ok, true, JSON.stringify(expected.errors));
    const items = p.getByTestId('plans').locator(':scope > li');
    // The count alone can be the previous answer's (a new price changes the costs, not the plans):
    // the first plan's peak and cost must be the expected ones too.
    const first = expected.plans[0];
    await p.waitForFunction(([n, peak, cost]) => {
      const plans = document.querySelector('[data-testid="plans"]');
      const top = plans?.querySelector(':scope > li');
      return plans?.children.length === n && !plans.parentElement.classList.contains('stale')
        && (n === 0 || (top.querySelector('[data-testid="plan-device-total"]')?.dataset.bytes === peak
          && Number(top.querySelector('[data-testid="plan-cost"]')?.dataset.value) === cost));
    }, [expected.plans.length, String(first?.device_total_bytes), first?.cost_usd ?? null], { timeout: 20000 });
    const tokens = formatTokens(expected.plans[0]?.train_tokens);
    for (const [i, plan] of expected.plans.entries()) {
      const item = items.nth(i);
      // Per GPU: the device total, the quantity of the verdict, the headroom and the CLI's GiB/GPU.
      const total = item.getByTestId('plan-device-total');
      assert.equal(await total.getAttribute('data-bytes'), String(plan.device_total_bytes), `plan ${i + 1} device total`);
      assert.equal((await total.textContent()).trim(), formatBytes(plan.device_total_bytes), `plan ${i + 1} device total text`);
      for (const [testid, value, text] of [
        ['plan-step', plan.step_time_s, formatDuration(plan.step_time_s)],
        ['plan-rate', plan.tokens_per_s, formatRate(plan.tokens_per_s)],
        ['plan-mfu', plan.mfu, formatPercent(plan.mfu, { decimals: 1 })],
        ['plan-time', plan.train_time_s, formatDuration(plan.train_time_s)],
        ['plan-cost', plan.cost_usd, plan.price_per_gpu_hour > 0 ? formatMoney(plan.cost_usd) : 'no price: set one'],
      ]) {
        const cell = item.getByTestId(testid);
        assert.equal(Number(await cell.getAttribute('data-value')), value, `plan ${i + 1} ${testid}`);
        assert.equal((await cell.textContent()).trim(), text, `plan ${i + 1} ${testid} text`);
      }
      const words = layoutWords(plan.config);
      assert.match(await item.locator('.plan-layout').textContent(), new RegExp(`${words.gpus}`));
      assert.match(await item.textContent(), new RegExp(`${tokens} tokens in`));
    }
    const text = await p.getByTestId('planner').textContent();
    assert.doesNotMatch(text, /NaN|undefined|Infinity|\[object/);
    return expected;
  }

  test('a run that does not fit: the headline names the fewest GPUs, as the core\'s solve', async () => {
    const p = await open('');
    const { expected, text } = await assertSolve(p, TOO_BIG, 'min-gpus');
    assert.equal(expected.found, true);
    assert.equal(text, `Needs ${expected.value} × NVIDIA H100 SXM 80GB with ZeRO-3 / FSDP sharding · limited by the optimizer states`);
    // Prerendered: the same answer is in index.html, on screen at first paint.
    const html = await (await fetch(server.url)).text();
    assert.match(html, new RegExp(`data-value="${expected.value}"`));
    assert.match(html, new RegExp(`<strong>Needs ${expected.value} × NVIDIA H100 SXM 80GB</strong>`));
    await p.getByTestId('solve-answer').screenshot({ path: join(RESULTS_DIR, 'solve-answer-not-fitting.png') });
    await p.close();
  });

  test('when no GPU count fits because of a per-GPU term, the headline says that term does not shrink', async () => {
    // Qwen2.5 7B LoRA, 4 × 4,096 tokens, no checkpointing, on an RTX 4090: the activations alone
    // exceed the card, and data parallelism does not divide them.
    const config = { model: { preset: 'qwen2.5-7b' }, training: { micro_batch_size: 4, seq_len: 4096, finetune: { method: 'lora' } },
      hardware: { gpu: 'rtx-4090-24gb' } };
    const p = await open('?v=2&preset=qwen2.5-7b&method=lora&seq_len=4096&micro_batch_size=4&gpu=rtx-4090-24gb');
    const { expected, text } = await assertSolve(p, config, 'min-gpus');
    assert.equal(expected.found, false);
    assert.equal(expected.binding, 'activations');
    assert.equal(text, 'More GPUs do not help: the activations per GPU do not shrink with ZeRO-3 / FSDP sharding; checkpointing or a ' +
      'smaller micro-batch does');
    await p.close();
  });

  test('when sharding barely lowers the need, the headline says so rather than naming hundreds of GPUs', async () => {
    // Llama 3.1 8B LoRA (q, v), 2 × 3,744 tokens, checkpointed, on an RTX 4090: what every GPU keeps
    // whole (NCCL's buffers too) is near the budget; ZeRO-3 creeps under it at a few hundred GPUs.
    const config = { model: { preset: 'llama-3.1-8b' }, training: { micro_batch_size: 2, seq_len: 3744, checkpointing: 'full',
      finetune: { method: 'lora', lora_targets: ['q', 'v'] } }, hardware: { gpu: 'rtx-4090-24gb' } };
    const p = await open('?v=2&preset=llama-3.1-8b&method=lora&lora_targets=q,v&seq_len=3744&micro_batch_size=2&checkpointing=full&gpu=rtx-4090-24gb');
    const { expected, text } = await assertSolve(p, config, 'min-gpus');
    assert.equal(expected.found, true);
    assert.equal(expected.sharding_saturated, true);
    assert.ok(expected.value > 100, String(expected.value));
    assert.equal(text, `Sharding barely helps: ${expected.value.toLocaleString('en-US')} × NVIDIA GeForce RTX 4090 24GB with ZeRO-3 / FSDP ` +
      `would fit, but ${expected.half.value.toLocaleString('en-US')} need almost as much; the logits and loss per GPU do not shrink ` +
      'with more GPUs; a chunked cross-entropy or a smaller micro-batch does');
    await p.close();
  });

  test('when a layout rule (not memory) stops one GPU fewer, the headline says so', async () => {
    // Mixtral over 16 GPUs with TP 2 and EP 8: GPU counts step by 16, so 31 cannot be laid out.
    const config = { model: { preset: 'mixtral-8x7b' }, parallel: { num_gpus: 16, zero_stage: 3, tensor: 2, expert: 8 } };
    const p = await open('?v=2&preset=mixtral-8x7b&num_gpus=16&zero_stage=3&tensor=2&expert=8');
    const { expected, text } = await assertSolve(p, config, 'min-gpus');
    assert.equal(expected.found, true);
    assert.match(expected.binding, /must divide/);
    assert.match(text, new RegExp(`^Needs ${expected.value} × NVIDIA H100 SXM 80GB with ZeRO-3 / FSDP sharding · ${expected.value - 1} cannot take this layout: `));
    assert.doesNotMatch(text, /limited by/);
    await p.close();
  });

  test('a run that fits: the headline names the largest micro-batch; it follows the form', async () => {
    const p = await open(FITS_LINK);
    const { expected, text } = await assertSolve(p, FITS, 'max-micro-batch');
    assert.equal(expected.found, true);
    assert.match(text, new RegExp(`^Largest micro-batch that fits: ${expected.value.toLocaleString('en-US')} · limited by the `));
    // A change of the card changes the answer (the core's again).
    await p.selectOption('#field-hardware-gpu', 't4-16gb');
    const t4 = { ...FITS, hardware: { gpu: 't4-16gb' } };
    await waitForAnswer(p, core.estimate(t4));
    const target = core.estimate(t4).fits.verdict === 'fits' ? 'max-micro-batch' : 'min-gpus';
    await p.waitForFunction((v) => document.querySelector('[data-testid="solve-answer"]')?.dataset.value === v,
      String(core.solve(t4, target).value), { timeout: 10000 });
    await assertSolve(p, t4, target);
    await p.close();
  });

  test('opening the planner: its plans are the core\'s, computed in a worker; the inputs change them', async () => {
    const p = await open('');
    const requests = [];
    p.on('request', (r) => requests.push(new URL(r.url()).pathname));
    const plannerFiles = (list) => list.filter((f) => /planner-worker\.js|memfit-planner\.wasm|Planner-/.test(f));
    // Nothing of the planner is loaded before it opens.
    await p.waitForTimeout(300);
    assert.deepEqual(plannerFiles(requests), []);
    assert.equal(await p.getByTestId('planner').count(), 0);
    await p.getByTestId('open-planner').click();
    assert.equal(await p.getByTestId('open-planner').getAttribute('aria-expanded'), 'true');
    await p.getByTestId('planner').waitFor();
    // The planner takes the focus when its button opens it.
    await p.waitForFunction(() => document.activeElement?.id === 'h-planner', null, { timeout: 5000 });
    await assertPlans(p, TOO_BIG, DEFAULT_OPTIONS);
    assert.match(await p.getByTestId('planner-status').textContent(), /^10 plans that fit on the NVIDIA H100 SXM 80GB; [\d,]+ layouts searched in [\d,]+ ms \(in a background worker\)\.$/);
    // Its chunk, its worker and its wasm came when it opened.
    assert.equal(plannerFiles(requests).length, 3, requests.join('\n'));
    // Fewer GPUs, ranked by cost.
    await p.fill('#planner-gpus_max', '8');
    await p.locator('[data-rank="cost"]').click();
    await assertPlans(p, TOO_BIG, { ...DEFAULT_OPTIONS, gpus_max: 8, rank_by: 'cost' });
    await p.waitForFunction(() => /plan_gpus_max=8&plan_rank_by=cost/.test(location.search), null, { timeout: 5000 });
    // A form field drawn in the planner is the form's: the price changes every cost.
    await p.fill('#planner-hardware-price_per_gpu_hour', '2');
    // The form holds it in the hardware section's folded "More settings", which says so.
    const more = p.locator('section[aria-labelledby="section-hardware"] details.more');
    assert.match(await more.locator('summary').textContent(), /1 changed/);
    await more.locator('summary').click();
    assert.equal(await p.inputValue('#field-hardware-price_per_gpu_hour'), '2');
    const priced = { ...TOO_BIG, hardware: { price_per_gpu_hour: 2 } };
    const answer = await assertPlans(p, priced, { ...DEFAULT_OPTIONS, gpus_max: 8, rank_by: 'cost' });
    assert.equal(answer.plans[0].price_per_gpu_hour, 2);
    await p.close();
  });

  test('bad input in the planner: the core\'s message by the field, no NaN, the page goes on', async () => {
    const p = await open('?v=2&planner=1');
    await p.getByTestId('plans').locator(':scope > li').first().waitFor({ timeout: 20000 });
    await p.fill('#planner-gpus_min', 'abc');
    const expected = planner.plan(TOO_BIG, { ...DEFAULT_OPTIONS, gpus_min: 'abc' });
    assert.equal(expected.ok, false);
    const error = p.locator('#planner-gpus_min-error');
    await error.waitFor({ timeout: 10000 });
    assert.equal((await error.textContent()).trim(), plannerMessage(expected.errors.find((e) => e.field === 'gpus_min').message));
    assert.equal(await p.getAttribute('#planner-gpus_min', 'aria-invalid'), 'true');
    assert.match(await p.getByTestId('planner-status').textContent(), /fix the highlighted values/);
    for (const typed of ['0', '1e9', '-5', '99999999999999999999']) {
      await p.fill('#planner-gpus_max', typed);
      // "searching the layouts again" until the core's answer for this value is in.
      await p.getByTestId('planner-status').filter({ hasText: /cannot search these inputs/ }).waitFor({ timeout: 10000 });
      assert.doesNotMatch(await p.getByTestId('planner').textContent(), /NaN|undefined|Infinity/);
    }
    await p.fill('#planner-gpus_min', '1');
    await p.fill('#planner-gpus_max', '64');
    await assertPlans(p, TOO_BIG, DEFAULT_OPTIONS);
    // An invalid form: the planner keeps the last valid configuration's plans.
    await p.fill('#field-training-micro_batch_size', 'x');
    await p.locator('.answer[data-stale="true"]').waitFor({ timeout: 10000 });  // the core's error answer is in
    assert.equal(await p.getByTestId('plans').locator(':scope > li').count(), 10);
    await p.close();
  });

  test('Apply puts a plan in the form: the estimate becomes the plan\'s; Undo restores it', async () => {
    const p = await open('?v=2&planner=1&plan=2');
    const expected = await assertPlans(p, TOO_BIG, DEFAULT_OPTIONS);
    const plan = expected.plans[1];
    assert.equal(await p.locator('[data-plan="2"]').getAttribute('aria-current'), 'true');
    assert.match(await p.getByTestId('plan-changes').textContent(), /Apply sets/);
    await p.locator('[data-plan="2"]').getByTestId('plan-apply').click();
    // The page's estimate is now the plan's (the form holds the plan's fields).
    await p.waitForFunction(([peak]) => document.querySelector('[data-testid="peak-allocated"]')?.dataset.bytes === peak
      && document.querySelector('.answer')?.dataset.stale === 'false', [String(plan.peak_allocated_bytes)], { timeout: 10000 });
    assert.equal(await p.getByTestId('device-total').getAttribute('data-bytes'), String(plan.device_total_bytes));
    assert.equal(await p.getByTestId('verdict').locator('[data-verdict]').getAttribute('data-verdict'), plan.fits.verdict);
    assert.equal(await p.inputValue('#field-parallel-num_gpus'), String(plan.config.parallel.num_gpus));
    assert.equal(await p.inputValue('#field-training-micro_batch_size'), String(plan.config.training.micro_batch_size));
    assert.equal(await p.inputValue('#field-training-precision'), plan.config.training.precision);
    assert.match(await p.getByTestId('applied').textContent(), /Applied: plan 2/);
    // The link carries the new configuration.
    await p.waitForFunction((n) => new URLSearchParams(location.search).get('num_gpus') === n, String(plan.config.parallel.num_gpus), { timeout: 5000 });
    // Re-planned for the new form; the applied layout is chosen again where the core still ranks it.
    await p.waitForFunction(() => !document.querySelector('[data-testid="plans"]')?.parentElement.classList.contains('stale'), null, { timeout: 20000 });
    await p.getByTestId('undo').click();
    await waitForAnswer(p, core.estimate(TOO_BIG));
    assert.equal(await p.inputValue('#field-parallel-num_gpus'), '1');
    await p.close();
  });

  test('exports: each engine\'s file and command are the core\'s; Copy copies, or says it could not', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1400 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url.slice(0, -1) });
    const p = await open('?v=2&planner=1&plan=1', { context });
    const { plans: [plan] } = await assertPlans(p, TOO_BIG, DEFAULT_OPTIONS);
    const exports = planner.exports(plan.config);
    const tabs = p.getByTestId('exports').getByRole('tab');
    await p.getByTestId('exports').locator('.tab-panel[data-engine] :is(textarea, .export-refused, .card-note)').first().waitFor({ timeout: 10000 });
    assert.deepEqual(await tabs.evaluateAll((ts) => ts.map((t) => t.dataset.engine)), ENGINE_WORDS.map(([id]) => id));
    let copied = 0;
    for (const [engine, name] of ENGINE_WORDS) {
      await p.locator(`[role="tab"][data-engine="${engine}"]`).click();
      const panel = p.locator(`.tab-panel[data-engine="${engine}"]`);
      const answer = exports[engine];
      if (!answer.ok) {
        const refused = panel.getByTestId('export-refused');
        assert.match(await refused.textContent(), new RegExp(`^${name} cannot run this plan`));
        assert.deepEqual(await refused.locator('li').allTextContents(), answer.errors.map((e) => plannerMessage(e.message)));
        continue;
      }
      if (answer.text) assert.equal(await panel.getByTestId(`export-${engine}-file`).inputValue(), answer.text);
      assert.equal(await panel.getByTestId(`export-${engine}-command`).inputValue(), answer.command);
      const which = answer.text ? 'file' : 'command';
      await panel.getByTestId(`copy-export-${engine}-${which}`).click();
      await panel.getByTestId(`copy-export-${engine}-${which}-status`).filter({ hasText: 'Copied.' }).waitFor({ timeout: 5000 });
      assert.equal(await p.evaluate(() => navigator.clipboard.readText()), answer.text || answer.command);
      copied += 1;
    }
    assert.ok(copied > 0, 'at least one engine runs the best plan');
    // Tabs by keyboard: the arrows move between engines.
    await tabs.first().focus();
    await p.keyboard.press('ArrowRight');
    assert.equal(await p.evaluate(() => document.activeElement?.dataset.engine), ENGINE_WORDS[1][0]);
    await p.getByTestId('planner').screenshot({ path: join(RESULTS_DIR, 'planner-exports.png') });
    await context.close();

    // Copying refused (no clipboard, no fallback): said, and the text selected to copy by hand.
    const refused = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
    await refused.addInitScript(() => {
      navigator.clipboard.writeText = () => Promise.reject(new Error('denied'));
      document.execCommand = () => false;
    });
    await refused.goto(`${server.url}?v=2&planner=1&plan=1`);
    const okEngine = ENGINE_WORDS.find(([id]) => exports[id].ok)[0];
    await refused.locator(`[role="tab"][data-engine="${okEngine}"]`).click();
    const which = exports[okEngine].text ? 'file' : 'command';
    await refused.getByTestId(`copy-export-${okEngine}-${which}`).click();
    const status = refused.getByTestId(`copy-export-${okEngine}-${which}-status`);
    await status.filter({ hasText: 'did not allow copying' }).waitFor({ timeout: 5000 });
    assert.equal(await refused.evaluate(() => {
      const a = document.activeElement;
      return a?.tagName === 'TEXTAREA' && a.selectionStart === 0 && a.selectionEnd === a.value.length;
    }), true);
    await refused.close();
  });

  test('the planner\'s state travels in the share link', async () => {
    const p = await open('');
    await p.getByTestId('open-planner').click();
    await p.getByTestId('plans').locator(':scope > li').first().waitFor({ timeout: 20000 });
    await p.fill('#planner-gpus_min', '8');
    await p.fill('#planner-gpus_max', '128');
    await p.fill('#planner-global_batch_tokens', '2e6');
    await p.fill('#planner-train_tokens', '5e11');
    await p.locator('[data-rank="cost"]').click();
    await p.locator('#planner-keep_precision').check();
    const options = { top: 10, gpus_min: 8, gpus_max: 128, global_batch_tokens: 2e6, train_tokens: 5e11, rank_by: 'cost', keep_precision: true };
    const expected = await assertPlans(p, TOO_BIG, options);
    assert.ok(expected.plans.length >= 3);
    await p.locator('[data-plan="3"]').getByTestId('plan-more').click();
    const href = await p.getByTestId('copy-link').getAttribute('data-href');
    assert.match(href, /[?&]planner=1&plan_gpus_min=8&plan_gpus_max=128&plan_global_batch_tokens=2e6&plan_train_tokens=5e11&plan_rank_by=cost&plan_keep_precision=1&plan=3$/);
    await p.waitForFunction((h) => location.href === h, href, { timeout: 5000 });

    const again = await open(new URL(href).search);
    await assertPlans(again, TOO_BIG, options);
    assert.equal(await again.inputValue('#planner-gpus_min'), '8');
    assert.equal(await again.inputValue('#planner-train_tokens'), '5e11');
    assert.equal(await again.locator('[data-rank="cost"]').getAttribute('aria-checked'), 'true');
    assert.equal(await again.locator('#planner-keep_precision').isChecked(), true);
    assert.equal(await again.locator('[data-plan="3"]').getAttribute('aria-current'), 'true');
    assert.equal(await again.getByTestId('copy-link').getAttribute('data-href'), href);
    // Opened by a link, the planner does not take the focus.
    assert.notEqual(await again.evaluate(() => document.activeElement?.id), 'h-planner');
    // Closed, it leaves the link; the button has the focus back.
    await again.getByTestId('close-planner').click();
    assert.equal(await again.getByTestId('planner').count(), 0);
    assert.equal(await again.evaluate(() => document.activeElement?.dataset.testid), 'open-planner');
    assert.doesNotMatch(await again.getByTestId('copy-link').getAttribute('data-href'), /plan/);
    await p.close();
    await again.close();
  });

  test('a hostile link opens the planner safely: nothing inserted as HTML, each value named', async () => {
    const warnings = [];
    const p = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
    p.on('console', (m) => m.type() === 'warning' && warnings.push(m.text()));
    p.on('pageerror', (e) => consoleErrors.push(e.message));
    await p.addInitScript(() => {
      window.__hostile = 0;
    });
    const script = '<img src=x onerror="window.__hostile=1">';
    await p.goto(`${server.url}?v=2&planner=1&plan=99x&plan_rank_by=%3Cscript%3E&plan_gpus_min=${encodeURIComponent(script.slice(0, 40))}&plan_train_tokens=${'9'.repeat(300)}`);
    await p.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
    await p.getByTestId('planner-status').filter({ hasText: /fix the highlighted values/ }).waitFor({ timeout: 20000 });
    assert.equal(await p.inputValue('#planner-gpus_min'), script.slice(0, 40));
    assert.equal(await p.inputValue('#planner-train_tokens'), DEFAULT_PLANNER.train_tokens);
    assert.equal(await p.evaluate(() => window.__hostile), 0);
    assert.equal(await p.locator('.planner img').count(), 0);
    assert.ok(warnings.some((w) => /plan_rank_by/.test(w)) && warnings.some((w) => /plan_train_tokens/.test(w)) && warnings.some((w) => /plan:/.test(w)), warnings.join('\n'));
    assert.doesNotMatch(await p.getByTestId('planner').textContent(), /NaN|undefined/);
    await p.close();
  });

  test('no long task on the main thread while the planner opens and plans', async () => {
    const p = await open('');
    await waitForIdle(p);
    let status = '';
    const result = await longTasksDuring(p, async () => {
      await p.getByTestId('open-planner').click();
      await p.getByTestId('plans').locator(':scope > li').first().waitFor({ timeout: 20000 });
      // A plan's exports, then planning again over a wider range (more work in the worker).
      await p.locator('[data-plan="1"]').getByTestId('plan-more').click();
      await p.getByTestId('exports').locator('.tab-panel :is(textarea, .export-refused)').first().waitFor({ timeout: 10000 });
      await p.fill('#planner-gpus_max', '1024');
      await p.waitForFunction(() => /layouts searched/.test(document.querySelector('[data-testid="planner-status"]')?.textContent)
        && !document.querySelector('[data-testid="plans"]').parentElement.classList.contains('stale'), null, { timeout: 30000 });
      status = await p.getByTestId('planner-status').textContent();
    });
    console.log(`planner, llama-3-8b over 1-1024 GPUs: ${status.match(/in ([\d,]+) ms/)?.[1]} ms from the request to the answer, in the page`);
    assert.deepEqual(result.blocking, [], `main-thread tasks over 50 ms of work (Long Tasks API, wall clock: ${JSON.stringify(result.wall)})`);
    await p.close();
  });

  test('screenshots: light and dark, desktop and phone (test-results/)', async () => {
    for (const [name, viewport, colorScheme] of [
      ['planner-desktop-light', { width: 1280, height: 1000 }, 'light'],
      ['planner-desktop-dark', { width: 1280, height: 1000 }, 'dark'],
      ['planner-phone-light', { width: 390, height: 844 }, 'light'],
      ['planner-phone-dark', { width: 390, height: 844 }, 'dark'],
    ]) {
      const p = await open('?v=2&planner=1&plan=1', { viewport, colorScheme });
      await p.getByTestId('plans').locator(':scope > li').first().waitFor({ timeout: 20000 });
      await p.getByTestId('exports').locator('.tab-panel').waitFor();
      await waitForIdle(p);
      await p.getByTestId('solve-answer').scrollIntoViewIfNeeded();
      await p.screenshot({ path: join(RESULTS_DIR, `${name}.png`) });
      await p.getByTestId('planner').screenshot({ path: join(RESULTS_DIR, `${name}-planner.png`) });
      // Nothing wider than the screen on a phone.
      const overflow = await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `${name}: the page scrolls sideways by ${overflow} px`);
      await p.close();
    }
    assert.deepEqual(consoleErrors, []);
  });
});
