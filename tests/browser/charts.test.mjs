// The charts plot the core's numbers: each SVG mark carries the bytes it was drawn from, compared
// here with the core's JSON (the same wasm in node). Each chart has a summary for screen readers
// and a table; which charts show as tables, the swept field and the unit system travel in the share
// link. Print gives a one-page summary. Screenshots go to test-results/.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { placeLabels, textBox } from '../../web/src/components/charts/labels.js';
import { formatBytes } from '../../web/src/format.js';
import { RESULTS_DIR, launchBrowser, loadNodeCore, missingPrerequisites, startServer, waitForAnswer } from './helpers.mjs';

const missing = missingPrerequisites();

describe('chart labels (pure)', () => {
  const bounds = { left: 0, right: 400, top: 0, bottom: 200 };
  const boxesOf = (labels, at) => labels.map((l) => textBox(l.text, at[l.id].x, at[l.id].y, at[l.id].anchor, 11.5, l.bold));
  const clear = (a, b) => a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top;

  test('a label takes its first place when it is clear', () => {
    const at = placeLabels([{ id: 'a', text: 'budget 85 %', places: [{ x: 10, y: 50, anchor: 'start' }, { x: 10, y: 80, anchor: 'start' }] }], { bounds });
    assert.deepEqual(at.a, { x: 10, y: 50, anchor: 'start' });
  });

  test('two labels whose first places cover each other: one moves, neither covers the other', () => {
    const labels = [
      { id: 'peak', text: 'peak 23.03 GiB', bold: true, places: [{ x: 120, y: 100, anchor: 'middle' }, { x: 120, y: 130, anchor: 'middle' }] },
      { id: 'device', text: 'nvidia-smi at the peak: 27.07 GiB', places: [{ x: 4, y: 98, anchor: 'start' }, { x: 4, y: 118, anchor: 'start' }] },
    ];
    const at = placeLabels(labels, { bounds });
    const [a, b] = boxesOf(labels, at);
    assert.ok(clear(a, b), JSON.stringify(at));
    assert.deepEqual(at.peak, labels[0].places[1], 'the peak moves, the rule keeps its label first');
  });

  test('a place the plotted line crosses is left for one it does not; when none is clear, crossing beats covering', () => {
    const line = [[0, 95], [400, 95]];
    const one = [{ id: 'a', text: 'card 80 GiB', places: [{ x: 300, y: 100, anchor: 'end' }, { x: 300, y: 80, anchor: 'end' }] }];
    assert.equal(placeLabels(one, { bounds, line }).a.y, 80);
    const two = [
      { id: 'a', text: 'card 80 GiB', places: [{ x: 300, y: 80, anchor: 'end' }] },
      { id: 'b', text: 'nvidia-smi 90 GiB', places: [{ x: 300, y: 82, anchor: 'end' }, { x: 300, y: 100, anchor: 'end' }] },
    ];
    assert.equal(placeLabels(two, { bounds, line }).b.y, 100);
  });

  test('a plotted marker is worse to hide than the line: a label over one takes a place that only crosses the line', () => {
    const line = [[0, 95], [400, 95]];
    const points = [[40, 75, 4]];
    const labels = [{ id: 'a', text: 'nvidia-smi 9.6 GiB', places: [{ x: 4, y: 80, anchor: 'start' }, { x: 200, y: 100, anchor: 'middle' }] }];
    assert.equal(placeLabels(labels, { bounds, line }).a.y, 80, 'without the marker the first place is clear');
    assert.deepEqual(placeLabels(labels, { bounds, line, points }).a, { x: 200, y: 100, anchor: 'middle' });
    // Covering several markers still beats leaving the plot.
    const many = [[20, 75, 4], [60, 75, 4], [100, 75, 4], [40, 75, 4]];
    const inOrOut = [{ id: 'a', text: 'nvidia-smi 9.6 GiB', places: [{ x: 4, y: 80, anchor: 'start' }, { x: 4, y: 5, anchor: 'start' }] }];
    assert.equal(placeLabels(inOrOut, { bounds, points: many }).a.y, 80);
  });
});
// QLoRA with full checkpointing on an A100 40GB: micro-batches 1 and 2 fit within the measured band, larger ones do not.
const CONFIG = { model: { preset: 'llama-3-8b' }, training: { checkpointing: 'full', finetune: { method: 'lora', base_bits: 4 } }, hardware: { gpu: 'a100-40gb' } };
const LINK = '?v=2&preset=llama-3-8b&checkpointing=full&method=lora&base_bits=4&gpu=a100-40gb';

describe('charts', { skip: missing || false, concurrency: false }, () => {
  let server;
  let browser;
  let core;
  before(async () => {
    [server, browser, core] = await Promise.all([startServer(), launchBrowser(), loadNodeCore()]);
    mkdirSync(RESULTS_DIR, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  async function open(search, viewport = { width: 1280, height: 1000 }) {
    const p = await browser.newPage({ viewport });
    await p.goto(`${server.url}${search}`);
    await p.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
    return p;
  }
  const bytesOf = (locator) => locator.evaluateAll((els) => els.map((e) => Number(e.dataset.bytes)));
  // The timeline's peak, card, nvidia-smi and budget labels as drawn: no two cover each other.
  async function assertLabelsApart(timeline) {
    const boxes = await timeline.locator('.peak-label, g.limit text, g.device text, g.budget text').evaluateAll((els) =>
      els.map((e) => { const b = e.getBBox(); return { text: e.textContent, left: b.x, right: b.x + b.width, top: b.y, bottom: b.y + b.height }; }));
    assert.equal(boxes.length, 4);
    for (let i = 0; i < boxes.length; i += 1) {
      for (let j = i + 1; j < boxes.length; j += 1) {
        const [a, b] = [boxes[i], boxes[j]];
        const apart = a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top;
        assert.ok(apart, `"${a.text}" covers "${b.text}"`);
      }
    }
  }

  test('breakdown bar and step timeline: the core\'s bytes, the card\'s limit and the peak', async () => {
    const p = await open(LINK);
    const r = core.estimate(CONFIG);
    await waitForAnswer(p, r);
    const segments = await bytesOf(p.getByTestId('breakdown-chart').locator('rect'));
    const expected = Object.entries(r.breakdown).filter(([k, v]) => k !== 'offloaded' && v > 0).map(([, v]) => v);
    assert.deepEqual([...segments].sort((a, b) => a - b), [...expected].sort((a, b) => a - b));

    const timeline = p.getByTestId('timeline-chart');
    // The core's phases, then what stays allocated between steps (result.between_steps_bytes).
    assert.ok(r.between_steps_bytes > 0);
    assert.deepEqual(await bytesOf(timeline.locator('g.point')), [...r.phases.map((ph) => ph.bytes), r.between_steps_bytes]);
    assert.equal(Number(await timeline.getByTestId('timeline-limit').getAttribute('data-bytes')), r.fits.memory_bytes);
    assert.equal(Number(await timeline.getByTestId('timeline-budget').getAttribute('data-bytes')), r.fits.budget_bytes);
    assert.equal(Number(await timeline.getByTestId('timeline-device').getAttribute('data-bytes')), r.fits.need_bytes);
    const peak = timeline.locator('g.point.peak');
    assert.equal(await peak.count(), 1);
    await assertLabelsApart(timeline);
    assert.equal(Number(await peak.getAttribute('data-bytes')), r.peak_allocated_bytes);
    assert.match(await peak.textContent(), new RegExp(`peak ${formatBytes(r.peak_allocated_bytes)}`));
    // The charts are described by their summary sentence.
    for (const id of ['breakdown-chart', 'timeline-chart']) {
      const describedBy = await p.getByTestId(id).getAttribute('aria-describedby');
      assert.ok((await p.locator(`#${describedBy}`).textContent()).length > 30, id);
    }
    assert.match(await p.getByTestId('timeline-summary').textContent(), new RegExp(formatBytes(r.peak_allocated_bytes)));
    await p.close();
  });

  test('the timeline\'s labels stay apart when the peak sits by nvidia-smi\'s line, on a phone and a desktop', async () => {
    // Llama 3.2 1B: nvidia-smi's line runs just over the peak; Llama 3 8B: the peak is above the card.
    for (const [link, config] of [['?v=2&preset=llama-3.2-1b', { model: { preset: 'llama-3.2-1b' } }], ['?v=2', {}]]) {
      for (const width of [390, 1280]) {
        const p = await open(link, { width, height: 900 });
        await waitForAnswer(p, core.estimate(config));
        await assertLabelsApart(p.getByTestId('timeline-chart'));
        await p.close();
      }
    }
  });

  test('memory against micro-batch and sequence length: the core\'s sweep, the largest value that fits', async () => {
    const p = await open(LINK);
    for (const [short, field] of [['micro_batch_size', 'training.micro_batch_size'], ['seq_len', 'training.seq_len']]) {
      await p.getByTestId(`sweep-${short}`).click();
      const s = core.sweep(CONFIG, field);
      const chart = p.getByTestId('sweep-chart');
      await p.waitForFunction((n) => document.querySelectorAll('[data-testid="sweep-chart"] g.point').length === n &&
        document.querySelector('[data-testid="sweep-chart"]')?.getAttribute('aria-label').includes(n ? '' : 'x'), s.points.length);
      await p.waitForFunction(([f, first]) => document.querySelector('[data-testid="sweep-chart"] g.point')?.dataset.value === first &&
        document.querySelector('[data-testid="sweep-chart"]').getAttribute('aria-label').toLowerCase().includes(f), [short === 'seq_len' ? 'sequence' : 'micro', String(s.points[0].value)]);
      assert.deepEqual(await chart.locator('g.point').evaluateAll((gs) => gs.map((g) => [Number(g.dataset.value), Number(g.dataset.bytes)])),
        s.points.map((pt) => [pt.value, pt.device_total_bytes]));
      assert.equal(Number(await chart.getByTestId('sweep-largest').getAttribute('data-value')), s.largest_fit);
      const at = (v) => core.estimate({ ...CONFIG, training: { ...CONFIG.training, [short]: v } }).fits.verdict;
      assert.equal(at(s.largest_fit), 'fits');
      assert.notEqual(at(s.largest_fit + 1), 'fits');
      assert.match(await p.getByTestId('sweep-summary').textContent(), new RegExp(`is ${s.largest_fit.toLocaleString('en-US')}\\.`));
      await p.screenshot({ path: join(RESULTS_DIR, `chart-sweep-${short}.png`) });
    }
    await p.close();
  });

  test('fit bars across the GPU table: one per card, the core\'s verdicts', async () => {
    const p = await open(LINK);
    const r = core.estimate(CONFIG);
    await waitForAnswer(p, r);
    const rows = p.getByTestId('gpu-table').locator('tbody tr');
    assert.equal(await rows.count(), r.gpus.length);
    const bars = await rows.evaluateAll((trs) => trs.map((tr) => [tr.dataset.gpu, tr.querySelector('.fitbar-fill')?.className.split('verdict-')[1]]));
    assert.deepEqual(bars, r.gpus.map((g) => [g.gpu, g.verdict]));
    // Cards without the recipe's tensor cores (runs: false) are listed but never counted as fitting.
    const fitting = r.gpus.filter((g) => g.runs && g.verdict === 'fits').length;
    assert.match(await p.getByTestId('gpus-summary').textContent(), new RegExp(`fits on ${fitting} of ${r.gpus.length} cards`));
    await p.close();
  });

  test('chart or table, the swept field and GiB/GB are in the share link and come back from it', async () => {
    const p = await open(LINK);
    await p.getByTestId('breakdown-as-table').click();
    await p.getByTestId('gpus-as-table').click();
    await p.getByTestId('sweep-seq_len').click();
    await p.getByRole('radio', { name: 'GB' }).click();
    const href = await p.getByTestId('copy-link').getAttribute('data-href');
    assert.match(href, /&units=GB&tables=breakdown,gpus&sweep=seq_len$/);
    assert.equal(await p.getByTestId('breakdown-chart').count(), 0);
    assert.equal(await p.locator('.fitbar').count(), 0);
    await p.close();

    const again = await open(new URL(href).search);
    assert.equal(await again.getByTestId('chart-breakdown').getAttribute('data-view'), 'table');
    assert.equal(await again.getByTestId('gpu-card').getAttribute('data-view'), 'table');
    assert.equal(await again.getByTestId('chart-timeline').getAttribute('data-view'), 'chart');
    assert.equal(await again.getByTestId('sweep-seq_len').getAttribute('aria-pressed'), 'true');
    const r = core.estimate(CONFIG);
    assert.equal((await again.getByTestId('peak-allocated').textContent()).trim(), formatBytes(r.peak_allocated_bytes, 'GB'));
    assert.equal(await again.getByRole('radio', { name: 'GB' }).getAttribute('aria-checked'), 'true');
    await again.close();
  });

  for (const [name, link, config] of [['fits', LINK, CONFIG],
    ['does-not-fit', '?v=2&preset=llama-3-8b&micro_batch_size=4&seq_len=4096&gpu=a100-80gb', { model: { preset: 'llama-3-8b' }, training: { micro_batch_size: 4, seq_len: 4096 }, hardware: { gpu: 'a100-80gb' } }]]) {
  test(`print: a one-page summary (the answer, the breakdown, the GPUs; no form): ${name}`, async () => {
    const p = await open(link);
    await waitForAnswer(p, core.estimate(config));
    await p.emulateMedia({ media: 'print' });
    assert.equal(await p.locator('.inputs').evaluate((e) => getComputedStyle(e).display), 'none');
    assert.notEqual(await p.getByTestId('peak-allocated').evaluate((e) => getComputedStyle(e).display), 'none');
    assert.ok(await p.getByTestId('breakdown').isVisible());
    await p.screenshot({ path: join(RESULTS_DIR, `print-${name}.png`), fullPage: true });
    const pdf = await p.pdf({ format: 'A4', printBackground: true });
    const pages = (pdf.toString('latin1').match(/\/Type\s*\/Page[^s]/g) ?? []).length;
    assert.equal(pages, 1, `the print is ${pages} pages`);
    await p.close();
  });
  }
});
