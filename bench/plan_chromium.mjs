// The planner's wasm module in headless Chromium (playwright-core, Debian's /usr/bin/chromium):
// the median time of the 70B over 1–1024 GPUs plan, in a Web Worker as the page runs it.
// Usage: node bench/plan_chromium.mjs   (after scripts/setup.sh)
import { chromium } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS, WASM_DIR, startServer } from '../tests/browser/helpers.mjs';

const server = await startServer(WASM_DIR);
const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
try {
  const page = await browser.newPage();
  await page.goto(server.url);  // any page of the origin: the module is imported from there
  const result = await page.evaluate(async (base) => {
    const source = `
      const { default: create } = await import('${base}memfit-planner.mjs');
      const memfit = await create({ locateFile: (f) => '${base}' + f });
      const config = JSON.stringify({ model: { preset: 'llama-3-70b' }, training: { seq_len: 8192, goal: 'pretrain' } });
      const options = JSON.stringify({ gpus_min: 1, gpus_max: 1024 });
      let r = JSON.parse(memfit.plan(config, options));
      const times = [];
      for (let i = 0; i < 9; i++) {
        const t0 = performance.now();
        r = JSON.parse(memfit.plan(config, options));
        times.push(performance.now() - t0);
      }
      times.sort((a, b) => a - b);
      postMessage({ median: times[4], layouts: r.search.layouts, estimates: r.search.estimates, best: r.plans[0].step_time_s });`;
    const worker = new Worker(URL.createObjectURL(new Blob([source], { type: 'text/javascript' })), { type: 'module' });
    return new Promise((ok, fail) => {
      worker.onmessage = (e) => ok(e.data);
      worker.onerror = (e) => fail(e.message);
    });
  }, server.url);
  console.log(`Chromium worker: llama-3-70b over 1-1024 GPUs, median ${result.median.toFixed(1)} ms ` +
              `(${result.layouts} layouts decided, ${result.estimates} full estimates, ` +
              `${(result.layouts / result.median / 1000).toFixed(2)} M layouts/s)`);
} finally {
  await browser.close();
  await server.close();
}
