// The build's Markdown converter (web/markdown.mjs) and the page it makes (web/dist/accuracy.html):
// what the converter supports, that nothing in the source becomes HTML it did not write itself,
// and that the built accuracy page renders docs/accuracy.md's tables in the site's style.
// The converter tests need nothing; the page tests need web/dist/ and Chromium (skipped otherwise).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { escapeHtml, inlineToHtml, markdownToHtml, safeUrl } from '../../web/markdown.mjs';
import { DIST, RESULTS_DIR, ROOT, launchBrowser, missingPrerequisites, startServer } from './helpers.mjs';

const html = (md) => markdownToHtml(md).html;

// The tags and attributes the converter may write; anything else in its output is a leak.
const TAGS = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'p', 'ul', 'ol', 'li', 'pre', 'code', 'strong', 'em', 'a',
  'div', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'details', 'summary', 'hr']);
const ATTRIBUTES = new Set(['id', 'class', 'href', 'scope', 'start']);
function assertOnlyOwnMarkup(out) {
  for (const [, name, attrs] of out.matchAll(/<\/?([A-Za-z][A-Za-z0-9-]*)([^>]*)>/g)) {
    assert.ok(TAGS.has(name), `unexpected tag <${name}> in\n${out}`);
    // Attributes: only name="value" pairs, names from the list, values without raw < > ' .
    assert.match(attrs, /^(\s[a-z]+="[^"<>']*")*$/, `malformed attributes in <${name}${attrs}>`);
    for (const [, attr] of attrs.matchAll(/\s([a-z]+)="/g)) assert.ok(ATTRIBUTES.has(attr), `unexpected attribute ${attr} in <${name}${attrs}>`);
  }
  assert.doesNotMatch(out, /<(?!\/?[a-z0-9]+[ >])/i, 'a "<" that does not open one of our tags');
}

describe('markdown → HTML (web/markdown.mjs)', () => {
  test('headings, paragraphs, lists, code, bold, emphasis, links', () => {
    const out = html([
      '# Title', '', '## Section *one*', '', '### Sub', '', '#### Deeper', '',
      'A paragraph with `code <x>` and **bold** and *em*,', 'continued on a second line.', '',
      '- first item', '- second with [a link](https://example.com/a?b=1&c=2)', '',
      'Code:', '', '    indented code <b>', '', '1. one', '2. two', '', '```', 'fenced & <code>', '```',
    ].join('\n'));
    assert.match(out, /<h1 id="title">Title<\/h1>/);
    assert.match(out, /<h2 id="section-one">Section <em>one<\/em><\/h2>/);
    assert.match(out, /<h3 id="sub">Sub<\/h3>/);
    assert.match(out, /<h4 id="deeper">Deeper<\/h4>/);
    assert.match(out, /<p>A paragraph with <code>code &lt;x&gt;<\/code> and <strong>bold<\/strong> and <em>em<\/em>,\ncontinued on a second line\.<\/p>/);
    assert.match(out, /<ul>\n<li>first item<\/li>\n<li>second with <a href="https:\/\/example\.com\/a\?b=1&amp;c=2">a link<\/a><\/li>\n<\/ul>/);
    assert.match(out, /<ol>\n<li>one<\/li>\n<li>two<\/li>\n<\/ol>/);
    assert.match(out, /<pre><code>indented code &lt;b&gt;<\/code><\/pre>/);
    assert.match(out, /<pre><code>fenced &amp; &lt;code&gt;<\/code><\/pre>/);
    assertOnlyOwnMarkup(out);
  });

  test('pipe tables: alignment, escaped pipes, inline markup in cells; a table inside a list item', () => {
    const out = html([
      '| name | bytes | note |', '|---|---:|:---:|', '| `a\\|b` | 1,024 | **x** \\| y |', '| short |', '',
      '1. item with a table:', '', '   | k | v |', '   |---|---|', '   | 1 | 2 |',
    ].join('\n'));
    assert.match(out, /<th scope="col">name<\/th><th scope="col" class="num">bytes<\/th><th scope="col" class="center">note<\/th>/);
    assert.match(out, /<td><code>a\|b<\/code><\/td><td class="num">1,024<\/td><td class="center"><strong>x<\/strong> \| y<\/td>/);
    assert.match(out, /<tr><td>short<\/td><td class="num"><\/td><td class="center"><\/td><\/tr>/, 'short rows are padded');
    assert.match(out, /<ol>\n<li><p>item with a table:<\/p>\n<div class="table-scroll"><table class="table"><thead><tr><th scope="col">k<\/th>/);
    assert.equal((out.match(/<table/g) ?? []).length, 2);
    assertOnlyOwnMarkup(out);
  });

  test('nothing in the source becomes HTML: tags, attributes, entities and scripts are text', () => {
    const evil = [
      '# <img src=x onerror=alert(1)> heading',
      '<script>alert(1)</script>',
      '<div onclick="alert(1)">raw block</div>',
      'text <b>bold?</b> & &amp; &#60;script&#62; "quotes" \'single\'',
      '| <i>cell</i> | <svg onload=alert(1)> |', '|---|---|', '| `<td>` | </table><script>x</script> |',
      '- <a href="javascript:alert(1)">list</a>',
      '**<em>strong</em>** *<u>em</u>*',
      '[click](javascript:alert(1)) [c2](JaVaScRiPt:alert(1)) [c3](data:text/html,<script>x</script>)',
      '[c4](vbscript:x) [c5](https://ok.example/"onmouseover="alert(1)) [c6](//host/x) [c7](<javascript:x>)',
      '[c8](java&#x73;cript:alert(1)) [`<code>`](#anchor) [**b**](relative/page.html)',
      '<details><summary><img src=x onerror=alert(1)></summary>', 'inside', '</details>',
      '</details>', '<details open ontoggle=alert(1)>', '```', '</pre><script>x</script>', '```',
    ].join('\n');
    const out = html(evil);
    assertOnlyOwnMarkup(out);
    assert.doesNotMatch(out, /<script|<img|<svg|<iframe|<b>|<i>|<u>|<div onclick/i);
    assert.doesNotMatch(out, /<[^>]*\son[a-z]+=/i, 'no event handler inside a tag');
    assert.doesNotMatch(out, /href="[^"]*(javascript|vbscript|data):/i);
    // What is dropped is only the link; its text stays, escaped.
    assert.match(out, /click c2 c3\nc4 /);
    assert.match(out, />c6<\/a> c7\n/);
    assert.match(out, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assert.match(out, /&amp;amp;/, 'entities in the source are text, not entities');
    // A quote cannot close the attribute: it is escaped.
    assert.match(html('[w](https://en.wikipedia.org/wiki/Foo_(bar)) end'), /<a href="https:\/\/en\.wikipedia\.org\/wiki\/Foo_\(bar\)">w<\/a> end/);
    assert.match(out, /<a href="https:\/\/ok\.example\/&quot;onmouseover=&quot;alert\(1\)">c5<\/a>/);
    assert.match(out, /<a href="relative\/page\.html"><strong>b<\/strong><\/a>/);
    assert.match(out, /<a href="#anchor"><code>&lt;code&gt;<\/code><\/a>/);
    assert.match(out, /<a href="java&amp;#x73;cript:alert\(1\)">c8<\/a>|>c8</, 'an entity-spelled scheme is either text or a harmless relative link');
    // The one HTML construct recognised (a whole-line <details><summary>…</summary>) is rewritten,
    // its summary escaped; a stray </details> and a <details> with attributes are text.
    assert.match(out, /<details><summary>&lt;img src=x onerror=alert\(1\)&gt;<\/summary>/);
    assert.equal((out.match(/<details>/g) ?? []).length, (out.match(/<\/details>/g) ?? []).length);
    assert.match(out, /&lt;\/details&gt;/);
    assert.match(out, /&lt;details open ontoggle=alert\(1\)&gt;/);
    assert.match(out, /<pre><code>&lt;\/pre&gt;&lt;script&gt;x&lt;\/script&gt;<\/code><\/pre>/);
  });

  test('safeUrl: relative and http(s) only', () => {
    for (const ok of ['page.html', '../docs/x.md', '#frag', '?q=1', 'https://a.example/', 'HTTP://a.example', '//host/p']) {
      assert.equal(safeUrl(ok), ok, ok);
    }
    for (const bad of ['javascript:alert(1)', ' javascript:x', 'java\tscript:x', 'JAVASCRIPT:x', 'data:text/html,x',
      'vbscript:x', 'file:///etc/passwd', 'mailto:a@b', 'java\nscript:x', '']) {
      assert.equal(safeUrl(bad), null, JSON.stringify(bad));
    }
    assert.equal(escapeHtml(`<a href="x" title='y'>&`), '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;');
    assert.equal(inlineToHtml('a * b * c and 2*3*4 and ** x'), 'a * b * c and 2<em>3</em>4 and ** x');
    assert.equal(inlineToHtml('snake_case_name and `**not bold**`'), 'snake_case_name and <code>**not bold**</code>');
  });

  test('docs/accuracy.md converts with only the converter\'s own markup', () => {
    const md = readFileSync(join(ROOT, 'docs/accuracy.md'), 'utf8');
    const { html: out, headings } = markdownToHtml(md);
    assertOnlyOwnMarkup(out);
    assert.equal(headings.filter((h) => h.level === 1).length, 1);
    const delimiterRows = md.split('\n').filter((l) => /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)+\|?\s*$/.test(l)).length;
    assert.equal((out.match(/<table/g) ?? []).length, delimiterRows);
    assert.equal(new Set(headings.map((h) => h.id)).size, headings.length, 'heading ids are unique');
  });
});

const missing = missingPrerequisites();
describe('the built accuracy page (web/dist/accuracy.html)', { skip: missing || false, concurrency: false }, () => {
  let server;
  let browser;
  before(async () => {
    [server, browser] = await Promise.all([startServer(), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('exists, uses the site\'s stylesheet, links back, runs no script', async () => {
    assert.ok(existsSync(join(DIST, 'accuracy.html')), 'npm run build:web writes web/dist/accuracy.html');
    const text = readFileSync(join(DIST, 'accuracy.html'), 'utf8');
    assert.match(text, /<link rel="stylesheet" href="styles\.css">/);
    assert.match(text, /script-src 'none'/);
    assert.doesNotMatch(text, /<script/i);
  });

  test('renders docs/accuracy.md: tables, not raw pipes or markup', async () => {
    const errors = [];
    const p = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    p.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    p.on('pageerror', (e) => errors.push(e.message));
    await p.goto(`${server.url}accuracy.html`);
    const md = readFileSync(join(ROOT, 'docs/accuracy.md'), 'utf8');
    const delimiterRows = md.split('\n').filter((l) => /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)+\|?\s*$/.test(l)).length;
    assert.ok(delimiterRows > 10);
    assert.equal(await p.locator('main table').count(), delimiterRows);
    assert.equal(await p.locator('script').count(), 0);
    // Open every folded section, then read the text a reader sees.
    await p.locator('main details').evaluateAll((all) => all.forEach((d) => (d.open = true)));
    const seen = await p.locator('main').innerText();
    const lines = seen.split('\n');
    assert.deepEqual(lines.filter((l) => /^\s*\|/.test(l)), [], 'no line starts with a raw pipe');
    assert.doesNotMatch(seen, /\|\s*-{3}|-{3}\s*\|/, 'no delimiter rows');
    assert.doesNotMatch(seen, /(^|\s)\*\*\S|<\/?(details|summary)>|^#+ /m, 'no raw Markdown or HTML');
    assert.equal(await p.locator('h1').count(), 1);
    assert.ok(await p.locator('main h2').count() > 3);
    // The site's stylesheet applies (the same body background as the calculator's).
    const background = await p.evaluate(() => getComputedStyle(document.body).backgroundColor);
    assert.equal(await p.locator('main.card.doc').count(), 1);
    // The table of contents links to headings on the page.
    const targets = await p.locator('.doc-toc a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    assert.ok(targets.length > 3);
    for (const t of targets) assert.equal(await p.locator(t).count(), 1, t);
    mkdirSync(RESULTS_DIR, { recursive: true });
    await p.screenshot({ path: join(RESULTS_DIR, 'accuracy.png') });
    const back = p.getByTestId('back-to-calculator');
    assert.equal(await back.getAttribute('href'), './');
    await back.click();
    await p.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
    assert.equal(await p.evaluate(() => getComputedStyle(document.body).backgroundColor), background);
    assert.deepEqual(errors, []);
    await p.close();
  });
});
