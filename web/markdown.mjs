// A small, safe Markdown → HTML converter for the build (docs/accuracy.md → dist/accuracy.html).
// No dependency. Everything in the source is text: every character that means something in HTML
// is escaped, and the only tags written are the ones this file emits itself.
//
// Blocks:  # … ###### headings (with an id), paragraphs, `- ` / `* ` / `1. ` lists (nested blocks
//          inside an item by indentation), pipe tables (alignment from the delimiter row, `\|` in a
//          cell), fenced and four-space-indented code, `---` rules, and one construct of GitHub's
//          that the report uses: a line `<details><summary>text</summary>` … a line `</details>`,
//          recognised as a whole line and rewritten (the summary text is escaped like any other);
//          any other HTML is shown as text.
// Inline:  `code`, **bold**, *emphasis*, [text](url) where url is relative or http(s) (any other
//          scheme, e.g. javascript:, drops the link and keeps its text), backslash escapes.
//          Underscores are not emphasis (the report is full of snake_case names).
//
// Pure: no DOM, no file system. Tested by tests/browser/markdown.test.mjs.

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const PUNCTUATION = /^[!-/:-@[-`{-~]$/;

// The url when it is safe to put in href: relative (no scheme), or http / https. null otherwise.
export function safeUrl(url) {
  const text = String(url);
  if (text === '' || /[\u0000-\u0020\u007f-\u009f\s]/.test(text)) return null;
  const scheme = /^([^:/?#]*):/.exec(text);
  if (scheme) return /^https?$/i.test(scheme[1]) ? text : null;
  return text;
}

// ---- inline ----------------------------------------------------------------------------------

// Where a code span opened by a run of `n` backticks (ending at `from`) closes; -1 if it does not.
function codeSpanClose(src, from, n) {
  for (let j = from; j < src.length;) {
    const k = src.indexOf('`', j);
    if (k < 0) return -1;
    let e = k;
    while (src[e] === '`') e++;
    if (e - k === n) return k;
    j = e;
  }
  return -1;
}

// Skips a code span or a backslash escape at j; returns the index after it, or j when neither.
function skipOpaque(src, j) {
  if (src[j] === '\\' && j + 1 < src.length) return j + 2;
  if (src[j] === '`') {
    let e = j;
    while (src[e] === '`') e++;
    const close = codeSpanClose(src, e, e - j);
    return close < 0 ? e : close + (e - j);
  }
  return j;
}

// The index of the delimiter closing emphasis opened before `from` (not after whitespace); -1.
function emphasisClose(src, from, delimiter) {
  for (let j = from; j < src.length;) {
    const skipped = skipOpaque(src, j);
    if (skipped !== j) {
      j = skipped;
      continue;
    }
    if (src.startsWith(delimiter, j) && j > from && !/\s/.test(src[j - 1])) {
      if (delimiter === '*' && src[j + 1] === '*') {  // a ** pair belongs to bold inside
        j += 2;
        continue;
      }
      return j;
    }
    j++;
  }
  return -1;
}

// [text](url) at i → { text, url, end } or null.
function linkAt(src, i) {
  let depth = 0;
  for (let j = i; j < src.length;) {
    const skipped = skipOpaque(src, j);
    if (skipped !== j) {
      j = skipped;
      continue;
    }
    if (src[j] === '[') depth++;
    else if (src[j] === ']' && --depth === 0) {
      if (src[j + 1] !== '(') return null;
      // The destination ends at the ')' that balances its '(' (urls may hold balanced parentheses).
      let close = -1;
      for (let k = j + 2, parens = 0; k < src.length && close < 0; k++) {
        if (src[k] === '\\') k++;
        else if (src[k] === '(') parens++;
        else if (src[k] === ')' && parens-- === 0) close = k;
      }
      if (close < 0) return null;
      let url = src.slice(j + 2, close).trim();
      if (url.startsWith('<') && url.endsWith('>')) url = url.slice(1, -1);
      if (url === '' || /\s/.test(url)) return null;
      return { text: src.slice(i + 1, j), url, end: close + 1 };
    }
    j++;
  }
  return null;
}

// Inline Markdown → HTML; everything not markup is escaped.
export function inlineToHtml(src, allowLinks = true) {
  let out = '';
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === '\\' && i + 1 < src.length && PUNCTUATION.test(src[i + 1])) {
      out += escapeHtml(src[i + 1]);
      i += 2;
      continue;
    }
    if (c === '`') {
      let e = i;
      while (src[e] === '`') e++;
      const close = codeSpanClose(src, e, e - i);
      if (close >= 0) {
        let code = src.slice(e, close).replace(/\n/g, ' ');
        if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ') && code.trim()) code = code.slice(1, -1);
        out += `<code>${escapeHtml(code)}</code>`;
        i = close + (e - i);
      } else {
        out += src.slice(i, e);
        i = e;
      }
      continue;
    }
    if (c === '[' && allowLinks) {
      const link = linkAt(src, i);
      if (link) {
        const text = inlineToHtml(link.text, false);
        const url = safeUrl(link.url);
        out += url === null ? text : `<a href="${escapeHtml(url)}">${text}</a>`;
        i = link.end;
        continue;
      }
    }
    if (c === '*') {
      const bold = src[i + 1] === '*';
      const open = i + (bold ? 2 : 1);
      if (open < src.length && !/\s/.test(src[open]) && !(bold && src[open] === '*')) {
        const close = emphasisClose(src, open, bold ? '**' : '*');
        if (close > 0) {
          const tag = bold ? 'strong' : 'em';
          out += `<${tag}>${inlineToHtml(src.slice(open, close), allowLinks)}</${tag}>`;
          i = close + (bold ? 2 : 1);
          continue;
        }
      }
      let e = i;
      while (src[e] === '*') e++;
      out += src.slice(i, e);
      i = e;
      continue;
    }
    out += ESCAPES[c] ?? c;
    i++;
  }
  return out;
}

// Heading text without its markup, for ids and the document's title.
function plainText(src) {
  return src.replace(/\\([!-/:-@[-`{-~])/g, '$1').replace(/[`*]/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').trim();
}

function slugify(text, used) {
  const base = text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '') || 'section';
  let slug = base;
  for (let n = 2; used.has(slug); n++) slug = `${base}-${n}`;
  used.add(slug);
  return slug;
}

// ---- blocks ----------------------------------------------------------------------------------

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const LIST_ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])(?:( +)(.*))?$/;
const DETAILS_OPEN = /^ {0,3}<details>\s*(?:<summary>(.*?)<\/summary>)?\s*$/i;
const DETAILS_CLOSE = /^ {0,3}<\/details>\s*$/i;
const DELIMITER_CELL = /^:?-+:?$/;

// A table row's cells: outer pipes dropped, split on pipes that are not escaped, `\|` → `|`.
function splitCells(line) {
  let text = line.trim();
  if (text.startsWith('|')) text = text.slice(1);
  if (text.endsWith('|') && !text.endsWith('\\|')) text = text.slice(0, -1);
  const cells = [];
  let cell = '';
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '\\' && text[i + 1] === '|') {
      cell += '|';
      i++;
    } else if (text[i] === '|') {
      cells.push(cell.trim());
      cell = '';
    } else {
      cell += text[i];
    }
  }
  cells.push(cell.trim());
  return cells;
}

function tableAt(lines, i) {
  if (i + 1 >= lines.length || !lines[i].includes('|') || !lines[i + 1].includes('|')) return null;
  const head = splitCells(lines[i]);
  const delimiter = splitCells(lines[i + 1]);
  if (delimiter.length !== head.length || !delimiter.every((d) => DELIMITER_CELL.test(d))) return null;
  const align = delimiter.map((d) => (d.endsWith(':') ? (d.startsWith(':') ? 'center' : 'num') : ''));
  return { head, align };
}

function isListItem(line) {
  const m = LIST_ITEM.exec(line);
  return m !== null && !RULE.test(line) && (m[4] !== undefined || line.trim() === m[2]);
}

// Whether line i ends a paragraph (an ordered list interrupts one only when it starts at 1).
function startsBlock(lines, i) {
  const line = lines[i];
  const item = isListItem(line) && (!/\d/.test(LIST_ITEM.exec(line)[2]) || Number.parseInt(LIST_ITEM.exec(line)[2], 10) === 1);
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || item ||
    DETAILS_OPEN.test(line) || DETAILS_CLOSE.test(line) || tableAt(lines, i) !== null;
}

function renderTable(lines, i, table) {
  const cls = (k) => (table.align[k] ? ` class="${table.align[k]}"` : '');
  const rows = [];
  let j = i + 2;
  for (; j < lines.length && lines[j].trim() !== '' && lines[j].includes('|'); j++) {
    const cells = splitCells(lines[j]);
    const tds = table.head.map((_, k) => `<td${cls(k)}>${inlineToHtml(cells[k] ?? '')}</td>`);
    rows.push(`<tr>${tds.join('')}</tr>`);
  }
  const ths = table.head.map((h, k) => `<th scope="col"${cls(k)}>${inlineToHtml(h)}</th>`);
  const html = `<div class="table-scroll"><table class="table"><thead><tr>${ths.join('')}</tr></thead>` +
    `<tbody>${rows.join('')}</tbody></table></div>`;
  return { html, next: j };
}

// The lines of one list item (its first line's text, then the indented lines that follow).
function listItemLines(lines, i, indent) {
  const m = LIST_ITEM.exec(lines[i]);
  const body = [m[4] ?? ''];
  let j = i + 1;
  let lastBlank = false;
  for (; j < lines.length; j++) {
    const line = lines[j];
    if (line.trim() === '') {
      body.push('');
      lastBlank = true;
      continue;
    }
    const lead = line.length - line.trimStart().length;
    if (lead >= indent) body.push(line.slice(indent));
    else if (!lastBlank && !isListItem(line) && !startsBlock(lines, j)) body.push(line.trimStart());  // lazy continuation
    else break;
    lastBlank = false;
  }
  while (body.length > 0 && body[body.length - 1] === '') {
    body.pop();
  }
  // The caller resumes at the first line not taken (trailing blank lines are left to it).
  let next = j;
  while (next > i + 1 && lines[next - 1].trim() === '') next--;
  return { body, next };
}

function renderList(lines, i, ctx) {
  const first = LIST_ITEM.exec(lines[i]);
  const ordered = /\d/.test(first[2]);
  const items = [];
  let j = i;
  while (j < lines.length) {
    const m = LIST_ITEM.exec(lines[j]);
    if (!m || !isListItem(lines[j]) || /\d/.test(m[2]) !== ordered) break;
    const indent = m[1].length + m[2].length + Math.min((m[3] ?? ' ').length, 4);
    const { body, next } = listItemLines(lines, j, indent);
    const parts = renderBlocks(body, ctx);
    const inner = parts.length === 1 && parts[0].startsWith('<p>') ? parts[0].slice(3, -4) : parts.join('\n');
    items.push(`<li>${inner}</li>`);
    j = next;
    let k = j;
    while (k < lines.length && lines[k].trim() === '') k++;
    if (k < lines.length && isListItem(lines[k]) && /\d/.test(LIST_ITEM.exec(lines[k])[2]) === ordered) j = k;
    else break;
  }
  const start = ordered ? Number.parseInt(first[2], 10) : 1;
  const tag = ordered ? 'ol' : 'ul';
  return { html: `<${tag}${ordered && start !== 1 ? ` start="${start}"` : ''}>\n${items.join('\n')}\n</${tag}>`, next: j };
}

function renderBlocks(lines, ctx) {
  const out = [];
  let openDetails = 0;
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.trim() === '') {
      i++;
      continue;
    }
    let m;
    if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const close = new RegExp(`^ {0,3}${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`);
      const body = [];
      let j = i + 1;
      for (; j < lines.length && !close.test(lines[j]); j++) body.push(lines[j]);
      out.push(`<pre><code>${escapeHtml(body.join('\n'))}</code></pre>`);
      i = j + 1;
      continue;
    }
    if (/^ {4}/.test(line)) {
      const body = [];
      let j = i;
      for (; j < lines.length && (lines[j].trim() === '' || /^ {4}/.test(lines[j])); j++) body.push(lines[j].slice(4));
      while (body.length > 0 && body[body.length - 1].trim() === '') body.pop();
      out.push(`<pre><code>${escapeHtml(body.join('\n'))}</code></pre>`);
      i = j;
      continue;
    }
    if ((m = HEADING.exec(line))) {
      const level = m[1].length;
      const source = m[2] ?? '';
      const text = plainText(source);
      const id = slugify(text, ctx.ids);
      const html = inlineToHtml(source);
      ctx.headings.push({ level, id, text, html });
      out.push(`<h${level} id="${id}">${html}</h${level}>`);
      i++;
      continue;
    }
    if ((m = DETAILS_OPEN.exec(line))) {
      out.push(`<details>${m[1] !== undefined ? `<summary>${inlineToHtml(m[1])}</summary>` : ''}`);
      openDetails++;
      i++;
      continue;
    }
    if (DETAILS_CLOSE.test(line) && openDetails > 0) {
      out.push('</details>');
      openDetails--;
      i++;
      continue;
    }
    if (RULE.test(line)) {
      out.push('<hr>');
      i++;
      continue;
    }
    const table = tableAt(lines, i);
    if (table) {
      const { html, next } = renderTable(lines, i, table);
      out.push(html);
      i = next;
      continue;
    }
    if (isListItem(line)) {
      const { html, next } = renderList(lines, i, ctx);
      out.push(html);
      i = next;
      continue;
    }
    const para = [line.trim()];
    let j = i + 1;
    for (; j < lines.length && lines[j].trim() !== '' && !startsBlock(lines, j); j++) para.push(lines[j].trim());
    out.push(`<p>${inlineToHtml(para.join('\n'))}</p>`);
    i = j;
  }
  while (openDetails-- > 0) out.push('</details>');
  return out;
}

// Markdown text → { html, headings: [{ level, id, text, html }] } (text: plain, for titles).
export function markdownToHtml(markdown) {
  const lines = String(markdown).replace(/\r\n?/g, '\n').replace(/\t/g, '    ').split('\n');
  const ctx = { ids: new Set(), headings: [] };
  return { html: renderBlocks(lines, ctx).join('\n'), headings: ctx.headings };
}
