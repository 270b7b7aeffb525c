// Builds the static site into web/dist/:
//   index.html, main.js, styles.css   the calculator (main.js has no core in it)
//   worker.js, memfit.wasm            the core, run in a Web Worker
//   planner-worker.js, memfit-planner.wasm
//                                     the planner's core (the same plus plan and export_plan), in a
//                                     Web Worker of its own started when the planner opens
//   accuracy.html                     how accurate memfit is, for users (chart drawn at build time)
//   accuracy-report.html              docs/accuracy.md, the full generated report (marked)
//   doc.css                           their own styles, over styles.css and details.css
//   details.css                       the details' styles (charts, tables): not in the first view
//   embed.html, embed.js, embed.css   the iframe card (embed.css: the embed forms' styles, also in
//                                     memfit-estimate.js and the Embed dialog's chunk)
//   static-data.json                  the core's static data (schema, defaults, presets, GPUs) as
//                                     this build's core gives it, for the embed forms' workers
// and prints a size report (gzip and brotli). Nothing here runs in the browser.
//   node web/build.mjs            (npm run build:web)
//   MEMFIT_WASM_DIR=... to take the wasm files from elsewhere
//   MEMFIT_NOMINIFY=1 to leave the page's scripts readable (profiling; the size budgets then fail)
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { build, transform } from 'esbuild';

import { escapeHtml, renderMarkdown } from './docs.mjs';
import { sizeReport } from './size.mjs';

const web = dirname(fileURLToPath(import.meta.url));
const root = resolve(web, '..');
const dist = join(web, 'dist');
const tmp = join(root, 'build-web');
const wasmDir = resolve(root, process.env.MEMFIT_WASM_DIR ?? 'build-wasm/wasm');

async function exists(path) {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

for (const name of ['memfit.mjs', 'memfit.wasm', 'memfit-planner.mjs', 'memfit-planner.wasm']) {
  if (!(await exists(join(wasmDir, name)))) {
    console.error(`missing ${join(wasmDir, name)}: build the wasm module first:
  NODE_PATH=/usr/share/nodejs emcmake cmake -S . -B build-wasm && NODE_PATH=/usr/share/nodejs cmake --build build-wasm -j2`);
    process.exit(1);
  }
}

await rm(dist, { recursive: true, force: true });
await mkdir(dist, { recursive: true });
await mkdir(tmp, { recursive: true });

const common = {
  bundle: true,
  minify: process.env.MEMFIT_NOMINIFY ? false : true,
  format: 'esm',
  target: ['es2020'],
  legalComments: 'none',
  logLevel: 'warning',
  jsx: 'automatic',
  jsxImportSource: 'preact',
};
// The page's script (no wasm in it: the core runs in the worker).
// splitting: the details (charts, tables) and the Hugging Face import are chunks of their own,
// loaded after the first view; the planner is one too, loaded when it opens (its styles inside).
const pageBuild = { ...common, loader: { '.css': 'text' } };
await build({ ...pageBuild, entryPoints: [join(web, 'src/main.jsx')], outdir: dist, splitting: true, chunkNames: 'chunks/[name]-[hash]' });
// The core's Web Worker: worker.js with the Emscripten loader (memfit.mjs) bundled in.
// The planner's worker: the same worker.js over the planner's module (memfit-planner.mjs).
const wasmModuleOf = (file) => ({
  name: 'memfit-wasm-module',
  setup(b) {
    b.onResolve({ filter: /^memfit-wasm-module$/ }, () => ({ path: join(wasmDir, file) }));
  },
});
const wasmModule = wasmModuleOf('memfit.mjs');
const plannerModule = wasmModuleOf('memfit-planner.mjs');
await build({ ...common, entryPoints: [join(web, 'src/worker.js')], outfile: join(dist, 'worker.js'), plugins: [wasmModule] });
await build({ ...common, entryPoints: [join(web, 'src/worker.js')], outfile: join(dist, 'planner-worker.js'), plugins: [plannerModule] });
// The embed forms: the iframe card's script, and the web component (one file, its styles inside).
await build({ ...common, entryPoints: [join(web, 'src/embed/embed-page.jsx')], outfile: join(dist, 'embed.js') });
await build({ ...common, entryPoints: [join(web, 'src/embed/memfit-estimate.jsx')], outfile: join(dist, 'memfit-estimate.js'), loader: { '.css': 'text' } });
// The stylesheets, minified (comments and spaces out: 1.4 KiB of the first view's 50 gzipped).
const minifyCss = async (from, to) => {
  const { code } = await transform(await readFile(from, 'utf8'), { loader: 'css', minify: true, legalComments: 'none' });
  await writeFile(to, code);
};
await minifyCss(join(web, 'src/styles.css'), join(dist, 'styles.css'));
for (const name of ['details.css', 'doc.css', 'embed.css']) await minifyCss(join(web, 'src', name), join(dist, name));
for (const name of ['memfit.wasm', 'memfit-planner.wasm']) await copyFile(join(wasmDir, name), join(dist, name));
for (const name of ['icon.svg', 'manifest.webmanifest', 'embed.html']) await copyFile(join(web, name), join(dist, name));

// --- build-time modules (run here in node, never shipped) -----------------------------------
// The page components rendered to HTML, and the core (the same wasm the worker runs) for the
// numbers they show.
await build({
  ...pageBuild,
  minify: false,
  platform: 'node',
  entryPoints: [join(web, 'src/pages/render.jsx')],
  outfile: join(tmp, 'render.mjs'),
  external: ['memfit-wasm-module'],
  plugins: [wasmModule],
});
const pages = await import(`${pathToFileURL(join(tmp, 'render.mjs')).href}?${Date.now()}`);
const core = await pages.loadEngine(join(wasmDir, 'memfit.wasm'));

// --- the calculator, prerendered ---------------------------------------------------------------
// index.html carries the default configuration's numbers, computed now by the native command line
// (checked equal to the wasm core's), so they are on screen at first paint; once the core runs in
// the page, the live page takes their place (main.jsx). A share link for another configuration hides them until the core has answered
// (the small inline script below, allowed by its hash in the page's CSP).
const cli = resolve(root, process.env.MEMFIT_CLI ?? 'build/cli/memfit');
const nativeEstimate = (await exists(cli))
  ? (config) => JSON.parse(execFileSync(cli, ['--config', '-', '--json'], { input: JSON.stringify(config) }).toString())
  : (console.warn(`no native command line at ${cli}: the prerendered numbers come from the wasm core alone`), null);
const data = core.staticData();
const initial = pages.initialAnswers(core, data, nativeEstimate);
const appHtml = pages.renderCalculator(data, initial);
// Hide the prerendered numbers when the address asks for another configuration (or view): they
// would be the wrong ones until the core answers.
// Opened from a file, the page's module does not run at all (browsers refuse module scripts and
// workers from files): this classic script says so, in words, above the prerendered numbers.
const fileNote = '<h2>memfit cannot compute from a file</h2><p>This page was opened from a file, and browsers do not run its core ' +
  '(a Web Worker with WebAssembly) from files. The numbers below are for the default configuration. To change them, open ' +
  '<strong>memfit.html</strong> (the single-file build) instead, or serve this folder (<code>python3 -m http.server</code>) ' +
  'and open http://localhost:8000/.</p>';
const linkScript = "if(location.search.replace(/^\\?(v=1)?$/,''))document.documentElement.classList.add('from-link');" +
  "if(location.protocol=='file:')addEventListener('DOMContentLoaded',function(){if(document.getElementById('memfit-worker'))return;" +
  "document.documentElement.classList.remove('from-link');var d=document.createElement('div');d.className='load-error';" +
  `d.setAttribute('role','alert');d.innerHTML=${JSON.stringify(fileNote)};var a=document.getElementById('app');a.insertBefore(d,a.firstChild)})`;
const hash = (text) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
// The page's stylesheet goes inside index.html: a linked one blocks the first paint until a second
// request comes back (about a fifth of the first paint on localhost here, a round trip more on a
// network); the same bytes are in the first view either way. styles.css stays for the other pages.
const pageCss = await readFile(join(dist, 'styles.css'), 'utf8');
if (/<\/style/i.test(pageCss)) throw new Error('styles.css contains a closing style tag: it cannot be inlined');
const indexHtml = (await readFile(join(web, 'index.html'), 'utf8'))
  .replace('%SCRIPT_HASHES%', hash(linkScript))
  .replace('%LINK_SCRIPT%', linkScript)
  .replace(/<link rel="stylesheet" href="styles\.css">/, () => `<style>${pageCss}</style>`)
  .replace('%APP%', () => appHtml);
await writeFile(join(dist, 'index.html'), indexHtml);
// The embed forms start their worker without building the static data (tens of milliseconds of wasm
// run for the first time, before the first estimate could start) and read this file instead: the
// same core's answer, written once here (core.js startPageCore / withStaticData).
await writeFile(join(dist, 'static-data.json'), JSON.stringify(data));

// --- the accuracy pages ---------------------------------------------------------------------
const summary = JSON.parse(await readFile(join(root, 'docs/data/accuracy_summary.json'), 'utf8'));
// The points are the report's: each published run's measurement and memfit's estimate of it, from
// the same build that wrote docs/accuracy.md (tools/accuracy/accuracy.py).
const { points } = JSON.parse(await readFile(join(root, 'docs/data/accuracy_points.json'), 'utf8'));
await writeFile(join(dist, 'accuracy.html'), pageShell({
  title: 'How accurate is memfit?',
  description: 'How close memfit\'s estimates come to published GPU memory measurements of real training runs.',
  tagline: 'How accurate is the estimate?',
  body: pages.renderAccuracy({ summary, points }),
}));

// docs/accuracy.md, the generated report: its first section (how to regenerate it) is for
// developers and is in the README; the rest is rendered as it is.
const report = await readFile(join(root, 'docs/accuracy.md'), 'utf8');
const reportBody = report.replace(/^(# [^\n]*\n)[\s\S]*?(?=^## )/m, '$1\nThe full report behind [How accurate is memfit?](accuracy.html): every published run memfit was compared with, the configuration written for it and why, and the statistics.\n\n');
const { html: reportHtml, headings } = renderMarkdown(reportBody);
const toc = headings.filter((h) => h.level === 2).map((h) => `<li><a href="#${h.id}">${h.html}</a></li>`).join('\n');
const nav = `<nav class="doc-toc" aria-label="On this page"><p class="group-title">On this page</p><ul>\n${toc}\n</ul></nav>`;
const end = reportHtml.indexOf('</h1>') + '</h1>'.length;
await writeFile(join(dist, 'accuracy-report.html'), pageShell({
  title: headings.find((h) => h.level === 1)?.text ?? 'memfit accuracy report',
  description: 'The full accuracy report: every published measurement memfit is compared with.',
  tagline: 'The full accuracy report',
  body: `${reportHtml.slice(0, end)}\n${nav}\n${reportHtml.slice(end)}`,
}));

// A page of the site without script: the calculator's stylesheet and header.
function pageShell({ title, description, tagline, body }) {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${escapeHtml(title)} · memfit</title>
  <meta name="description" content="${escapeHtml(description)}">
  <meta http-equiv="Content-Security-Policy" content="default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'">
  <link rel="icon" href="data:,">
  <link rel="stylesheet" href="styles.css">
  <link rel="stylesheet" href="details.css">
  <link rel="stylesheet" href="doc.css">
</head>
<body>
<div class="page doc-page">
  <nav class="skip-links" aria-label="Skip links"><a href="#doc" class="skip-link">Skip to the text</a></nav>
  <header class="header">
    <a class="brand brand-link" href="./">
      <svg class="logo" viewBox="0 0 36 36" aria-hidden="true">
        <rect width="36" height="36" rx="9" fill="currentColor" />
        <rect x="8" y="9" width="20" height="4" rx="1.5" fill="#fff" opacity="0.55" />
        <rect x="8" y="16" width="14" height="4" rx="1.5" fill="#fff" opacity="0.8" />
        <rect x="8" y="23" width="9" height="4" rx="1.5" fill="#fff" />
      </svg>
      <span><span class="brand-name">memfit</span><span class="tagline">${escapeHtml(tagline)}</span></span>
    </a>
    <div class="header-actions"><a class="button" href="./" data-testid="back-to-calculator">← Back to the calculator</a></div>
  </header>
  <main class="card doc" id="doc" tabindex="-1">
${body}
  </main>
  <footer class="footer">Built from the repository's data when the site was built. <a href="./">Back to the calculator</a></footer>
</div>
</body>
</html>
`;
}

// --- offline: the service worker, its file list written in -----------------------------------
{
  const files = (await readdir(dist, { recursive: true })).filter((f) => !f.endsWith('/') && f !== 'sw.js' && f !== 'memfit.html');
  const listed = [];
  const digest = createHash('sha256');
  for (const f of files.sort()) {
    const data = await readFile(join(dist, f)).catch(() => null);
    if (!data) continue;  // a folder
    listed.push(f);
    digest.update(f).update(data);
  }
  const version = digest.digest('hex').slice(0, 16);
  const sw = (await readFile(join(web, 'sw.js'), 'utf8'))
    .replace('self.__MEMFIT_FILES__', JSON.stringify(listed))
    .replace('self.__MEMFIT_VERSION__', JSON.stringify(version));
  await writeFile(join(dist, 'sw.js'), sw);
}

// --- memfit.html: the whole calculator in one file, for opening from disk ----------------------
// The page's script without chunks, the worker's code and the wasm (base64) inline; the worker
// starts from a blob (core.js reads them); the CSP allows exactly these inline scripts by hash.
// The planner's worker and wasm too, decoded only when the planner opens.
{
  const single = await build({ ...pageBuild, entryPoints: [join(web, 'src/main.jsx')], write: false, outdir: dist });
  const mainCode = single.outputFiles.find((f) => f.path.endsWith('.js')).text;
  // The worker as a classic script (a blob module worker does not start in a page opened from a
  // file): the Emscripten loader's import.meta.url is only read when no wasm bytes are given.
  const classic = async (plugin) => (await build({ ...common, format: 'iife', write: false, outfile: join(tmp, 'worker-classic.js'),
    entryPoints: [join(web, 'src/worker.js')], plugins: [plugin], define: { 'import.meta.url': 'undefined' }, logLevel: 'error' })).outputFiles[0].text;
  const workerCode = await classic(wasmModule);
  const plannerWorkerCode = await classic(plannerModule);
  const wasm64 = (await readFile(join(dist, 'memfit.wasm'))).toString('base64');
  const plannerWasm64 = (await readFile(join(dist, 'memfit-planner.wasm'))).toString('base64');
  for (const [name, text] of [['the page script', mainCode], ['the worker', workerCode], ['the planner\'s worker', plannerWorkerCode]]) {
    if (/<\/(script|style)/i.test(text)) throw new Error(`${name} contains a closing tag: it cannot be inlined`);
  }
  const html = indexHtml
    .replace(/<script type="module" src="main\.js"><\/script>/, () => `<script type="module">${mainCode}</script>`)
    .replace(/<link rel="manifest"[^>]*>\n\s*/, '')
    .replace(/<link rel="icon"[^>]*>/, '<link rel="icon" href="data:,">')
    .replace('</body>', () => `<script type="text/plain" id="memfit-worker">${workerCode}</script>\n<script type="text/plain" id="memfit-wasm">${wasm64}</script>\n` +
      `<script type="text/plain" id="memfit-planner-worker">${plannerWorkerCode}</script>\n<script type="text/plain" id="memfit-planner-wasm">${plannerWasm64}</script>\n</body>`)
    .replace(/script-src [^;]*;/, `script-src 'wasm-unsafe-eval' ${hash(linkScript)} ${hash(mainCode)};`)
    .replace(/connect-src [^;]*;/, "connect-src https://huggingface.co https://*.huggingface.co https://*.hf.co;")
    .replace("default-src 'self';", "default-src 'none';")
    .replace("style-src 'self' 'unsafe-inline';", "style-src 'unsafe-inline';")
    .replace("img-src 'self' data:;", 'img-src data:;')
    .replace("frame-src 'self';", '');
  await writeFile(join(dist, 'memfit.html'), html);
}

const ok = await sizeReport(dist);
if (!ok) process.exit(1);
