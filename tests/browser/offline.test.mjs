// Offline and from disk: the service worker caches the whole site, so a reload with the network
// off still computes; memfit.html, the single-file build, works opened from a file; index.html
// opened from a file keeps its prerendered numbers and says why it cannot compute more, and what
// to do.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';

import { DIST, RESULTS_DIR, launchBrowser, loadNodeCore, missingPrerequisites, startServer, waitForAnswer } from './helpers.mjs';

const missing = missingPrerequisites() || (existsSync(join(DIST, 'memfit.html')) ? '' : 'web/dist/memfit.html is not built');

describe('offline and from disk', { skip: missing || false, concurrency: false }, () => {
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

  test('with the network off, a reload still computes (service worker)', async () => {
    const context = await browser.newContext();
    const p = await context.newPage();
    await p.goto(server.url);
    await p.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
    await p.evaluate(() => navigator.serviceWorker.ready);
    // The page that registered the worker is controlled from its next load: one reload, from the
    // test (a reload started inside the page could race this one).
    if (!(await p.evaluate(() => navigator.serviceWorker.controller !== null))) {
      await p.reload({ waitUntil: 'load' });
    }
    await p.waitForFunction(() => navigator.serviceWorker.controller !== null, null, { timeout: 15000 });
    await context.setOffline(true);
    const link = '?v=2&preset=qwen2.5-7b&micro_batch_size=2';
    await p.goto(`${server.url}${link}`);
    await waitForAnswer(p, core.estimate({ model: { preset: 'qwen2.5-7b' }, training: { micro_batch_size: 2 } }));
    await p.fill('#field-training-seq_len', '4096');
    await waitForAnswer(p, core.estimate({ model: { preset: 'qwen2.5-7b' }, training: { micro_batch_size: 2, seq_len: 4096 } }));
    // The planner (its chunk, worker and wasm) is cached too: it opens and plans offline.
    await p.goto(`${server.url}${link}&planner=1`);
    await p.getByTestId('plans').locator(':scope > li').first().waitFor({ timeout: 20000 });
    await p.goto(`${server.url}accuracy.html`);
    assert.match(await p.locator('h1').textContent(), /accurate/);
    await context.close();
  });

  test('memfit.html opened from a file: the calculator works, nothing fetched', async () => {
    const context = await browser.newContext();
    const p = await context.newPage();
    const requests = [];
    p.on('request', (r) => requests.push(r.url()));
    const errors = [];
    p.on('pageerror', (e) => errors.push(e.message));
    await p.goto(`${pathToFileURL(join(DIST, 'memfit.html')).href}?v=2&preset=gpt2&micro_batch_size=4`);
    await waitForAnswer(p, core.estimate({ model: { preset: 'gpt2' }, training: { micro_batch_size: 4 } }));
    await p.fill('#field-training-micro_batch_size', '6');
    await waitForAnswer(p, core.estimate({ model: { preset: 'gpt2' }, training: { micro_batch_size: 6 } }));
    // The planner's worker and wasm are in the file too.
    await p.getByTestId('open-planner').click();
    await p.getByTestId('plans').locator(':scope > li').first().waitFor({ timeout: 20000 });
    assert.deepEqual(requests.filter((u) => !u.startsWith('file:') && !u.startsWith('blob:') && !u.startsWith('data:')), []);
    assert.deepEqual(errors, []);
    await p.screenshot({ path: join(RESULTS_DIR, 'single-file.png') });
    await context.close();
  });

  test('a chunk of the page that does not arrive: the prerendered numbers stay, and the page says to reload', async () => {
    const context = await browser.newContext();
    await context.route(/\/chunks\/Details-[^/]*\.js$/, (route) => route.fulfill({ status: 404, body: 'not found' }));
    const p = await context.newPage();
    await p.goto(server.url);
    const alert = p.locator('.load-error[role="alert"]');
    await alert.waitFor({ timeout: 15000 });
    assert.match(await alert.textContent(), /could not load all of this page/);
    assert.match(await alert.textContent(), /reload/);
    assert.doesNotMatch(await alert.textContent(), /core/);
    assert.ok(await p.getByTestId('peak-allocated').isVisible());
    await context.close();
  });

  test('index.html opened from a file: the prerendered numbers stay, and the page says why it cannot compute', async () => {
    const context = await browser.newContext();
    const p = await context.newPage();
    await p.goto(pathToFileURL(join(DIST, 'index.html')).href);
    const alert = p.locator('.load-error[role="alert"]');
    await alert.waitFor({ timeout: 15000 });
    assert.match(await alert.textContent(), /opened from a file/);
    assert.match(await alert.textContent(), /memfit\.html/);
    assert.ok(await p.getByTestId('peak-allocated').isVisible());
    await context.close();
  });
});
