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

// The main thread's long tasks while `act` runs: { wall, cpu, blocking }. The Long Tasks API
// measures wall-clock time; on a shared, loaded machine (this project's has 2 cores and often a
// load of 10) a task is descheduled far past 50 ms while doing 5 ms of work. So the page is traced
// meanwhile (Chromium's timeline: the main thread's tasks with their thread CPU time), and a task
// blocks when the main thread worked over `limitMs` in it (`blocking`, empty when no task was long
// even by the wall clock): what grows with the page's own work shows either way.
export async function longTasksDuring(p, act, limitMs = 50) {
  await p.evaluate(() => {
    window.memfitLongTasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.memfitLongTasks.push(Math.round(e.duration));
    }).observe({ type: 'longtask' });
  });
  const browser = p.context().browser();
  await browser.startTracing(p, { categories: ['devtools.timeline'] });
  await act();
  const trace = JSON.parse((await browser.stopTracing()).toString()).traceEvents;
  const main = trace.find((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain' &&
    trace.some((t) => t.pid === e.pid && t.name === 'RunTask'));
  const cpu = trace.filter((e) => e.ph === 'X' && e.name === 'RunTask' && e.pid === main?.pid && e.tid === main?.tid)
    .map((e) => Math.round((e.tdur ?? e.dur) / 1000)).filter((ms) => ms > limitMs);
  const wall = await p.evaluate((limit) => window.memfitLongTasks.filter((d) => d > limit), limitMs);
  return { wall, cpu, blocking: wall.length === 0 ? [] : cpu };
}

// Waits until the page shows the core's answer `expected` (an estimate): the core answers from its
// Web Worker, a moment after the input. The verdict must name the expected card too: two cards can
// give the same bytes (the seeds' toy model on an H100 and an A100 40GB), so the numbers alone may
// still be the previous answer's.
export async function waitForAnswer(p, expected, timeout = 10000) {
  await p.waitForFunction(([peak, total, gpu]) => {
    const get = (id) => document.querySelector(`[data-testid="${id}"]`)?.dataset.bytes;
    const answer = document.querySelector('.answer');
    // The details follow the headline by a paint (state.js `settled`).
    const details = document.querySelector('[data-testid="details-settled"]');
    const on = document.querySelector('[data-testid="verdict"] .stat-label')?.textContent;  // "On <GPU name>"
    return get('peak-allocated') === peak && get('device-total') === total && answer?.dataset.stale === 'false' &&
      details?.dataset.settled !== 'false' && (gpu === null || on === `On ${gpu}`);
  }, [String(expected.peak_allocated_bytes), String(expected.device_total_bytes), expected.fits?.name ?? null], { timeout });
}

// Waits until the page has drawn every answer it asked the core for: nothing marked busy
// (aria-busy="true": the form while staged, the solve line, the suggestions, the sweep, the planner
// and its exports), the details drawn for the answer on screen (data-settled), no sweep or planner
// search still announced in words (neither is marked busy before its first answer), and, for an
// input the core refused, its banner (App.jsx draws it 600 ms after the error).
export async function waitForIdle(p, timeout = 20000) {
  await p.waitForFunction(() => {
    const text = (id) => document.querySelector(`[data-testid="${id}"]`)?.textContent ?? '';
    const refused = document.querySelector('.answer[data-stale="true"], .empty-results');
    return !document.querySelector('[aria-busy="true"], [data-settled="false"]') &&
      !text('sweep-summary').startsWith('The core is estimating') && !text('planner-status').includes('The core is searching') &&
      (!refused || document.querySelector('[data-testid="error-banner"]') !== null);
  }, null, { timeout });
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
