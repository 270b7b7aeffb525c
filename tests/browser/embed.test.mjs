// The embed forms: the iframe card (embed.html) sends its height to the host page and opens links
// in a new tab; <memfit-estimate> in a plain HTML page and in a site MkDocs generates (when MkDocs
// is installed) shows the core's numbers, follows attribute changes and fires `estimate`; the
// page's Embed button gives both snippets, a live preview and an honest word when copying is
// refused. https://memfit.example/ (the examples' stand-in for the hosted memfit) is served from
// web/dist/ here, from another origin than the host pages: the component's cross-origin path.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { formatBytes } from '../../web/src/format.js';
import { DIST, RESULTS_DIR, ROOT, launchBrowser, loadNodeCore, missingPrerequisites, serveMemfitExample, startServer } from './helpers.mjs';

const missing = missingPrerequisites();
const MKDOCS = [process.env.MEMFIT_MKDOCS, join(ROOT, '.venv-docs/bin/mkdocs')].find((p) => p && existsSync(p));

describe('embedding memfit', { skip: missing || false, concurrency: false }, () => {
  let server;
  let site;
  let browser;
  let core;
  before(async () => {
    [server, site, browser, core] = await Promise.all([startServer(), startServer(ROOT), launchBrowser(), loadNodeCore()]);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await site?.close();
  });

  const peakIn = (scope) => scope.locator('[data-testid="peak-allocated"]');

  test('embed.html: the core\'s numbers, its height to the host page, links to a new tab', async () => {
    const context = await browser.newContext({ viewport: { width: 900, height: 800 } });
    const p = await context.newPage();
    // A host page on another origin with the snippet's listener.
    await p.goto(`${site.url}examples/plain-html/index.html`);
    const src = `${server.url}embed.html?v=2&preset=gpt2&micro_batch_size=8&view=breakdown&theme=dark`;
    await p.evaluate((url) => {
      window.heights = [];
      addEventListener('message', (e) => {
        const frame = document.querySelector('iframe[data-memfit]');
        if (e.source === frame.contentWindow && e.data?.type === 'memfit:height') {
          window.heights.push(e.data.height);
          frame.height = e.data.height;
        }
      });
      const frame = document.createElement('iframe');
      Object.assign(frame, { src: url, title: 'memfit', height: 100 });
      frame.dataset.memfit = '';
      frame.style.cssText = 'width:100%;border:0';
      document.body.append(frame);
    }, src);
    const frame = p.frameLocator('iframe[data-memfit]');
    const expected = core.estimate({ model: { preset: 'gpt2' }, training: { micro_batch_size: 8 } });
    // The frame is on another origin (no contentDocument): waited for through the frame locator.
    await frame.locator(`[data-testid="peak-allocated"][data-bytes="${expected.peak_allocated_bytes}"]`).waitFor({ timeout: 15000 });
    assert.equal(await peakIn(frame).getAttribute('data-bytes'), String(expected.peak_allocated_bytes));
    assert.equal(await frame.locator('[data-testid="breakdown"]').count(), 1);
    await p.waitForFunction(() => window.heights.length > 0 && window.heights.at(-1) > 300);
    // The card posts its height again as it lays out: the last one sent comes to match it.
    const gap = async () => Math.abs((await p.evaluate(() => window.heights.at(-1)))
      - await frame.locator('html').evaluate((h) => Math.ceil(h.getBoundingClientRect().height)));
    let last = await gap();
    for (const deadline = Date.now() + 5000; last > 2 && Date.now() < deadline; last = await gap()) await p.waitForTimeout(100);
    assert.ok(last <= 2, `the last height sent is the card's (off by ${last} px)`);
    assert.equal(await frame.locator('html').getAttribute('data-theme'), 'dark');
    for (const a of await frame.locator('a[href]').all()) {
      assert.equal(await a.getAttribute('target'), '_blank');
      assert.equal(await a.getAttribute('rel'), 'noopener');
    }
    assert.equal(await frame.getByTestId('open-in-memfit').getAttribute('href'), `${server.url}?v=2&preset=gpt2&micro_batch_size=8`);
    await p.screenshot({ path: join(RESULTS_DIR, 'embed-iframe.png'), fullPage: true });
    await context.close();
  });

  // The plain-HTML example in a new page of `context`: its #full component's numbers checked;
  // → { errors: page errors, fetched: the paths the page fetched }.
  async function exampleComponent(context) {
    const p = await context.newPage();
    const errors = [];
    p.on('pageerror', (e) => errors.push(e.message));
    await p.goto(`${site.url}examples/plain-html/index.html`);
    await assertComponents(p, [['#full', { model: { preset: 'llama-3-8b' }, training: { seq_len: 2048 } }]]);
    const fetched = await p.evaluate(() => performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname));
    return { errors, fetched };
  }

  async function assertComponents(p, expectations) {
    for (const [selector, config] of expectations) {
      const el = p.locator(selector);
      const bytes = String(core.estimate(config).peak_allocated_bytes);
      await p.waitForFunction(([s, b]) => document.querySelector(s)?.shadowRoot?.querySelector('[data-testid="peak-allocated"]')?.dataset.bytes === b,
        [selector, bytes], { timeout: 15000 });
      assert.equal(await peakIn(el).textContent(), formatBytes(Number(bytes)));
    }
  }

  test('embed.html: what a link holds that the card cannot use is warned in the console, the rest used', async () => {
    const p = await browser.newPage();
    const warnings = [];
    p.on('console', (m) => m.type() === 'warning' && warnings.push(m.text()));
    await p.goto(`${server.url}embed.html?v=9&preset=gpt2&micro_batch_size=8&foo=1&view=bogus&theme=pink&units=xx`);
    const expected = core.estimate({ model: { preset: 'gpt2' }, training: { micro_batch_size: 8 } });
    await p.locator(`[data-testid="peak-allocated"][data-bytes="${expected.peak_allocated_bytes}"]`).waitFor({ timeout: 15000 });
    const said = warnings.join('\n');
    for (const part of [/unknown link parameter "foo"/, /link version 9 read as version 2/, /view must be card, breakdown, fit, full; got "bogus"/,
      /theme must be auto, light, dark; got "pink"/, /units must be GiB or GB; got "xx"/]) {
      assert.match(said, part);
    }
    await p.close();
  });

  test('<memfit-estimate> in a plain HTML page: the core\'s numbers, attribute changes, the estimate event', async () => {
    const context = await browser.newContext({ viewport: { width: 900, height: 900 } });
    await serveMemfitExample(context);
    const p = await context.newPage();
    const errors = [];
    p.on('pageerror', (e) => errors.push(e.message));
    await p.goto(`${site.url}examples/plain-html/index.html`);
    const qlora = { model: { preset: 'llama-3-8b' }, training: { finetune: { method: 'lora', base_bits: 4 } }, hardware: { gpu: 'rtx-4090-24gb' } };
    await assertComponents(p, [['#full', { model: { preset: 'llama-3-8b' }, training: { seq_len: 2048 } }], ['#qlora', qlora]]);
    assert.equal(await p.locator('#qlora').locator('[data-testid="breakdown"]').count(), 1);
    // An attribute changes: the numbers follow, and the element says so with an event.
    const event = p.evaluate(() => new Promise((resolve) => document.querySelector('#full')
      .addEventListener('estimate', (e) => resolve(e.detail.peak_allocated_bytes), { once: true })));
    await p.locator('#full').evaluate((el) => el.setAttribute('micro-batch-size', '2'));
    const changed = { model: { preset: 'llama-3-8b' }, training: { seq_len: 2048, micro_batch_size: 2 } };
    assert.equal(await event, core.estimate(changed).peak_allocated_bytes);
    await assertComponents(p, [['#full', changed]]);
    // It sizes itself to its content.
    const height = await p.locator('#qlora').evaluate((el) => el.getBoundingClientRect().height);
    assert.ok(height > 300, `height ${height}`);
    await p.screenshot({ path: join(RESULTS_DIR, 'embed-plain-html.png'), fullPage: true });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('<memfit-estimate> where its script cannot run shows the link written inside it; a bare &micro in a hand-written link is still micro_batch_size', async () => {
    // A host that sends no CORS header: the module script is refused, the element stays undefined
    // and the reader sees its own content.
    const refused = await browser.newContext();
    await refused.route('https://memfit.example/**', (route) => route.fulfill({
      status: 200, body: '', headers: { 'content-type': 'text/javascript' },
    }));
    const p = await refused.newPage();
    await p.goto(`${site.url}examples/plain-html/index.html`);
    const fallback = p.locator('#full a');
    await fallback.waitFor({ timeout: 10000 });
    assert.ok(await fallback.isVisible());
    assert.equal(await fallback.textContent(), 'Open this estimate in memfit');
    assert.equal(await p.evaluate(() => customElements.get('memfit-estimate') === undefined), true);
    await refused.close();
    // A host page written by hand with bare "&"s: the parser turns "&micro_batch_size" into
    // "µ_batch_size"; the element reads it as meant. With the script running, the link inside is hidden.
    const context = await browser.newContext();
    await serveMemfitExample(context);
    await context.route('https://docs.example/**', (route) => route.fulfill({
      status: 200,
      headers: { 'content-type': 'text/html' },
      body: `<!doctype html><script type="module" src="https://memfit.example/memfit-estimate.js"></script>
        <memfit-estimate id="m" link="?v=2&preset=gpt2&micro_batch_size=3&seq_len=512"><a href="#">Open this estimate in memfit</a></memfit-estimate>`,
    }));
    const q = await context.newPage();
    await q.goto('https://docs.example/page.html');
    assert.match(await q.locator('#m').getAttribute('link'), /\u00b5_batch_size=3/);
    await assertComponents(q, [['#m', { model: { preset: 'gpt2' }, training: { micro_batch_size: 3, seq_len: 512 } }]]);
    assert.equal(await q.locator('#m > a').isVisible(), false);
    await context.close();
  });

  test('static-data.json is this build\'s core\'s static data; without it the component asks its worker', async () => {
    // The embed forms' workers start bare and read the static data from the build (core.js
    // withStaticData): it must be what the core itself gives.
    assert.deepEqual(JSON.parse(readFileSync(join(DIST, 'static-data.json'), 'utf8')), core.staticData());
    // Read; missing; answering something else (review: `{}` broke the component): the worker's own then.
    for (const missing of [false, 404, '{}']) {
      const context = await browser.newContext();
      await serveMemfitExample(context);
      if (missing) {
        await context.route('https://memfit.example/static-data.json', (route) => route.fulfill(missing === 404
          ? { status: 404, body: 'not found' }
          : { status: 200, body: missing, headers: { 'content-type': 'application/json', 'access-control-allow-origin': '*' } }));
      }
      const { errors, fetched } = await exampleComponent(context);
      assert.ok(fetched.includes('/static-data.json'), `${fetched}`);
      assert.deepEqual(errors, [], `static data: ${missing || 'read'}`);
      await context.close();
    }
  });

  test('<memfit-estimate> fetches the wasm beside the worker\'s script, and copes with a server that mislabels it', async () => {
    // The page compiles the wasm while the worker's script loads (both requests from the host page,
    // at once); served as application/octet-stream, streaming compilation is refused and the same
    // download is compiled from its bytes (fetched once). Numbers in both cases, and no error.
    for (const wasmType of ['application/wasm', 'application/octet-stream']) {
      const context = await browser.newContext();
      await serveMemfitExample(context);
      let served = 0;
      if (wasmType !== 'application/wasm') {
        await context.route('https://memfit.example/memfit.wasm', (route) => {
          served += 1;
          return route.fulfill({
            status: 200,
            body: readFileSync(join(DIST, 'memfit.wasm')),
            headers: { 'content-type': wasmType, 'access-control-allow-origin': '*' },
          });
        });
      }
      const { errors, fetched } = await exampleComponent(context);
      assert.ok(fetched.includes('/worker.js'), `${wasmType}: ${fetched}`);
      assert.ok(fetched.includes('/memfit.wasm'), `${wasmType}: the page fetched ${fetched}`);
      assert.deepEqual(errors, [], wasmType);
      if (wasmType !== 'application/wasm') assert.equal(served, 1, 'the mislabelled wasm is downloaded once');
      await context.close();
    }
  });

  test('<memfit-estimate> in a site MkDocs (Material) generates', { skip: MKDOCS ? false : 'MkDocs is not installed (scripts/setup.sh puts it in .venv-docs/)' }, async () => {
    const out = join(ROOT, 'build-web/mkdocs-site');
    execFileSync(MKDOCS, ['build', '-q', '-f', join(ROOT, 'examples/mkdocs/mkdocs.yml'), '-d', out]);
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    await serveMemfitExample(context);
    const p = await context.newPage();
    await p.goto(`${site.url}build-web/mkdocs-site/index.html`);
    await assertComponents(p, [
      ['memfit-estimate[preset]', { model: { preset: 'llama-3-8b' }, training: { seq_len: 2048 } }],
      ['memfit-estimate[link]', { model: { preset: 'llama-3-8b' }, training: { finetune: { method: 'lora', base_bits: 4 } }, hardware: { gpu: 'rtx-4090-24gb' } }],
    ]);
    await p.locator('memfit-estimate[link]').locator('[data-testid="gpu-table"]').waitFor({ timeout: 10000 });
    assert.equal(await p.locator('memfit-estimate[link]').locator('[data-testid="gpu-table"]').count(), 1);
    await p.screenshot({ path: join(RESULTS_DIR, 'embed-mkdocs.png'), fullPage: true });
    await context.close();
  });

  test('the Embed button: both snippets for this configuration, a live preview, honest copying', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const p = await context.newPage();
    // The page's own view (a chart shown as a table, the sweep) is left out of the snippets; the
    // unit choice stays.
    await p.goto(`${server.url}?v=2&preset=gpt2&seq_len=512&method=lora&lora_targets=qkv,o&units=GB&tables=breakdown&sweep=seq_len`);
    await p.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
    await p.getByTestId('embed-button').click();
    const dialog = p.getByTestId('embed-dialog');
    await dialog.waitFor();
    const iframe = await p.inputValue('#snippet-iframe');
    const component = await p.inputValue('#snippet-component');
    const src = new URL(iframe.match(/<iframe src="([^"]*)"/)[1].replace(/&amp;/g, '&'));
    assert.equal(`${src.origin}${src.pathname}`, `${server.url}embed.html`);
    assert.deepEqual([...src.searchParams].sort(),
      [['lora_targets', 'qkv,o'], ['method', 'lora'], ['preset', 'gpt2'], ['seq_len', '512'], ['units', 'GB'], ['v', '2']]);
    // Written as the page writes its own link: a list's commas stay readable.
    assert.match(iframe, /lora_targets=qkv,o/);
    assert.match(iframe, /event\.source/);
    assert.match(component, new RegExp(`<script type="module" src="${server.url.replace(/[.]/g, '\\.')}memfit-estimate\\.js"></script>`));
    assert.equal(component.match(/<memfit-estimate link="\?([^"]*)">/)[1], src.search.slice(1).replace(/&/g, '&amp;'));
    // Its own content, a link to this estimate, for readers whose browser does not run the script.
    const fallback = component.match(/<memfit-estimate [^>]*>\s*<a href="([^"]*)">Open this estimate in memfit<\/a>\s*<\/memfit-estimate>/);
    assert.ok(fallback, component);
    assert.equal(fallback[1].replace(/&amp;/g, '&'), `${server.url}${src.search}`);
    await p.selectOption('#embed-view', 'fit');
    assert.match(await p.inputValue('#snippet-component'), / view="fit"/);
    const preview = p.frameLocator('[data-testid="embed-preview"]');
    const expected = core.estimate({ model: { preset: 'gpt2' }, training: { seq_len: 512, finetune: { method: 'lora', lora_targets: ['qkv', 'o'] } } });
    await p.waitForFunction((b) => document.querySelector('[data-testid="embed-preview"]').contentDocument
      ?.querySelector('[data-testid="peak-allocated"]')?.dataset.bytes === b, String(expected.peak_allocated_bytes), { timeout: 15000 });
    // The fit view's GPU table follows the numbers by a paint (the details settle after the headline).
    await preview.locator('[data-testid="gpu-table"]').waitFor({ timeout: 10000 });
    assert.equal(await preview.locator('[data-testid="gpu-table"]').count(), 1);
    // The preview takes the height its card sends (no blank space under the card, nothing cut).
    await p.waitForFunction(() => {
      const frame = document.querySelector('[data-testid="embed-preview"]');
      const content = frame.contentDocument?.documentElement.getBoundingClientRect().height;
      return content > 300 && Math.abs(frame.clientHeight - content) <= 2;
    }, null, { timeout: 10000 });
    // Copying refused (no clipboard permission, no fallback): said, and the snippet selected.
    await p.evaluate(() => {
      navigator.clipboard.writeText = () => Promise.reject(new Error('denied'));
      document.execCommand = () => false;
    });
    await p.getByTestId('copy-snippet-iframe').click();
    await p.getByTestId('copy-snippet-iframe-status').filter({ hasText: /did not allow copying/ }).waitFor({ timeout: 5000 });
    assert.equal(await p.evaluate(() => document.activeElement.id), 'snippet-iframe');
    await p.screenshot({ path: join(RESULTS_DIR, 'embed-dialog.png') });
    await p.keyboard.press('Escape');
    // The dialog closes on Escape (its removal can land a frame after the key).
    await dialog.waitFor({ state: 'detached', timeout: 5000 }).catch(() => {});
    assert.equal(await dialog.count(), 0);
    await context.close();
  });
});
