// Accessibility: axe-core finds no violations on the calculator (a run that fits, one that does
// not, an input error, every chart shown as a table, the planner open with a plan's exports), the
// accuracy page and the embed card, in the light and dark themes, at desktop and phone widths. Keyboard: a skip link, Tab from the preset
// box to the next control (not to the page), scroll areas reachable. Screenshots of each
// combination go to test-results/ (look at them).
// Needs web/dist/ (npm run build:web), build-wasm/ and /usr/bin/chromium; no network.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { DIST, RESULTS_DIR, ROOT, launchBrowser, missingPrerequisites, startServer, waitForIdle } from './helpers.mjs';

const missing = missingPrerequisites();
const AXE = join(ROOT, 'node_modules/axe-core/axe.min.js');
const WIDTHS = { desktop: { width: 1280, height: 900 }, phone: { width: 390, height: 844 } };
const THEMES = ['light', 'dark'];

const PAGES = [
  ['calculator', ''],
  ['does-not-fit', '?v=2&preset=llama-3-8b&micro_batch_size=4&seq_len=4096&gpu=a100-80gb'],
  ['input-error', '?v=2&preset=gpt2&seq_len=4096&micro_batch_size=0'],
  ['tables', '?v=2&preset=seed-toy-70m&tables=breakdown,timeline,sweep,gpus&sweep=seq_len&units=GB'],
  ['planner', '?v=2&planner=1&plan=1'],
  ['accuracy', 'accuracy.html'],
  ['accuracy-report', 'accuracy-report.html'],
];
if (existsSync(join(DIST, 'embed.html'))) PAGES.push(['embed', 'embed.html?v=2&preset=llama-3-8b']);

describe('accessibility', { skip: missing || false, concurrency: false }, () => {
  let server;
  let browser;
  before(async () => {
    [server, browser] = await Promise.all([startServer(), launchBrowser()]);
    mkdirSync(RESULTS_DIR, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  async function open(path, viewport, colorScheme) {
    // bypassCSP: the page's policy forbids injected scripts, axe is one.
    const context = await browser.newContext({ viewport, colorScheme, bypassCSP: true });
    const p = await context.newPage();
    await p.goto(`${server.url}${path}`);
    if (!path.startsWith('accuracy')) await p.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
    // The sweep and the suggestions come a moment later; the planner's plans and exports too.
    if (path.includes('planner=1')) await p.waitForSelector('[data-testid="exports"] .tab-panel :is(textarea, .export-refused)', { timeout: 20000 });
    await waitForIdle(p);
    return p;
  }

  async function axe(p) {
    await p.addScriptTag({ path: AXE });
    return p.evaluate(async () => {
      const r = await window.axe.run(document, { resultTypes: ['violations'] });
      return r.violations.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')}`);
    });
  }

  for (const [name, path] of PAGES) {
    test(`${name}: no axe violations, light and dark, desktop and phone`, async () => {
      const found = [];
      for (const theme of THEMES) {
        for (const [width, viewport] of Object.entries(WIDTHS)) {
          const p = await open(path, viewport, theme);
          for (const v of await axe(p)) found.push(`${theme} ${width}: ${v}`);
          await p.screenshot({ path: join(RESULTS_DIR, `a11y-${name}-${theme}-${width}.png`), fullPage: name !== 'accuracy-report' });
          await p.context().close();
        }
      }
      assert.deepEqual(found, []);
    });
  }

  test('keyboard: skip link first, Tab leaves the preset box for the next control, scroll areas take focus', async () => {
    const p = await open('', WIDTHS.desktop, 'light');
    await p.keyboard.press('Tab');
    assert.equal(await p.evaluate(() => document.activeElement.textContent), 'Skip to the answer');
    await p.keyboard.press('Enter');
    assert.equal(await p.evaluate(() => document.activeElement.id), 'results');
    await p.locator('#preset-input').focus();
    assert.equal(await p.locator('#preset-list').count(), 1);  // the list opens on focus
    await p.keyboard.press('Tab');
    const next = await p.evaluate(() => ({ tag: document.activeElement.tagName, text: document.activeElement.textContent.trim() }));
    assert.notEqual(next.tag, 'BODY');
    assert.equal(next.text, 'Import from Hugging Face');
    // The GPU table scrolls sideways on narrow screens: it is a Tab stop with a name.
    const scroller = p.locator('.table-scroll').first();
    assert.equal(await scroller.getAttribute('tabindex'), '0');
    assert.ok((await scroller.getAttribute('aria-label')).length > 0);
    // The units toggle is a radio group: one Tab stop, the arrow keys choose; a "?" tip hides on
    // Escape and the focus stays on its button.
    const units = p.locator('[role="radiogroup"][aria-label="Units"] [role="radio"]');
    assert.deepEqual(await units.evaluateAll((bs) => bs.map((b) => b.tabIndex)), [0, -1]);
    await units.first().focus();
    await p.keyboard.press('ArrowRight');
    assert.equal(await p.evaluate(() => document.activeElement.dataset.unit), 'GB');
    assert.equal(await units.nth(1).getAttribute('aria-checked'), 'true');
    await p.keyboard.press('ArrowLeft');
    assert.equal(await units.first().getAttribute('aria-checked'), 'true');
    const tip = p.locator('.term-info').first();
    await tip.focus();
    assert.ok(await p.locator('.term-info:focus + .tip').isVisible());
    await p.keyboard.press('Escape');
    assert.equal(await p.evaluate(() => document.activeElement.classList.contains('term-info')), true);
    assert.equal(await p.locator('.term-info:focus + .tip').isVisible(), false);
    await p.context().close();
  });
});
