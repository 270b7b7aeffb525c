// The accuracy pages, built at build time with no script: web/docs.mjs (marked, with nothing of
// the source becoming HTML it did not write), accuracy.html (for users: the scatter's points are
// the core's estimates for the published runs) and accuracy-report.html (docs/accuracy.md).
// The converter tests need nothing; the page tests need web/dist/ and Chromium (skipped otherwise).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { escapeHtml, renderMarkdown, safeUrl } from '../../web/docs.mjs';
import { DIST, RESULTS_DIR, ROOT, launchBrowser, loadNodeCore, missingPrerequisites, startServer } from './helpers.mjs';

const html = (md) => renderMarkdown(md).html;

// The tags and attributes the renderer may write; anything else in its output is a leak.
const TAGS = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'p', 'ul', 'ol', 'li', 'pre', 'code', 'strong', 'em', 'a',
  'div', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'details', 'summary', 'hr', 'br', 'del', 'blockquote', 'input']);
const ATTRIBUTES = new Set(['id', 'class', 'href', 'scope', 'start', 'tabindex', 'role', 'aria-label', 'type', 'checked', 'disabled']);
function assertOnlyOwnMarkup(out) {
  for (const [, name, attrs] of out.matchAll(/<\/?([A-Za-z][A-Za-z0-9-]*)([^>]*)>/g)) {
    assert.ok(TAGS.has(name), `unexpected tag <${name}> in\n${out}`);
    assert.match(attrs, /^(\s[a-z-]+(="[^"<>]*")?)*\s*\/?$/, `malformed attributes in <${name}${attrs}>`);
    for (const [, attr] of attrs.matchAll(/\s([a-z-]+)(?:="[^"]*")?/g)) assert.ok(ATTRIBUTES.has(attr), `unexpected attribute ${attr} in <${name}${attrs}>`);
  }
}

describe('markdown → HTML at build time (web/docs.mjs, marked)', () => {
  test('headings with ids, tables with the site\'s classes, code, links', () => {
    const out = html(['# Title', '', '## Section *one*', '', '| name | bytes |', '|---|---:|', '| `a\\|b` | 1,024 |', '',
      'A [link](https://example.com/a?b=1&c=2) and `code <x>`.'].join('\n'));
    assert.match(out, /<h1 id="title">Title<\/h1>/);
    assert.match(out, /<h2 id="section-one">Section <em>one<\/em><\/h2>/);
    assert.match(out, /<div class="table-scroll" tabindex="0" role="region" aria-label="Table 1"><table class="table"><thead><tr><th scope="col">name<\/th><th scope="col" class="num">bytes<\/th>/);
    assert.match(out, /<td><code>a\|b<\/code><\/td><td class="num">1,024<\/td>/);
    assert.match(out, /<a href="https:\/\/example\.com\/a\?b=1&amp;c=2">link<\/a>/);
    assert.match(out, /<code>code &lt;x&gt;<\/code>/);
    assertOnlyOwnMarkup(out);
  });

  test('nothing in the source becomes HTML: tags, attributes, scripts and link schemes', () => {
    const evil = [
      '# <img src=x onerror=alert(1)> heading', '', '<script>alert(1)</script>', '',
      '<div onclick="alert(1)">raw block</div>', '', 'text <b>bold?</b> & "quotes"', '',
      '| <i>cell</i> | <svg onload=alert(1)> |', '|---|---|', '| `<td>` | x |', '',
      '[click](javascript:alert(1)) [c3](data:text/html,x) [ok](relative/page.html) ![alt](x.png)', '',
      '<details open ontoggle=alert(1)>', '', '</details>', '', '<details><summary><img src=x></summary>', '',
    ].join('\n');
    const out = html(evil);
    assertOnlyOwnMarkup(out);
    assert.doesNotMatch(out, /<script|<img|<svg|<b>|<i>|<div onclick/i);
    assert.doesNotMatch(out, /<[^>]*\son[a-z]+=/i, 'no event handler inside a tag');
    assert.doesNotMatch(out, /href="[^"]*(javascript|data):/i);
    assert.match(out, /click c3 <a href="relative\/page\.html">ok<\/a> alt/);
    assert.match(out, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assert.match(out, /&lt;details open ontoggle=alert\(1\)&gt;/);
    assert.match(out, /&lt;\/details&gt;/, 'a stray </details> is text');
    assert.equal((out.match(/<details>/g) ?? []).length, (out.match(/<\/details>/g) ?? []).length, 'folds are balanced');
  });

  test('safeUrl: relative and http(s) only', () => {
    for (const ok of ['page.html', '../docs/x.md', '#frag', '?q=1', 'https://a.example/', 'HTTP://a.example', '//host/p']) {
      assert.equal(safeUrl(ok), ok, ok);
    }
    for (const bad of ['javascript:alert(1)', ' javascript:x', 'JAVASCRIPT:x', 'data:text/html,x', 'vbscript:x', 'file:///etc/passwd', 'mailto:a@b']) {
      assert.equal(safeUrl(bad), '', JSON.stringify(bad));
    }
    assert.equal(escapeHtml(`<a href="x" title='y'>&`), '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;');
  });

  test('docs/accuracy.md renders with only the renderer\'s own markup', () => {
    const md = readFileSync(join(ROOT, 'docs/accuracy.md'), 'utf8');
    const { html: out, headings } = renderMarkdown(md);
    assertOnlyOwnMarkup(out);
    assert.equal(headings.filter((h) => h.level === 1).length, 1);
    const delimiterRows = md.split('\n').filter((l) => /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)+\|?\s*$/.test(l)).length;
    assert.equal((out.match(/<table/g) ?? []).length, delimiterRows);
    assert.equal(new Set(headings.map((h) => h.id)).size, headings.length, 'heading ids are unique');
  });
});

const missing = missingPrerequisites();
describe('the built accuracy pages', { skip: missing || false, concurrency: false }, () => {
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

  test('both exist, use the site\'s stylesheet, link back, run no script, build no commands', () => {
    for (const name of ['accuracy.html', 'accuracy-report.html']) {
      assert.ok(existsSync(join(DIST, name)), `npm run build:web writes web/dist/${name}`);
      const text = readFileSync(join(DIST, name), 'utf8');
      assert.match(text, /<link rel="stylesheet" href="styles\.css">/);
      assert.match(text, /script-src 'none'/);
      assert.doesNotMatch(text, /<script/i);
    }
    // The page for users has no build commands; the report has no "how to regenerate" preamble.
    assert.doesNotMatch(readFileSync(join(DIST, 'accuracy.html'), 'utf8'), /python3|cmake|tools\/accuracy/);
    assert.doesNotMatch(readFileSync(join(DIST, 'accuracy-report.html'), 'utf8'), /Regenerate everything|Do not edit this file/);
  });

  test('the scatter plots the core\'s estimate against the published measurement of every scored run', async () => {
    const p = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    await p.goto(`${server.url}accuracy.html`);
    // The points are the report's (tools/accuracy/accuracy.py): every scored case, measured and
    // estimated; a case the core runs as it is (not provisional) is estimated by this very core.
    const { points } = JSON.parse(readFileSync(join(ROOT, 'docs/data/accuracy_points.json'), 'utf8'));
    const cases = new Map(JSON.parse(readFileSync(join(ROOT, 'tools/accuracy/cases.json'), 'utf8')).cases.map((c) => [c.id, c]));
    const marks = await p.getByTestId('accuracy-scatter').locator('g.mark[data-id]').evaluateAll((gs) =>
      gs.map((g) => [g.dataset.id, Number(g.dataset.measured), Number(g.dataset.predicted)]));
    assert.equal(marks.length, points.length);
    const byId = new Map(marks.map(([i, m, e]) => [i, { m, e }]));
    let checked = 0;
    for (const point of points) {
      const shown = byId.get(point.id);
      assert.ok(shown, point.id);
      assert.equal(shown.m, point.measured, `${point.id}: measured`);
      assert.equal(shown.e, point.predicted, `${point.id}: memfit's estimate`);
      const answer = core.estimate(cases.get(point.id).config);
      if (!point.provisional && answer.ok) {
        // Under FSDP1 without its rate limiter the reserve the run shows is the run-ahead's
        // (accuracy.py `shown`), not the need the fit uses.
        const shownByCore = answer.allocator?.fsdp_runahead?.[point.quantity] ?? answer[point.quantity];
        assert.ok(Math.abs(shownByCore - point.predicted) <= 1, `${point.id}: the core's estimate now`);
        checked += 1;
      }
    }
    assert.ok(checked > points.length / 2, `${checked} points checked against the core`);
    // The table behind the chart has the same rows.
    assert.equal(await p.getByTestId('accuracy-table').locator('tbody tr').count(), points.length);
    const summary = JSON.parse(readFileSync(join(ROOT, 'docs/data/accuracy_summary.json'), 'utf8'));
    // Every kind of run is named in the legend, and the table by kind adds up to every run.
    const legend = await p.locator('.chart.scatter .legend .mark').evaluateAll((gs) => gs.map((g) => g.getAttribute('class')));
    for (const kind of new Set(points.map((pt) => pt.kind))) assert.ok(legend.includes(`mark kind-${kind}`), `a legend entry for ${kind}`);
    // ... each on a row of its own (the lines' entries below the kinds').
    const rows = await p.locator('.chart.scatter .legend > g').evaluateAll((gs) => gs.map((g) => {
      const r = g.getBoundingClientRect();
      return [r.top, r.bottom];
    }).sort((a, b) => a[0] - b[0]));
    for (let i = 1; i < rows.length; i++) assert.ok(rows[i][0] >= rows[i - 1][1] - 1, `legend rows ${i - 1} and ${i} overlap`);
    const runs = await p.getByTestId('accuracy-kinds').locator('tbody td:nth-of-type(1)').allTextContents();
    assert.equal(runs.reduce((sum, t) => sum + Number(t.replace(/,/g, '')), 0), summary.count);
    assert.match(await p.getByTestId('median-error').textContent(), new RegExp(`${(summary.median_abs_error * 100).toFixed(1)}`));
    mkdirSync(RESULTS_DIR, { recursive: true });
    await p.screenshot({ path: join(RESULTS_DIR, 'accuracy.png'), fullPage: true });
    await p.close();
  });

  test('the report renders docs/accuracy.md: tables, not raw pipes or markup; back to the calculator', async () => {
    const errors = [];
    const p = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    p.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    p.on('pageerror', (e) => errors.push(e.message));
    await p.goto(`${server.url}accuracy-report.html`);
    const md = readFileSync(join(ROOT, 'docs/accuracy.md'), 'utf8');
    const delimiterRows = md.split('\n').filter((l) => /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)+\|?\s*$/.test(l)).length;
    assert.ok(delimiterRows > 10);
    assert.equal(await p.locator('main table').count(), delimiterRows);
    await p.locator('main details').evaluateAll((all) => all.forEach((d) => (d.open = true)));
    const seen = await p.locator('main').innerText();
    assert.deepEqual(seen.split('\n').filter((l) => /^\s*\|/.test(l)), [], 'no line starts with a raw pipe');
    assert.doesNotMatch(seen, /\|\s*-{3}|-{3}\s*\|/, 'no delimiter rows');
    assert.doesNotMatch(seen, /(^|\s)\*\*\S|<\/?(details|summary)>|^#+ /m, 'no raw Markdown or HTML');
    const targets = await p.locator('.doc-toc a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    assert.ok(targets.length > 3);
    for (const t of targets) assert.equal(await p.locator(t).count(), 1, t);
    const back = p.getByTestId('back-to-calculator');
    assert.equal(await back.getAttribute('href'), './');
    await back.click();
    await p.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
    assert.deepEqual(errors, []);
    await p.close();
  });
});
