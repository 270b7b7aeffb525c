// The page in Chromium: time from navigation to the first estimate on screen, and from a
// keystroke to the updated numbers. Medians of several runs. Usage (after scripts/setup.sh):
//   node bench/page_bench.mjs
import { chromium } from 'playwright-core';

import { CHROMIUM, CHROMIUM_ARGS, startServer } from '../tests/browser/helpers.mjs';

const RUNS = 9;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const server = await startServer();
const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
const firstEstimate = [];
const keystroke = [];
try {
  for (let i = 0; i < RUNS; i++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(server.url);
    await page.getByTestId('peak-allocated').waitFor();
    // performance.now() counts from the start of navigation.
    firstEstimate.push(await page.evaluate(() => performance.now()));
    // One keystroke: the micro-batch size changes; wait until the activations show the new value.
    keystroke.push(await page.evaluate(async () => {
      const input = document.querySelector('#field-training-micro_batch_size');
      const peak = () => document.querySelector('[data-testid="breakdown-activations"]').dataset.bytes;
      const before = peak();
      const t0 = performance.now();
      input.value = String(Number(input.value) + 1);
      input.dispatchEvent(new Event('input', { bubbles: true }));
      while (peak() === before) await new Promise((r) => requestAnimationFrame(r));
      return performance.now() - t0;
    }));
    await context.close();
  }
} finally {
  await browser.close();
  await server.close();
}
console.log(`first estimate on screen after navigation: median ${median(firstEstimate).toFixed(0)} ms (${RUNS} loads)`);
console.log(`keystroke to updated numbers (incl. frame):  median ${median(keystroke).toFixed(1)} ms`);
