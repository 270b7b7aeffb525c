// "What to change": the suggestions on the page are the core's (suggestions() in node, through
// core.js), Apply merges a suggestion's patch into the form (form, link and numbers follow), Undo
// restores the form as it was. Also the accuracy line and the measured band next to the headline.
// Needs web/dist/ (npm run build:web), build-wasm/ and /usr/bin/chromium; no network.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { formatBytes, formatPercent } from '../../web/src/format.js';
import { RESULTS_DIR, ROOT, launchBrowser, loadNodeCore, missingPrerequisites, startServer, waitForAnswer } from './helpers.mjs';

const missing = missingPrerequisites();
if (missing) console.warn(`browser tests skipped: ${missing}`);

// A run that does not fit: Llama 3 8B, full fine-tune, micro-batch 4 × 4096 tokens on an A100 80GB.
const TOO_BIG = { model: { preset: 'llama-3-8b' }, training: { micro_batch_size: 4, seq_len: 4096 }, hardware: { gpu: 'a100-80gb' } };
const TOO_BIG_LINK = '?v=2&preset=llama-3-8b&micro_batch_size=4&seq_len=4096&gpu=a100-80gb';
const FITS_LINK = '?v=2&preset=seed-toy-70m';
const id = (path) => `#field-${path.replace(/\./g, '-')}`;

// The configuration with a suggestion's patch laid over it, object by object (the expected
// configuration after Apply; the page itself merges into its form fields).
function merged(config, patch) {
  const out = structuredClone(config);
  const lay = (target, extra) => {
    for (const [key, value] of Object.entries(extra)) {
      if (value && typeof value === 'object' && !Array.isArray(value)) lay((target[key] ??= {}), value);
      else target[key] = value;
    }
  };
  lay(out, patch);
  return out;
}

// [dotted path, value] for every leaf of a patch.
function leaves(object, prefix = '') {
  return Object.entries(object).flatMap(([k, v]) =>
    v && typeof v === 'object' && !Array.isArray(v) ? leaves(v, `${prefix}${k}.`) : [[`${prefix}${k}`, v]]);
}

describe('what to change', { skip: missing || false, concurrency: false }, () => {
  let server;
  let browser;
  let core;
  const consoleErrors = [];

  before(async () => {
    [server, browser, core] = await Promise.all([startServer(), launchBrowser(), loadNodeCore()]);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  async function open(search, viewport = { width: 1280, height: 1600 }) {
    const p = await browser.newPage({ viewport });
    p.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
    p.on('pageerror', (e) => consoleErrors.push(e.message));
    await p.goto(`${server.url}${search}`);
    await p.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
    return p;
  }

  // The suggestion list on the page equals the core's answer for `config`.
  async function assertSuggestions(p, config) {
    const expected = core.suggestions(config);
    assert.equal(expected.ok, true, JSON.stringify(expected.errors));
    const items = p.getByTestId('suggestion-list').locator(':scope > li');
    // The core's worker answers a moment after the estimate.
    await items.first().waitFor({ timeout: 10000 });
    assert.equal(await items.count(), expected.suggestions.length);
    for (const [i, s] of expected.suggestions.entries()) {
      const item = items.nth(i);
      assert.equal(await item.getAttribute('data-title'), s.title);
      assert.equal((await item.locator('.suggestion-title').textContent()).trim(), s.title);
      assert.equal((await item.locator('.suggestion-detail').textContent()).trim(), s.detail);
      const bytes = item.getByTestId('suggestion-bytes');
      assert.equal(await bytes.getAttribute('data-bytes'), String(s.device_total_bytes), s.title);
      assert.equal((await bytes.textContent()).trim(), formatBytes(s.device_total_bytes), s.title);
      assert.equal(await item.locator('[data-verdict]').last().getAttribute('data-verdict'), s.verdict, s.title);
    }
    return expected.suggestions;
  }

  async function headline(p) {
    return {
      verdict: await p.getByTestId('verdict').locator('[data-verdict]').getAttribute('data-verdict'),
      deviceTotal: await p.getByTestId('device-total').getAttribute('data-bytes'),
    };
  }

  const formFields = ['training.micro_batch_size', 'training.grad_accum_steps', 'training.finetune.method',
    'training.finetune.base_bits', 'training.checkpointing', 'training.optimizer', 'training.chunked_loss'];
  async function formState(p) {
    const state = {};
    for (const f of formFields) {
      const box = p.locator(id(f));
      state[f] = (await box.getAttribute('type')) === 'checkbox' ? await box.isChecked() : await box.inputValue();
    }
    return state;
  }

  test('a run that does not fit shows the core\'s suggestions right after the headline', async () => {
    const answer = core.estimate(TOO_BIG);
    assert.equal(answer.fits.verdict, 'does_not_fit');
    const p = await open(TOO_BIG_LINK);
    assert.deepEqual(await headline(p), { verdict: 'does_not_fit', deviceTotal: String(answer.device_total_bytes) });
    const card = p.locator('section[data-testid="suggestions"]');
    assert.match(await card.locator('h2').textContent(), /What to change/);
    assert.match(await card.textContent(), /does not fit on the NVIDIA A100 80GB/);
    // Placed right after the headline (and its accuracy line), before the breakdown.
    const order = await p.evaluate(() => [...document.querySelector('.answer').children].map((e) => e.className));
    assert.deepEqual(order.slice(0, 3).map((c) => c.split(' ')[0]), ['headline-wrap', 'accuracy-line', 'card']);
    const list = await assertSuggestions(p, TOO_BIG);
    assert.ok(list.length >= 2);
    // No single change fits here: the core puts a combined plan first, and it fits.
    assert.match(list[0].title, / \+ /);
    assert.equal(list[0].verdict, 'fits');
    await p.close();
  });

  test('while the core works on new values, the last list stays, greyed and not applicable', async () => {
    // The page's requests for suggestions are held back (after the first answer) until the test
    // releases them: the estimate for a new micro-batch arrives first, and the list must not fold
    // up and reopen in the meantime.
    const p = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
    await p.addInitScript(() => {
      const Native = window.Worker;
      const held = [];
      window.holdSuggestions = false;
      window.releaseSuggestions = () => {
        window.holdSuggestions = false;
        for (const send of held.splice(0)) send();
      };
      window.Worker = class extends Native {
        postMessage(message, ...rest) {
          if (message?.fn === 'suggestions' && window.holdSuggestions) held.push(() => super.postMessage(message, ...rest));
          else super.postMessage(message, ...rest);
        }
      };
    });
    await p.goto(`${server.url}${TOO_BIG_LINK}`);
    await p.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
    const items = p.getByTestId('suggestion-list').locator(':scope > li');
    await items.first().waitFor({ timeout: 10000 });
    const before = await items.evaluateAll((lis) => lis.map((li) => li.dataset.title));
    await p.evaluate(() => { window.holdSuggestions = true; });
    const next = merged(TOO_BIG, { training: { micro_batch_size: 3 } });
    await p.fill(id('training.micro_batch_size'), '3');
    await waitForAnswer(p, core.estimate(next));
    const previous = p.getByTestId('suggestion-list-previous');
    assert.equal(await previous.getAttribute('aria-busy'), 'true');
    assert.deepEqual(await previous.locator(':scope > li').evaluateAll((lis) => lis.map((li) => li.dataset.title)), before);
    assert.ok(await previous.getByRole('button', { name: 'Apply' }).evaluateAll((bs) => bs.every((b) => b.disabled)));
    assert.equal(await p.getByTestId('suggestion-list').count(), 0);
    // Then the core's list for the new values takes its place.
    await p.evaluate(() => window.releaseSuggestions());
    await items.first().waitFor({ timeout: 10000 });
    const expected = core.suggestions(next).suggestions.map((x) => x.title);
    assert.deepEqual(await items.evaluateAll((lis) => lis.map((li) => li.dataset.title)), expected);
    assert.equal(await p.getByTestId('suggestion-list-previous').count(), 0);
    await p.close();
  });

  test('Apply merges the patch into the form, link and numbers; Undo restores them', async () => {
    const p = await open(TOO_BIG_LINK);
    const linkBefore = new URL(await p.getByTestId('copy-link').getAttribute('data-href')).search;
    assert.match(linkBefore, /micro_batch_size=4&seq_len=4096&gpu=a100-80gb$/);
    await p.waitForFunction((s) => location.search === s, linkBefore, { timeout: 5000 });
    const formBefore = await formState(p);
    const headBefore = await headline(p);
    const [plan] = core.suggestions(TOO_BIG).suggestions;

    await p.getByTestId('suggestion-list').locator(':scope > li').first().getByRole('button', { name: 'Apply' }).click();
    const after = merged(TOO_BIG, plan.patch);
    const estimate = core.estimate(after);
    assert.equal(estimate.ok, true);
    // The page's verdict is the suggestion's, and its device total the core's for the new form.
    assert.equal(estimate.fits.verdict, plan.verdict);
    assert.equal(estimate.device_total_bytes, plan.device_total_bytes, 'suggestions() and estimate() agree');
    await waitForAnswer(p, estimate);
    assert.deepEqual(await headline(p), { verdict: plan.verdict, deviceTotal: String(plan.device_total_bytes) });
    // Every field of the patch is in the form, as if typed.
    for (const [path, value] of leaves(plan.patch)) {
      const box = p.locator(id(path));
      const shown = (await box.getAttribute('type')) === 'checkbox' ? await box.isChecked() : await box.inputValue();
      assert.equal(String(shown), String(value), path);
    }
    assert.match(await p.getByTestId('applied').textContent(), new RegExp(`Applied: ${plan.title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    // The pressed Apply went with its list: the focus is on Undo, not lost to the page's body.
    assert.equal(await p.evaluate(() => document.activeElement?.dataset.testid), 'undo');
    // The link follows: every field the patch sets is in it, by its last name, unless it is the
    // default (micro-batch 1, for one, is not written).
    const linkAfter = new URL(await p.getByTestId('copy-link').getAttribute('data-href')).search;
    const defaults = core.defaultConfig();
    for (const [path, value] of leaves(plan.patch)) {
      const name = path.split('.').pop();
      const fallback = path.split('.').reduce((node, key) => node?.[key], defaults);
      if (String(value) === String(fallback)) assert.doesNotMatch(linkAfter, new RegExp(`[?&]${name}=`), path);
      else assert.match(linkAfter, new RegExp(`[?&]${name}=${encodeURIComponent(String(value))}(&|$)`), path);
    }
    await p.waitForFunction((s) => location.search === s, linkAfter, { timeout: 5000 });
    // It fits now: the suggestions fold away below the GPU table.
    assert.equal(await p.locator('section[data-testid="suggestions"]').count(), 0);
    assert.equal(await p.locator('details.ways-to-save').evaluate((d) => d.open), false);
    await p.screenshot({ path: join(RESULTS_DIR, 'suggestions-applied.png') });

    await p.getByTestId('undo').click();
    assert.deepEqual(await formState(p), formBefore);
    // Undo went with its status: the focus moves to the answer.
    await p.waitForFunction(() => document.activeElement?.id === 'results', null, { timeout: 5000 });
    await waitForAnswer(p, core.estimate(TOO_BIG));
    assert.deepEqual(await headline(p), headBefore);
    assert.equal(await p.getByTestId('applied').count(), 0);
    await p.waitForFunction((s) => location.search === s, linkBefore, { timeout: 5000 });
    await assertSuggestions(p, TOO_BIG);
    await p.close();
  });

  test('a change that does not fit on its own: the verdict stays, the new suggestions are the core\'s; editing drops Undo', async () => {
    const p = await open(TOO_BIG_LINK);
    const suggestion = core.suggestions(TOO_BIG).suggestions.find((s) => s.title === 'Full activation checkpointing');
    assert.ok(suggestion, 'the core suggests full activation checkpointing');
    await p.locator(`li[data-title="${suggestion.title}"]`).getByRole('button', { name: 'Apply' }).click();
    assert.equal(await p.inputValue(id('training.checkpointing')), 'full');
    await waitForAnswer(p, core.estimate(merged(TOO_BIG, suggestion.patch)));
    assert.deepEqual(await headline(p), { verdict: suggestion.verdict, deviceTotal: String(suggestion.device_total_bytes) });
    await assertSuggestions(p, merged(TOO_BIG, suggestion.patch));
    // Typing anything else makes the form the user's again: no Undo.
    await p.fill(id('training.seq_len'), '2048');
    assert.equal(await p.getByTestId('applied').count(), 0);
    await p.close();
  });

  test('a run that fits: the ways to save memory are folded, and the core\'s when opened', async () => {
    const p = await open(FITS_LINK);
    const config = { model: { preset: 'seed-toy-70m' } };
    assert.equal(core.estimate(config).fits.verdict, 'fits');
    const details = p.locator('details.ways-to-save');
    assert.equal(await details.evaluate((d) => d.open), false);
    assert.equal(await p.getByTestId('suggestion-list').count(), 0);
    await details.locator('summary').click();
    await assertSuggestions(p, config);
    await p.close();
  });

  test('the accuracy line states the bundled summary and links to the accuracy page; the band is the core\'s', async () => {
    const summary = JSON.parse(readFileSync(join(ROOT, 'docs/data/accuracy_summary.json'), 'utf8'));
    const p = await open(TOO_BIG_LINK);
    const line = p.getByTestId('accuracy-line');
    // The page bundles docs/data/accuracy_summary.json when it is built: after the file changes,
    // rebuild (npm run build:web) before running this.
    assert.equal((await line.textContent()).replace(/\s+/g, ' ').trim(),
      `Scored against ${summary.count} published GPU runs: median error ${formatPercent(summary.median_abs_error, { decimals: 1 })}. How accurate is this?`.replace(/\s+/g, ' '));
    // The band under the peak appears only when the core gives one.
    const band = core.estimate(TOO_BIG).measured_band_bytes;
    const shown = p.getByTestId('measured-band');
    if (Array.isArray(band)) {
      assert.deepEqual(await shown.locator('[data-bytes]').evaluateAll((els) => els.map((e) => e.dataset.bytes)), band.map(String));
      const { measured_band_cases: cases, measured_band_fallback: all } = core.estimate(TOO_BIG);
      assert.match(await shown.textContent(),
        new RegExp(`^Likely .* – .*, from how ${cases} published runs${all ? '' : ' like this'} compared with memfit \\(the middle 80\\s%\\)$`));
    } else {
      assert.equal(await shown.count(), 0);
    }
    await line.getByRole('link', { name: 'How accurate is this?' }).click();
    await p.waitForURL(/accuracy\.html$/);
    assert.match(await p.locator('h1').first().textContent(), /accura/i);
    await p.getByTestId('back-to-calculator').click();
    await p.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
    await p.close();
  });

  test('screenshots of the not-fitting state (test-results/)', async () => {
    mkdirSync(RESULTS_DIR, { recursive: true });
    const wide = await open(TOO_BIG_LINK, { width: 1280, height: 1100 });
    await wide.screenshot({ path: join(RESULTS_DIR, 'suggestions-wide.png') });
    await wide.close();
    const narrow = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
    await narrow.goto(`${server.url}${TOO_BIG_LINK}`);
    await narrow.waitForSelector('html[data-ready="true"]');
    await narrow.locator('section[data-testid="suggestions"]').scrollIntoViewIfNeeded();
    await narrow.screenshot({ path: join(RESULTS_DIR, 'suggestions-narrow.png') });
    await narrow.screenshot({ path: join(RESULTS_DIR, 'suggestions-narrow-full.png'), fullPage: true });
    await narrow.close();
    assert.deepEqual(consoleErrors, []);
  });
});
