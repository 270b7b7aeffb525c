// The Web Worker that runs the memfit core, so the page's main thread never waits on it.
// Protocol (core.js is the only other end):
//   page → worker  { type: 'init', wasmUrl | wasmBinary | wasmModule (compiled by the page), bare? }
//                  once; answered { type: 'ready', data }
//                  (data: the core's static data; null when `bare`: the planner's worker)
//                  { id, fn, args, channel?, priority? }       one call of engine.js
//   worker → page  { running: id } as it starts one, then { id, value } | { id, error } |
//                  { id, superseded: true }
// Requests are queued and taken one per task, highest priority (lowest number) first; a request
// with a channel is answered `superseded` without running when a newer one on the same channel is
// already waiting (a burst of keystrokes costs one estimate, not one each).
// Built twice (web/build.mjs): worker.js over memfit.mjs, and planner-worker.js over
// memfit-planner.mjs (the same functions plus plan and export_plan), started when the planner opens.
import createMemfit from 'memfit-wasm-module';

import { createEngine, loadModule } from './engine.js';

let engine = null;
const queue = [];
let scheduled = false;
const post = (message) => self.postMessage(message);

// A zero-delay task (setTimeout(0) is clamped after a few nested calls).
const tick = new MessageChannel();
tick.port1.onmessage = step;
function schedule() {
  if (scheduled || !engine || queue.length === 0) return;
  scheduled = true;
  tick.port2.postMessage(0);
}

function step() {
  scheduled = false;
  let best = 0;
  for (let i = 1; i < queue.length; i++) if ((queue[i].priority ?? 0) < (queue[best].priority ?? 0)) best = i;
  const [message] = queue.splice(best, 1);
  if (message.channel && queue.some((m) => m.channel === message.channel)) {
    post({ id: message.id, superseded: true });
  } else {
    try {
      post({ running: message.id });
      const fn = engine[message.fn];
      if (typeof fn !== 'function') throw new Error(`no core function "${message.fn}"`);
      post({ id: message.id, value: fn(...(message.args ?? [])) });
    } catch (error) {
      post({ id: message.id, error: String(error?.message ?? error) });
    }
  }
  schedule();
}

self.onmessage = async (event) => {
  const message = event.data;
  if (message?.type !== 'init') {
    queue.push(message);
    schedule();
    return;
  }
  try {
    engine = createEngine(await loadModule(createMemfit, message));
    post({ type: 'ready', data: message.bare ? null : engine.staticData() });
    schedule();
  } catch (error) {
    post({ type: 'failed', message: String(error?.message ?? error) });
  }
};
