// Builds the static page into web/dist/: the bundled app (main.js), index.html, styles.css and the
// wasm core (memfit.mjs + memfit.wasm from build-wasm/wasm/), and accuracy.html: docs/accuracy.md
// converted by web/markdown.mjs (no dependency; everything escaped). Prints each file's gzip size.
//   node web/build.mjs            (npm run build:web)
//   MEMFIT_WASM_DIR=... to take the wasm files from elsewhere
import { copyFile, mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

import { build } from 'esbuild';

import { escapeHtml, markdownToHtml } from './markdown.mjs';

const web = dirname(fileURLToPath(import.meta.url));
const root = resolve(web, '..');
const dist = join(web, 'dist');
const wasmDir = resolve(root, process.env.MEMFIT_WASM_DIR ?? 'build-wasm/wasm');
const BUDGET_BYTES = 150 * 1024;  // DESIGN.md: the whole page compressed well under 150 KB
const ACCURACY_MD = join(root, 'docs/accuracy.md');

async function exists(path) {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

for (const name of ['memfit.mjs', 'memfit.wasm']) {
  if (!(await exists(join(wasmDir, name)))) {
    console.error(`missing ${join(wasmDir, name)}: build the wasm module first:
  NODE_PATH=/usr/share/nodejs emcmake cmake -S . -B build-wasm && NODE_PATH=/usr/share/nodejs cmake --build build-wasm -j2`);
    process.exit(1);
  }
}

await rm(dist, { recursive: true, force: true });
await mkdir(dist, { recursive: true });

const common = {
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2020'],
  legalComments: 'none',
  logLevel: 'warning',
};
// The page's script (no wasm in it: the core runs in the worker).
await build({
  ...common,
  entryPoints: [join(web, 'src/main.jsx')],
  outfile: join(dist, 'main.js'),
  jsx: 'automatic',
  jsxImportSource: 'preact',
});
// The core's Web Worker: worker.js with the Emscripten loader (memfit.mjs) bundled in.
const wasmModule = {
  name: 'memfit-wasm-module',
  setup(b) {
    b.onResolve({ filter: /^memfit-wasm-module$/ }, () => ({ path: join(wasmDir, 'memfit.mjs') }));
  },
};
await build({
  ...common,
  entryPoints: [join(web, 'src/worker.js')],
  outfile: join(dist, 'worker.js'),
  plugins: [wasmModule],
});
await copyFile(join(web, 'index.html'), join(dist, 'index.html'));
await copyFile(join(web, 'src/styles.css'), join(dist, 'styles.css'));
await copyFile(join(wasmDir, 'memfit.wasm'), join(dist, 'memfit.wasm'));
await writeFile(join(dist, 'accuracy.html'), accuracyPage(await readFile(ACCURACY_MD, 'utf8')));

// docs/accuracy.md as a page of the site: the calculator's stylesheet and header, a table of
// contents from its sections, and no script at all (the CSP says so too).
function accuracyPage(markdown) {
  const { html, headings } = markdownToHtml(markdown);
  const title = headings.find((h) => h.level === 1)?.text ?? 'memfit accuracy';
  const toc = headings.filter((h) => h.level === 2)
    .map((h) => `<li><a href="#${h.id}">${h.html}</a></li>`).join('\n');
  // The table of contents goes after the title (the first heading, when it is the h1).
  const withToc = (body, items) => {
    if (!items) return body;
    const nav = `<nav class="doc-toc" aria-label="On this page"><p class="group-title">On this page</p><ul>\n${items}\n</ul></nav>`;
    const end = body.startsWith('<h1') ? body.indexOf('</h1>') + '</h1>'.length : 0;
    return `${body.slice(0, end)}\n${nav}\n${body.slice(end)}`;
  };
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${escapeHtml(title)} · memfit</title>
  <meta name="description" content="How close memfit's estimates come to published GPU memory measurements.">
  <meta http-equiv="Content-Security-Policy" content="default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'">
  <link rel="icon" href="data:,">
  <link rel="stylesheet" href="styles.css">
</head>
<body>
<div class="page doc-page">
  <header class="header">
    <a class="brand brand-link" href="./">
      <svg class="logo" viewBox="0 0 36 36" aria-hidden="true">
        <rect width="36" height="36" rx="9" fill="currentColor" />
        <rect x="8" y="9" width="20" height="4" rx="1.5" fill="#fff" opacity="0.55" />
        <rect x="8" y="16" width="14" height="4" rx="1.5" fill="#fff" opacity="0.8" />
        <rect x="8" y="23" width="9" height="4" rx="1.5" fill="#fff" />
      </svg>
      <span><span class="brand-name">memfit</span><span class="tagline">How accurate is the estimate?</span></span>
    </a>
    <div class="header-actions"><a class="button" href="./" data-testid="back-to-calculator">← Back to the calculator</a></div>
  </header>
  <main class="card doc">
${withToc(html, toc)}
  </main>
  <footer class="footer">Generated from <code>docs/accuracy.md</code> when the page was built. <a href="./">Back to the calculator</a></footer>
</div>
</body>
</html>
`;
}

// The budget is the calculator's: everything index.html loads. accuracy.html is a page of its own
// (it loads only styles.css, already counted), fetched when someone follows the link to it.
const OWN_PAGES = new Set(['accuracy.html']);
let raw = 0;
let gz = 0;
const lines = [];
const own = [];
for (const name of (await readdir(dist)).sort()) {
  const data = await readFile(join(dist, name));
  const zipped = gzipSync(data, { level: 9 }).length;
  const line = `  ${name.padEnd(14)} ${String(data.length).padStart(9)} B   gzip ${String(zipped).padStart(8)} B`;
  if (OWN_PAGES.has(name)) {
    own.push(`${line}  (its own page, not in the calculator's budget)`);
    continue;
  }
  raw += data.length;
  gz += zipped;
  lines.push(line);
}
console.log(`web/dist/\n${lines.join('\n')}\n  ${'calculator'.padEnd(14)} ${String(raw).padStart(9)} B   gzip ${String(gz).padStart(8)} B` +
  `  (${(gz / 1024).toFixed(1)} KiB of the ${BUDGET_BYTES / 1024} KiB budget)\n${own.join('\n')}`);
if (gz > BUDGET_BYTES) {
  console.error('the page is over its size budget');
  process.exit(1);
}
