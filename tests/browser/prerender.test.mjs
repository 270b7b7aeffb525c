// Numbers at first paint: index.html carries the default configuration's numbers (the native
// command line's, equal to the wasm core's), shown with no script at all; the live page then takes
// over without losing what was typed meanwhile; a share link for another configuration never shows
// the prerendered (wrong) numbers.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { formatBytes } from '../../web/src/format.js';
import { DIST, ROOT, launchBrowser, loadNodeCore, missingPrerequisites, startServer, waitForAnswer } from './helpers.mjs';

const missing = missingPrerequisites();
const CLI = join(ROOT, 'build/cli/memfit');

describe('prerendered numbers', { skip: missing || false, concurrency: false }, () => {
  let server;
  let browser;
  let core;
  before(async () => {
    [server, browser, core] = await Promise.all([startServer(), launchBrowser(), loadNodeCore()]);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('index.html holds the default configuration\'s numbers, the CLI\'s and the wasm core\'s', () => {
    const html = readFileSync(join(DIST, 'index.html'), 'utf8');
    const expected = core.estimate({ model: { preset: core.defaultConfig().model.preset } });
    if (existsSync(CLI)) {
      const native = JSON.parse(execFileSync(CLI, ['--json']).toString());
      assert.equal(native.peak_allocated_bytes, expected.peak_allocated_bytes);
    }
    assert.match(html, new RegExp(`data-bytes="${expected.peak_allocated_bytes}" data-testid="peak-allocated"|data-testid="peak-allocated"[^>]*data-bytes="${expected.peak_allocated_bytes}"`));
    assert.match(html, new RegExp(formatBytes(expected.device_total_bytes)));
  });

  test('with no script at all, the numbers are on the page', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const p = await context.newPage();
    await p.goto(server.url);
    const expected = core.estimate({ model: { preset: core.defaultConfig().model.preset } });
    assert.equal(await p.getByTestId('peak-allocated').getAttribute('data-bytes'), String(expected.peak_allocated_bytes));
    assert.ok(await p.getByTestId('peak-allocated').isVisible());
    await context.close();
  });

  test('the prerendered folds are the live page\'s: closed, with nothing but their summary', async () => {
    // A fold's open attribute is a boolean: open="0" would draw it open at first paint and close
    // it when the page hydrates, and a number 0 in the markup would print as text.
    const html = readFileSync(join(DIST, 'index.html'), 'utf8');
    assert.deepEqual(html.match(/<details[^>]*\sopen[\s=>][^>]*>/g) ?? [], []);
    const folds = (page) => page.$$eval('details', (ds) => ds.map((d) => ({
      open: d.open,
      rest: [...d.childNodes].filter((n) => n.nodeName !== 'SUMMARY').map((n) => n.textContent).join('').trim(),
    })));
    // The prerendered page as first painted: read with scripts off, so that a page that hydrates
    // before the first look (a fast machine) does not stand in for it.
    const still = await browser.newContext({ javaScriptEnabled: false });
    const q = await still.newPage();
    await q.goto(server.url);
    const first = await folds(q);
    await still.close();
    assert.ok(first.length >= 4, `${first.length} folds`);
    for (const f of first) assert.deepEqual(f, { open: false, rest: '' });
    const p = await browser.newPage();
    await p.goto(server.url);
    await p.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
    // The same folds once the page is live (the details drawn after it add folds of their own).
    assert.deepEqual((await folds(p)).slice(0, first.length), first);
    await p.close();
  });

  test('a prerendered select carries its current choice only, and the live page every choice', async () => {
    const html = readFileSync(join(DIST, 'index.html'), 'utf8');
    const selects = html.match(/<select[^>]*>.*?<\/select>/g) ?? [];
    assert.ok(selects.length >= 5, `${selects.length} selects`);
    for (const s of selects) {
      assert.equal((s.match(/<option/g) ?? []).length, 1, s.slice(0, 80));
      assert.match(s, /<option selected/);
    }
    const p = await browser.newPage();
    await p.goto(server.url);
    await p.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
    const gpus = await p.$$eval('#field-hardware-gpu option', (os) => os.map((o) => o.value));
    assert.deepEqual(gpus, core.gpus().map((g) => g.id));
    assert.equal(await p.inputValue('#field-hardware-gpu'), core.defaultConfig().hardware.gpu);
    await p.close();
  });

  test('what is typed before the core is ready is kept, and answered', async () => {
    const p = await browser.newPage();
    let release;
    const held = new Promise((r) => { release = r; });
    await p.route('**/worker.js', async (route) => {
      await held;
      await route.continue();
    });
    await p.goto(server.url);
    await p.locator('#field-training-micro_batch_size').fill('3');
    assert.equal(await p.evaluate(() => document.documentElement.dataset.ready), undefined);
    release();
    await p.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
    assert.equal(await p.inputValue('#field-training-micro_batch_size'), '3');
    await waitForAnswer(p, core.estimate({ model: { preset: 'llama-3-8b' }, training: { micro_batch_size: 3 } }));
    await p.close();
  });

  test('a share link hides the prerendered numbers until the core answers for it', async () => {
    const p = await browser.newPage();
    let release;
    const held = new Promise((r) => { release = r; });
    await p.route('**/worker.js', async (route) => {
      await held;
      await route.continue();
    });
    await p.goto(`${server.url}?v=2&preset=gpt2&micro_batch_size=2`);
    assert.equal(await p.locator('html.from-link').count(), 1);
    assert.equal(await p.getByTestId('peak-allocated').isVisible(), false);
    release();
    await waitForAnswer(p, core.estimate({ model: { preset: 'gpt2' }, training: { micro_batch_size: 2 } }));
    assert.ok(await p.getByTestId('peak-allocated').isVisible());
    assert.equal(await p.locator('html.from-link').count(), 0);
    await p.close();
  });
});
