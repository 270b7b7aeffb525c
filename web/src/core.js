// The only module of the page that talks to the memfit core. The core (C++ compiled to
// WebAssembly) runs in a Web Worker (worker.js); this module sends it requests with ids and hands
// back its answers as promises, so typing never waits on the core.
//
// `latest(channel, …)`: for answers only the newest request may show (the estimate for what the
// form holds now). An answer to a request superseded by a newer one on the same channel resolves
// to STALE and must be dropped by the caller: it is never shown.

export const STALE = Symbol('stale');

// createWorker: () => Worker (a test may pass a fake). init: { wasmUrl } or { wasmBinary }.
// Returns { ready: Promise<static data>, call(fn, ...args), latest(channel, fn, args, options), close }.
export function startCore({ createWorker, init = {} }) {
  let nextId = 1;
  const pending = new Map();          // id → { resolve, reject, channel }
  const newest = new Map();           // channel → id of its newest request
  let readyResolve;
  let readyReject;
  const ready = new Promise((resolve, reject) => {
    readyResolve = resolve;
    readyReject = reject;
  });
  let failure = null;

  const fail = (message) => {
    if (failure) return;
    failure = message;
    readyReject(new Error(message));
    for (const p of pending.values()) p.reject(new Error(message));
    pending.clear();
  };

  let worker;
  try {
    worker = createWorker();
  } catch (error) {
    fail(`the Web Worker could not start (${error?.message ?? error})`);
    return { ready, call: () => Promise.reject(new Error(failure)), latest: () => Promise.reject(new Error(failure)), close() {} };
  }

  worker.onmessage = (event) => {
    const m = event.data;
    if (m?.type === 'ready') return readyResolve(m.data);
    if (m?.type === 'failed') return fail(m.message);
    const p = pending.get(m?.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.error !== undefined) return p.reject(new Error(m.error));
    const stale = m.superseded || (p.channel !== undefined && newest.get(p.channel) !== m.id);
    p.resolve(stale ? STALE : m.value);
  };
  worker.onerror = (event) => {
    event?.preventDefault?.();
    fail(event?.message || 'the core\'s Web Worker stopped with an error');
  };
  worker.postMessage({ type: 'init', ...init });

  function send(fn, args, channel, priority) {
    if (failure) return Promise.reject(new Error(failure));
    const id = nextId++;
    if (channel !== undefined) newest.set(channel, id);
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject, channel });
      worker.postMessage({ id, fn, args, channel, priority });
    });
  }

  return {
    ready,
    // Every answer, in order.
    call: (fn, ...args) => send(fn, args, undefined, 0),
    // Only the newest request on `channel` resolves to its value; older ones resolve to STALE.
    latest: (channel, fn, args = [], { priority = 0 } = {}) => send(fn, args, channel, priority),
    close: () => worker.terminate?.(),
  };
}

// The page's worker: worker.js beside the page's script, the wasm beside it. In the single-file
// build (memfit.html) both are in the page (#memfit-worker, #memfit-wasm): the worker starts from a
// blob and gets the wasm's bytes.
export function startPageCore({ workerUrl = new URL('./worker.js', import.meta.url), wasmUrl } = {}) {
  const inlineWorker = globalThis.document?.getElementById('memfit-worker');
  const inlineWasm = globalThis.document?.getElementById('memfit-wasm');
  if (inlineWorker && inlineWasm) {
    const bytes = Uint8Array.from(atob(inlineWasm.textContent.trim()), (c) => c.charCodeAt(0));
    const blob = URL.createObjectURL(new Blob([inlineWorker.textContent], { type: 'text/javascript' }));
    return startCore({ createWorker: () => new Worker(blob, { name: 'memfit-core' }), init: { wasmBinary: bytes } });
  }
  const init = { wasmUrl: String(wasmUrl ?? new URL('./memfit.wasm', import.meta.url)) };
  return startCore({ createWorker: () => new Worker(workerUrl, { type: 'module', name: 'memfit-core' }), init });
}
