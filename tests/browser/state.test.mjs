// The page's state (web/src/state.js) in node, over the wasm core through the same engine the
// worker runs: what a keystroke re-computes and when the details follow the numbers.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';

import { computed, effect } from '@preact/signals';

import { createAppState } from '../../web/src/state.js';
import { ROOT, WASM_DIR, loadNodeCore } from './helpers.mjs';

const hasCore = existsSync(join(WASM_DIR, 'memfit.mjs'));

// The worker's protocol, answered at once by the engine (core.js startCore has the same shape).
function directCore(engine) {
  return {
    latest: (_channel, fn, args = []) => Promise.resolve(engine[fn](...args)),
    call: (fn, ...args) => Promise.resolve(engine[fn](...args)),
  };
}

// afterPaint as the page passes it, with the frames run by hand: `paint()` runs what waits.
function manualFrames() {
  let waiting = [];
  const afterPaint = (fn) => {
    const entry = { fn, cancelled: false };
    waiting.push(entry);
    return () => {
      entry.cancelled = true;
    };
  };
  const paint = () => {
    const now = waiting;
    waiting = [];
    for (const entry of now) if (!entry.cancelled) entry.fn();
  };
  return { afterPaint, paint, pending: () => waiting.filter((e) => !e.cancelled).length };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('the page state', { skip: hasCore ? false : `no wasm module in ${WASM_DIR}` }, () => {
  let engine;
  let data;
  before(async () => {
    engine = await loadNodeCore();
    data = engine.staticData();
  });

  test('a new answer reaches the headline at once and the details after the next paint; a burst draws them once', async () => {
    const frames = manualFrames();
    const state = createAppState(directCore(engine), data, { afterPaint: frames.afterPaint, settleMs: 0 });
    await settle();
    // The first answer is drawn whole.
    assert.ok(state.shown.value, 'no first answer');
    assert.equal(state.settled.value, state.shown.value);
    const first = state.shown.value;

    state.setField('training.micro_batch_size', '2');
    await settle();
    assert.notEqual(state.shown.value, first, 'the new answer is not shown');
    assert.equal(state.shown.value.result.config.training.micro_batch_size, 2);
    assert.equal(state.settled.value, first, 'the details must wait for the next paint');
    frames.paint();
    assert.equal(state.settled.value, state.shown.value);

    // Two answers before a frame: the first wait is cancelled, the details draw the last one.
    state.setField('training.micro_batch_size', '3');
    await settle();
    state.setField('training.micro_batch_size', '4');
    await settle();
    assert.equal(frames.pending(), 1);
    frames.paint();
    assert.equal(state.settled.value.result.config.training.micro_batch_size, 4);
    assert.equal(state.settled.value, state.shown.value);
    state.dispose();
  });

  test('a Hub client that cannot load ends in a message naming the way out, not in "loading" for ever', async () => {
    const state = createAppState(directCore(engine), data, { settleMs: 0, loadHub: () => Promise.reject(new Error('chunk gone')) });
    await settle();
    const answer = await state.fetchFromHub('meta-llama/Llama-3.1-8B');
    assert.equal(answer.ok, false);
    assert.equal(state.hub.value.status, 'error');
    assert.match(state.hub.value.message, /reload the page, or paste the config\.json/);
    // The client itself, when it loads, is the one the page uses (no network: an injected fetch).
    const loaded = createAppState(directCore(engine), data, {
      settleMs: 0, fetchImpl: async () => ({ status: 404, ok: false, text: async () => '' }),
    });
    await settle();
    const missing = await loaded.fetchFromHub('nobody/nothing');
    assert.equal(missing.ok, false);
    assert.match(loaded.hub.value.message, /No config\.json found for nobody\/nothing/);
    // A file's address on the Hub (what people copy) is read as its model's id.
    let asked = '';
    const byUrl = createAppState(directCore(engine), data, {
      settleMs: 0, fetchImpl: async (url) => { asked = url; return { status: 404, ok: false, text: async () => '' }; },
    });
    await settle();
    await byUrl.fetchFromHub('https://huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json');
    assert.equal(asked, 'https://huggingface.co/Qwen/Qwen2.5-7B/resolve/main/config.json');
    byUrl.dispose();
    state.dispose();
    loaded.dispose();
  });

  test('without afterPaint (node, the prerender) the details follow at once', async () => {
    const state = createAppState(directCore(engine), data, { settleMs: 0 });
    await settle();
    state.setField('training.seq_len', '512');
    await settle();
    assert.equal(state.settled.value, state.shown.value);
    assert.equal(state.settled.value.result.config.training.seq_len, 512);
    state.dispose();
  });

  test('Reset can be undone, back to exactly what was typed', async () => {
    const state = createAppState(directCore(engine), data, { settleMs: 0 });
    await settle();
    state.resetAll();
    assert.equal(state.applied.value, null, 'nothing to undo when nothing was typed');
    state.selectPreset('mistral-7b-v0.3');
    state.setField('training.seq_len', '1234');
    const typed = state.edits.value;
    state.resetAll();
    assert.deepEqual(state.edits.value, {});
    assert.equal(state.presetId.value, data.defaults.model.preset);
    assert.equal(state.canUndo.value, true);
    state.undoSuggestion();
    assert.equal(state.presetId.value, 'mistral-7b-v0.3');
    assert.equal(state.edits.value, typed);
    assert.equal(state.canUndo.value, false);
    state.dispose();
  });

  test('what reads one field runs again when that field changes, not at a keystroke in another', async () => {
    const state = createAppState(directCore(engine), data, { settleMs: 0 });
    await settle();
    let runs = 0;
    const seqLen = computed(() => {
      runs += 1;
      return state.fieldValue('training.seq_len');
    });
    const stop = effect(() => seqLen.value);
    const afterFirst = runs;
    state.setField('training.micro_batch_size', '5');
    state.setField('training.grad_accum_steps', '3');
    assert.equal(runs, afterFirst, 'a keystroke in another field re-ran what reads training.seq_len');
    state.setField('training.seq_len', '1024');
    assert.equal(runs, afterFirst + 1);
    assert.equal(seqLen.value, '1024');
    assert.equal(state.isEdited('training.seq_len'), true);
    assert.equal(state.isEdited('training.dropout'), false);
    stop();
    state.dispose();
  });
  test('an imported config.json runs as its class (from its model_type) under every framework that runs it, unless a knob is set', async () => {
    const state = createAppState(directCore(engine), data, { settleMs: 0 });
    await settle();
    const text = readFileSync(join(ROOT, 'tests/fixtures/hf/google__gemma-2-9b.json'), 'utf8');
    const answer = await state.importConfig(text);
    assert.equal(answer.ok, true);
    await settle();
    // The page sends the model alone; the core reads Gemma 2's class from model_type: eager
    // attention (no SDPA path for soft-capping), fp32 norms.
    assert.equal(answer.training, undefined);
    assert.equal(state.config.value.model.model_type, 'gemma2');
    assert.equal(state.config.value.training, undefined);
    const impl = () => state.shown.value.result.implementation;
    assert.equal(impl().attention, 'eager');
    assert.equal(impl().norm_kernel, 'eager_fp32');
    // The same numbers as the preset of the same model.
    const preset = engine.estimate({ model: { preset: 'gemma-2-9b' } });
    assert.equal(state.shown.value.result.peak_allocated_bytes, preset.peak_allocated_bytes);
    // A knob the user sets wins; the others stay the class's.
    state.setField('training.attention', 'flash');
    await settle();
    assert.equal(impl().attention, 'flash');
    assert.equal(impl().norm_kernel, 'eager_fp32');
    // DeepSpeed runs the same class; torchtune runs its own code.
    state.setField('training.framework', 'deepspeed');
    await settle();
    assert.equal(impl().norm_kernel, 'eager_fp32');
    state.setField('training.framework', 'torchtune');
    await settle();
    assert.notEqual(impl().norm_kernel, 'eager_fp32');
    state.dispose();
  });
});
