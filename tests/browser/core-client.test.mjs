// web/src/core.js, the page's only link to the core's Web Worker: request ids, answers in any
// order, stale answers dropped, failures said. A fake worker stands in for the real one (the
// browser tests run the real one); the engine the real worker runs is checked against the wasm
// module directly.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { STALE, startCore } from '../../web/src/core.js';
import { loadNodeCore, missingPrerequisites } from './helpers.mjs';

// A worker that holds every request until the test answers it.
function fakeWorker() {
  const w = {
    sent: [],
    onmessage: null,
    onerror: null,
    postMessage(m) { w.sent.push(m); },
    answer(id, value) { w.onmessage({ data: { id, value } }); },
    terminate() { w.terminated = true; },
    ready(data = {}) { w.onmessage({ data: { type: 'ready', data } }); },
  };
  return w;
}

describe('core.js', () => {
  test('init first, then requests with increasing ids', async () => {
    const w = fakeWorker();
    const core = startCore({ createWorker: () => w, init: { wasmUrl: 'x.wasm' } });
    assert.deepEqual(w.sent[0], { type: 'init', wasmUrl: 'x.wasm' });
    w.ready({ presets: [] });
    assert.deepEqual(await core.ready, { presets: [] });
    const a = core.call('estimate', { model: {} });
    const b = core.call('presets');
    assert.equal(w.sent[1].id + 1, w.sent[2].id);
    w.answer(w.sent[2].id, 'B');
    w.answer(w.sent[1].id, 'A');
    assert.deepEqual(await Promise.all([a, b]), ['A', 'B']);
  });

  test('an answer superseded by a newer request on its channel is STALE, never its value', async () => {
    const w = fakeWorker();
    const core = startCore({ createWorker: () => w });
    w.ready();
    const first = core.latest('view', 'view', [{ n: 1 }]);
    const second = core.latest('view', 'view', [{ n: 12 }]);
    const other = core.latest('sweep', 'sweep', [{ n: 1 }]);
    const [, m1, m2, m3] = w.sent;
    // The older answer arrives after the newer request was sent: dropped.
    w.answer(m1.id, 'for 1');
    w.answer(m2.id, 'for 12');
    w.answer(m3.id, 'sweep');
    assert.equal(await first, STALE);
    assert.equal(await second, 'for 12');
    assert.equal(await other, 'sweep');  // another channel is not affected
    // The worker may skip a superseded request altogether.
    const third = core.latest('view', 'view', [{ n: 3 }]);
    w.onmessage({ data: { id: w.sent.at(-1).id, superseded: true } });
    assert.equal(await third, STALE);
  });

  test('a request the core works on past the time limit while others wait: given up, the worker replaced', async () => {
    const workers = [];
    const core = startCore({ createWorker: () => { workers.push(fakeWorker()); return workers.at(-1); }, timeLimitMs: 60 });
    workers[0].ready();
    const stuck = core.latest('import', 'importHfConfig', ['{"model_type": "qwen2_moe", …}']);
    const next = core.latest('view', 'view', [{ n: 1 }]);
    const [, a, b] = workers[0].sent;
    workers[0].onmessage({ data: { running: a.id } });
    const sleep = new Promise((r) => setTimeout(r, 300));  // the watchdog's timer does not hold node open
    await assert.rejects(stuck, /was stopped/);
    await sleep;
    assert.equal(workers.length, 2, 'a new worker');
    assert.equal(workers[1].sent[0].type, 'init');
    assert.deepEqual(workers[1].sent[1], b, 'the waiting request goes to the new worker');
    workers[1].answer(b.id, 'fresh');
    assert.equal(await next, 'fresh');
    core.close();
  });

  test('a worker that fails says why, to every waiting request', async () => {
    const w = fakeWorker();
    const core = startCore({ createWorker: () => w });
    const waiting = core.call('estimate', {});
    w.onmessage({ data: { type: 'failed', message: 'WebAssembly.instantiate(): expected magic word' } });
    await assert.rejects(core.ready, /expected magic word/);
    await assert.rejects(waiting, /expected magic word/);
    await assert.rejects(core.call('estimate', {}), /expected magic word/);
    const none = startCore({ createWorker: () => { throw new Error('Worker is not defined'); } });
    await assert.rejects(none.ready, /Web Worker could not start \(Worker is not defined\)/);
  });

  test('an init still on its way (the wasm compiling): what is asked meanwhile goes first, init follows', async () => {
    const w = fakeWorker();
    let give;
    const core = startCore({ createWorker: () => w, init: new Promise((resolve) => { give = resolve; }) });
    const early = core.call('estimate', { model: {} });
    assert.equal(w.sent.length, 1);
    assert.equal(w.sent[0].fn, 'estimate');
    give({ wasmUrl: 'x.wasm', wasmModule: 'compiled' });
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.deepEqual(w.sent[1], { type: 'init', wasmUrl: 'x.wasm', wasmModule: 'compiled' });
    w.ready();
    w.answer(w.sent[0].id, 'A');
    assert.equal(await early, 'A');
    // An init that fails is said, as a worker's failure is.
    const broken = startCore({ createWorker: () => fakeWorker(), init: Promise.reject(new Error('no wasm')) });
    await assert.rejects(broken.ready, /core could not start \(no wasm\)/);
  });
});

const missing = missingPrerequisites();
describe('engine.js (what the worker runs)', { skip: missing || false }, () => {
  test('a sweep is the core\'s estimates, and the largest value that fits is the boundary', async () => {
    const core = await loadNodeCore();
    const config = { model: { preset: 'llama-3-8b' }, training: { finetune: { method: 'lora', base_bits: 4 } }, hardware: { gpu: 'a100-80gb' } };
    const s = core.sweep(config, 'training.micro_batch_size');
    assert.equal(s.ok, true);
    for (const p of s.points) {
      const r = core.estimate({ ...config, training: { ...config.training, micro_batch_size: p.value } });
      assert.equal(p.device_total_bytes, r.device_total_bytes);
      assert.equal(p.peak_allocated_bytes, r.peak_allocated_bytes);
      assert.equal(p.verdict, r.fits.verdict);
    }
    assert.ok(s.largest_fit >= 1);
    assert.ok(s.points.at(-1).device_total_bytes > 2 * s.memory_bytes);  // drawn past the card, then stopped
    assert.ok(s.points.at(-2).device_total_bytes <= 2 * s.memory_bytes || s.points.length === 5);
    const at = (b) => core.estimate({ ...config, training: { ...config.training, micro_batch_size: b } }).fits.verdict;
    assert.equal(at(s.largest_fit), 'fits');
    assert.notEqual(at(s.largest_fit + 1), 'fits');
    // A learned-position model stops at its position table, with the core's reason.
    const g = core.sweep({ model: { preset: 'gpt2' } }, 'training.seq_len');
    assert.equal(g.points.at(-1).value, 1024);
    assert.equal(g.stop.value, 2048);
    assert.match(g.stop.message, /1,?024/);
  });

  test('loadModule: a module the page compiled runs the same core; one that cannot instantiate is refused, not awaited forever', async () => {
    const { readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { pathToFileURL } = await import('node:url');
    const { WASM_DIR } = await import('./helpers.mjs');
    const { createEngine, loadModule } = await import('../../web/src/engine.js');
    const { default: createMemfit } = await import(pathToFileURL(join(WASM_DIR, 'memfit.mjs')).href);
    const wasmModule = await WebAssembly.compile(readFileSync(join(WASM_DIR, 'memfit.wasm')));
    const compiled = createEngine(await loadModule(createMemfit, { wasmModule }));
    const config = { model: { preset: 'gpt2' }, training: { micro_batch_size: 3 } };
    assert.deepEqual(compiled.estimate(config), (await loadNodeCore()).estimate(config));
    // A module with an import the loader does not provide: instantiation fails and says so.
    const foreign = await WebAssembly.compile(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 2, 10, 1, 1, 120, 4, 110, 111, 110, 101, 0, 0]));
    await assert.rejects(loadModule(createMemfit, { wasmModule: foreign }), /import|function|none/i);
  });

  test('view: the estimate, the model\'s resolved defaults and the scaling table in one answer', async () => {
    const core = await loadNodeCore();
    const v = core.view({ model: { preset: 'gpt2' } });
    assert.deepEqual(v.result, core.estimate({ model: { preset: 'gpt2' } }));
    assert.equal(v.base.training.seq_len, 1024);
    assert.deepEqual(v.scaling, core.scalingTable({}));
  });
});
