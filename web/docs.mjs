// Markdown → HTML for the site's documents, at build time only (nothing of it is shipped to the
// browser), with marked (a maintained CommonMark + GFM parser). What the source may not do: raw
// HTML is shown as text (but for whole-line <details><summary> folds), links go only to relative, #anchor or http(s) addresses, images become
// their alt text. Headings get ids (for the table of contents), tables the site's classes and a
// scroll region that takes keyboard focus.
import { Marked } from 'marked';

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

// A link target we write: relative paths, #anchors and http(s); anything else (javascript:,
// data:, …) is refused ('').
export function safeUrl(href) {
  const url = String(href ?? '').trim();
  if (/^[a-z][a-z0-9+.-]*:/i.test(url)) return /^https?:\/\//i.test(url) ? url : '';
  return url;
}

export function slug(text) {
  return String(text).toLowerCase().replace(/<[^>]*>/g, '').replace(/&[a-z#0-9]+;/g, '')
    .replace(/[^a-z0-9\s-]/g, '').trim().replace(/\s+/g, '-') || 'section';
}

const ALIGN = { right: ' class="num"', center: ' class="center"', left: '' };

// markdown → { html, headings: [{ level, id, text, html }] }
export function renderMarkdown(markdown) {
  const headings = [];
  const used = new Map();
  let tables = 0;
  let openDetails = 0;
  const marked = new Marked({
    gfm: true,
    renderer: {
      // Raw HTML is text, except one construct the report uses to fold long parts: a line
      // "<details><summary>title</summary>" and a matching "</details>" line.
      html({ text }) {
        const line = text.trim();
        const open = /^<details><summary>([^<>]*)<\/summary>$/.exec(line);
        if (open) {
          openDetails += 1;
          return `<details><summary>${escapeHtml(open[1])}</summary>\n`;
        }
        if (line === '</details>' && openDetails > 0) {
          openDetails -= 1;
          return '</details>\n';
        }
        return escapeHtml(text);
      },
      heading({ tokens, depth, text }) {
        const inner = this.parser.parseInline(tokens);
        let id = slug(text);
        const n = used.get(id) ?? 0;
        used.set(id, n + 1);
        if (n) id = `${id}-${n}`;
        headings.push({ level: depth, id, text: inner.replace(/<[^>]*>/g, ''), html: inner });
        return `<h${depth} id="${id}">${inner}</h${depth}>\n`;
      },
      link({ href, tokens }) {
        const inner = this.parser.parseInline(tokens);
        const url = safeUrl(href);
        return url ? `<a href="${escapeHtml(url)}">${inner}</a>` : inner;
      },
      image({ text }) {
        return escapeHtml(text);
      },
      table(token) {
        const cell = (c, tag) => `<${tag}${tag === 'th' ? ' scope="col"' : ''}${ALIGN[token.align[c.i]] ?? ''}>${this.parser.parseInline(c.tokens)}</${tag}>`;
        const head = token.header.map((c, i) => cell({ ...c, i }, 'th')).join('');
        const rows = token.rows.map((r) => `<tr>${r.map((c, i) => cell({ ...c, i }, 'td')).join('')}</tr>`).join('\n');
        tables += 1;
        const label = `Table ${tables}`;
        return `<div class="table-scroll" tabindex="0" role="region" aria-label="${label}"><table class="table"><thead><tr>${head}</tr></thead><tbody>\n${rows}\n</tbody></table></div>\n`;
      },
    },
  });
  const html = marked.parse(String(markdown)) + '</details>\n'.repeat(openDetails);
  return { html, headings };
}
