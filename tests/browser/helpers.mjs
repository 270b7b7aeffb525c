// Shared helpers for the browser tests: a static file server over web/dist/, Chromium through
// playwright-core, and the wasm core loaded in node (the expected numbers come from it).
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const DIST = join(ROOT, 'web/dist');
export const WASM_DIR = resolve(ROOT, process.env.MEMFIT_WASM_DIR ?? 'build-wasm/wasm');
export const CHROMIUM = process.env.MEMFIT_CHROMIUM ?? '/usr/bin/chromium';
export const RESULTS_DIR = join(ROOT, 'test-results');

export const CHROMIUM_ARGS = ['--no-sandbox', '--headless', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.webmanifest': 'application/manifest+json',
};

// A tiny static server on 127.0.0.1 (port 0: the system picks one).
export async function startServer(dir = DIST) {
  const rootDir = resolve(dir);
  const server = createServer(async (req, res) => {
    try {
      const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
      const file = normalize(join(rootDir, path.endsWith('/') ? `${path}index.html` : path));
      if (!file.startsWith(rootDir + sep) && file !== rootDir) throw new Error('outside');
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
      res.end(body);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((ok) => server.close(ok)) };
}

// What is missing for the browser tests to run ('' when nothing).
export function missingPrerequisites() {
  if (!existsSync(join(DIST, 'index.html'))) return 'web/dist/ is not built: run `npm run build:web` first';
  if (!existsSync(join(WASM_DIR, 'memfit.mjs'))) return `no wasm module in ${WASM_DIR}: build it first (see README)`;
  if (!existsSync(CHROMIUM)) return `no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set MEMFIT_CHROMIUM)`;
  return '';
}

// The core in node, through the same engine the page's worker runs (web/src/engine.js), as the
// expected-value oracle: every function synchronous.
export async function loadNodeCore() {
  const { createEngine, loadModule } = await import(pathToFileURL(join(ROOT, 'web/src/engine.js')).href);
  const { default: createMemfit } = await import(pathToFileURL(join(WASM_DIR, 'memfit.mjs')).href);
  return createEngine(await loadModule(createMemfit, { wasmBinary: readFileSync(join(WASM_DIR, 'memfit.wasm')) }));
}

// The planner's module (memfit-planner.wasm: the same functions plus plan, exportPlan, exports)
// in node, through the same engine the planner's worker runs: the planner tests' oracle.
export async function loadNodePlanner() {
  const { createEngine, loadModule } = await import(pathToFileURL(join(ROOT, 'web/src/engine.js')).href);
  const { default: createPlanner } = await import(pathToFileURL(join(WASM_DIR, 'memfit-planner.mjs')).href);
  return createEngine(await loadModule(createPlanner, { wasmBinary: readFileSync(join(WASM_DIR, 'memfit-planner.wasm')) }));
}

export async function launchBrowser() {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

// Waits until the page shows the core's answer `expected` (an estimate): the core answers from its
// Web Worker, a moment after the input.
export async function waitForAnswer(p, expected, timeout = 10000) {
  await p.waitForFunction(([peak, total]) => {
    const get = (id) => document.querySelector(`[data-testid="${id}"]`)?.dataset.bytes;
    const answer = document.querySelector('.answer');
    return get('peak-allocated') === peak && get('device-total') === total && answer?.dataset.stale === 'false';
  }, [String(expected.peak_allocated_bytes), String(expected.device_total_bytes)], { timeout });
}

// web/dist/ at https://memfit.example/ (the examples' stand-in for the hosted memfit), with CORS as
// GitHub Pages serves it: a context's requests there are answered from the files.
export async function serveMemfitExample(context) {
  await context.route('https://memfit.example/**', async (route) => {
    const path = new URL(route.request().url()).pathname.replace(/^\//, '') || 'index.html';
    const file = normalize(join(DIST, path));
    if (!file.startsWith(DIST + sep) || !existsSync(file)) return route.fulfill({ status: 404, body: 'not found' });
    return route.fulfill({
      status: 200,
      body: readFileSync(file),
      headers: { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'access-control-allow-origin': '*' },
    });
  });
}
