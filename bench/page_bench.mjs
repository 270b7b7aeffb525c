// The page in headless Chromium on localhost (after scripts/setup.sh): medians of RUNS cold loads
// each, at 1× and with the CPU throttled 4× (Chrome DevTools' Emulation.setCPUThrottlingRate).
//   first paint with numbers   navigation → first contentful paint; the default configuration's
//                              numbers are in index.html (checked present at that moment)
//   live page                  navigation → the core running and its first answer on screen
//   share link to numbers      navigation of a link for another configuration → its numbers
//   keystroke to numbers       an input event in a field → the compositor commit of the first frame
//                              that shows the new numbers (from a trace: the frame after the DOM
//                              changed; the details below follow in a later frame)
//   component in a doc page    examples/plain-html: the page's load event → <memfit-estimate>'s
//                              numbers on screen
// and the first view's size from the build's size report. Usage: node bench/page_bench.mjs [RUNS]
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { chromium } from 'playwright-core';

import { CHROMIUM, CHROMIUM_ARGS, ROOT, serveMemfitExample, startServer } from '../tests/browser/helpers.mjs';

const RUNS = Number(process.argv[2] ?? 7);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const LINK = '?v=2&preset=mistral-7b-v0.3&micro_batch_size=2&seq_len=4096';

const server = await startServer(ROOT);  // the repository root: web/dist/ and examples/
const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
const base = `${server.url}web/dist/`;

// Only the component's documentation page needs https://memfit.example/ served: routing turns on
// request interception for the whole context, which delays every request of the page by a round
// trip through playwright (about 150 ms of the first paint on this machine), so the page's own
// loads run without it.
async function page(rate, { example = false } = {}) {
  const context = await browser.newContext();
  if (example) await serveMemfitExample(context);
  const p = await context.newPage();
  const cdp = await context.newCDPSession(p);
  await cdp.send('Emulation.setCPUThrottlingRate', { rate });
  return p;
}

async function coldLoad(rate) {
  const p = await page(rate);
  await p.goto(base, { waitUntil: 'commit' });
  await p.waitForFunction(() => performance.getEntriesByName('first-contentful-paint').length > 0, null, { polling: 'raf' });
  const fcp = await p.evaluate(() => ({
    at: performance.getEntriesByName('first-contentful-paint')[0].startTime,
    numbers: Boolean(document.querySelector('[data-testid="peak-allocated"]')?.dataset.bytes),
  }));
  await p.waitForSelector('html[data-ready="true"]', { timeout: 30000 });
  const live = await p.evaluate(() => performance.now());
  // One keystroke: the micro-batch size changes; the numbers show the new value (the activations:
  // the default run's peak is at the optimizer step, whatever the micro-batch). Timed in a trace
  // from the input event to the end of the compositor commit of the first frame after the DOM
  // changed: the moment the new numbers are handed over to be drawn.
  await p.waitForTimeout(300);
  const trace = join(tmpdir(), `memfit-keystroke-${process.pid}.json`);
  await browser.startTracing(p, { path: trace, categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'blink.user_timing'] });
  await p.evaluate(async () => {
    const input = document.querySelector('#field-training-micro_batch_size');
    const peak = () => document.querySelector('[data-testid="breakdown-activations"]').dataset.bytes;
    const before = peak();
    const changed = new MutationObserver(() => {
      if (peak() === before) return;
      performance.mark('memfit-keystroke-numbers');
      changed.disconnect();
    });
    changed.observe(document.body, { subtree: true, attributes: true, childList: true, characterData: true });
    performance.mark('memfit-keystroke');
    input.value = String(Number(input.value) + 1);
    input.dispatchEvent(new Event('input', { bubbles: true }));
    while (peak() === before) await new Promise((r) => requestAnimationFrame(r));
    await new Promise((r) => requestAnimationFrame(r));
  });
  await browser.stopTracing();
  const events = JSON.parse(readFileSync(trace, 'utf8')).traceEvents;
  rmSync(trace, { force: true });
  const at = (name) => events.find((e) => e.name === name)?.ts;
  const start = at('memfit-keystroke');
  const numbers = at('memfit-keystroke-numbers');
  const commit = events.filter((e) => e.name === 'Commit' && e.ph === 'X' && e.ts > numbers).sort((a, b) => a.ts - b.ts)[0];
  if (start === undefined || numbers === undefined || !commit) throw new Error('the keystroke trace has no marks or no commit');
  const keystroke = (commit.ts + commit.dur - start) / 1000;
  await p.context().close();
  if (!fcp.numbers) throw new Error('no numbers at first contentful paint');
  return { fcp: fcp.at, live, keystroke };
}

async function linkLoad(rate) {
  const p = await page(rate);
  await p.goto(`${base}${LINK}`, { waitUntil: 'commit' });
  await p.waitForFunction(() => !document.documentElement.classList.contains('from-link') &&
    document.querySelector('[data-testid="peak-allocated"]'), null, { polling: 'raf', timeout: 30000 });
  const at = await p.evaluate(() => performance.now());
  await p.context().close();
  return at;
}

async function component(rate) {
  const p = await page(rate, { example: true });
  await p.goto(`${server.url}examples/plain-html/index.html`);
  const ms = await p.evaluate(() => new Promise((resolve) => {
    const loaded = performance.getEntriesByType('navigation')[0].loadEventEnd;
    const check = () => {
      const el = document.querySelector('memfit-estimate')?.shadowRoot?.querySelector('[data-testid="peak-allocated"]');
      if (el?.dataset.bytes) resolve(performance.now() - loaded);
      else requestAnimationFrame(check);
    };
    check();
  }));
  await p.context().close();
  return ms;
}

const rows = [];
try {
  for (const rate of [1, 4]) {
    const loads = [];
    const links = [];
    const components = [];
    for (let i = 0; i < RUNS; i++) {
      loads.push(await coldLoad(rate));
      links.push(await linkLoad(rate));
      if (existsSync(join(ROOT, 'examples/plain-html/index.html'))) components.push(await component(rate));
    }
    rows.push([`${rate}× CPU`, median(loads.map((l) => l.fcp)), median(loads.map((l) => l.live)), median(links),
      median(loads.map((l) => l.keystroke)), components.length ? median(components) : NaN]);
  }
} finally {
  await browser.close();
  await server.close();
}
const ms = (x) => (Number.isFinite(x) ? `${x.toFixed(0)} ms` : '–');
console.log(`medians of ${RUNS} cold loads, headless Chromium, localhost`);
console.log('| CPU | first paint, with numbers | live page | share link to numbers | keystroke to numbers | component after load |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const [name, fcp, live, link, key, comp] of rows) console.log(`| ${name} | ${ms(fcp)} | ${ms(live)} | ${ms(link)} | ${ms(key)} | ${ms(comp)} |`);
const report = join(ROOT, 'build-web/size-report.json');
if (existsSync(report)) {
  const { firstView, calculator } = JSON.parse(readFileSync(report, 'utf8'));
  const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
  console.log(`first view: ${kib(firstView.gzip)} gzip, ${kib(firstView.brotli)} brotli; everything the calculator loads: ${kib(calculator.gzip)} gzip, ${kib(calculator.brotli)} brotli`);
}
