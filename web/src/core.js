// The only module of the page that talks to the memfit core. The core (C++ compiled to
// WebAssembly) runs in a Web Worker (worker.js); this module sends it requests with ids and hands
// back its answers as promises, so typing never waits on the core.
//
// `latest(channel, …)`: for answers only the newest request may show (the estimate for what the
// form holds now). An answer to a request superseded by a newer one on the same channel resolves
// to STALE and must be dropped by the caller: it is never shown.

export const STALE = Symbol('stale');

// A request the core works on for longer than this while newer ones wait (an input that makes it
// loop) is given up: the worker is replaced and the others are sent to the new one.
export const TIME_LIMIT_MS = 3000;

// createWorker: () => Worker (a test may pass a fake). init: { wasmUrl }, { wasmBinary } or
// { wasmModule }, or a promise of one (the worker starts loading its script meanwhile).
// Returns { ready: Promise<static data>, call(fn, ...args), latest(channel, fn, args, options), close }.
export function startCore({ createWorker, init = {}, timeLimitMs = TIME_LIMIT_MS }) {
  let nextId = 1;
  const pending = new Map();          // id → { resolve, reject, channel, message }
  const newest = new Map();           // channel → id of its newest request
  let running = null;                 // { id, since } the request the worker said it is running
  let watchdog = 0;
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
  const onmessage = (event) => {
    const m = event.data;
    if (m?.type === 'ready') return readyResolve(m.data);
    if (m?.type === 'failed') return fail(m.message);
    if (m?.running !== undefined) {
      running = { id: m.running, since: Date.now() };
      return undefined;
    }
    if (running?.id === m?.id) running = null;
    const p = pending.get(m?.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.error !== undefined) return p.reject(new Error(m.error));
    const stale = m.superseded || (p.channel !== undefined && newest.get(p.channel) !== m.id);
    p.resolve(stale ? STALE : m.value);
  };
  const onerror = (event) => {
    event?.preventDefault?.();
    fail(event?.message || 'the core\'s Web Worker stopped with an error');
  };
  const start = () => {
    worker = createWorker();
    worker.onmessage = onmessage;
    worker.onerror = onerror;
    if (typeof init?.then !== 'function') {
      worker.postMessage({ type: 'init', ...init });
      return;
    }
    // The worker keeps what it is sent before its init, and answers it once initialised.
    const own = worker;
    init.then((options) => {
      if (worker === own && !failure) worker.postMessage({ type: 'init', ...options });
    }, (error) => fail(`the core could not start (${error?.message ?? error})`));
  };
  try {
    start();
  } catch (error) {
    fail(`the Web Worker could not start (${error?.message ?? error})`);
    return { ready, call: () => Promise.reject(new Error(failure)), latest: () => Promise.reject(new Error(failure)), close() {} };
  }

  // The watchdog: a request running past the limit while others wait is given up, and the worker
  // replaced; the others go to the new one.
  const check = () => {
    watchdog = 0;
    if (failure || pending.size === 0) return;
    if (running && pending.has(running.id) && pending.size > 1 && Date.now() - running.since > timeLimitMs) {
      const stuck = pending.get(running.id);
      pending.delete(running.id);
      running = null;
      worker.terminate?.();
      start();
      for (const p of pending.values()) worker.postMessage(p.message);
      stuck.reject(new Error(`the core worked on this input for more than ${Math.round(timeLimitMs / 1000)} s and was stopped`));
    }
    if (pending.size > 0) arm();
  };
  const arm = () => {
    watchdog = setTimeout(check, Math.min(500, timeLimitMs));
    watchdog.unref?.();  // in node (tests), a waiting request does not keep the process alive
  };

  function send(fn, args, channel, priority) {
    if (failure) return Promise.reject(new Error(failure));
    const id = nextId++;
    if (channel !== undefined) newest.set(channel, id);
    return new Promise((resolve, reject) => {
      const message = { id, fn, args, channel, priority };
      pending.set(id, { resolve, reject, channel, message });
      worker.postMessage(message);
      if (!watchdog) arm();
    });
  }

  return {
    ready,
    // Every answer, in order.
    call: (fn, ...args) => send(fn, args, undefined, 0),
    // Only the newest request on `channel` resolves to its value; older ones resolve to STALE.
    latest: (channel, fn, args = [], { priority = 0 } = {}) => send(fn, args, channel, priority),
    close: () => {
      clearTimeout(watchdog);
      worker.terminate?.();
    },
  };
}

// The init of a worker whose wasm is at wasmUrl: the page fetches and compiles the wasm while the
// worker's script loads (two requests at once, not one after the other) and hands the worker the
// compiled module. Where the page cannot compile it (no compileStreaming, a server that does not
// send application/wasm), the worker fetches it itself.
export function wasmInit(wasmUrl, extra = {}) {
  // (typeof on the global itself: where WebAssembly is switched off it is not even declared.)
  // A server that does not send application/wasm makes streaming compilation refuse the response:
  // the same download (a copy of its body) is then compiled from its bytes, not fetched again. Bytes
  // that do not compile (an error page) leave it to the worker, which says what went wrong.
  const compiled = typeof WebAssembly === 'object' && typeof WebAssembly.compileStreaming === 'function' &&
    typeof fetch === 'function'
    ? fetch(wasmUrl).then((response) => {
      if (!response.ok) return null;
      const copy = response.clone();
      return WebAssembly.compileStreaming(response)
        .catch(() => copy.arrayBuffer().then((bytes) => WebAssembly.compile(bytes)));
    }).catch(() => null)
    : Promise.resolve(null);
  return compiled.then((wasmModule) => (wasmModule ? { ...extra, wasmUrl, wasmModule } : { ...extra, wasmUrl }));
}

// The page's worker: worker.js beside the page, the wasm beside it (found from the page's address,
// not this module's: the module may sit in a chunk). In the single-file build (memfit.html) both are
// in the page (#memfit-worker, #memfit-wasm): the worker starts from a blob and gets the wasm's
// bytes. `planner`: the planner's worker instead (planner-worker.js and memfit-planner.wasm, or
// #memfit-planner-worker and #memfit-planner-wasm), which sends no static data.
// staticDataFile: read the core's static data from this file beside the page (static-data.json,
// written by the build from the same core) and start the worker bare (withStaticData).
export function startPageCore({ planner = false, staticDataFile = null } = {}) {
  const name = planner ? 'memfit-planner' : 'memfit';
  const bare = planner || Boolean(staticDataFile);
  const inlineWorker = globalThis.document?.getElementById(`${name}-worker`);
  const inlineWasm = globalThis.document?.getElementById(`${name}-wasm`);
  if (inlineWorker && inlineWasm) {
    const bytes = Uint8Array.from(atob(inlineWasm.textContent.trim()), (c) => c.charCodeAt(0));
    const blob = URL.createObjectURL(new Blob([inlineWorker.textContent], { type: 'text/javascript' }));
    // (The single file has no static-data.json beside it: its worker builds the static data.)
    return startCore({ createWorker: () => new Worker(blob, { name }), init: { wasmBinary: bytes, bare: planner } });
  }
  const here = (file) => new URL(file, document.baseURI);
  const init = wasmInit(String(here(`./${name}.wasm`)), { bare });
  const workerUrl = here(planner ? './planner-worker.js' : './worker.js');
  const core = startCore({ createWorker: () => new Worker(workerUrl, { type: 'module', name: `${name}-core` }), init });
  return staticDataFile ? withStaticData(core, String(here(`./${staticDataFile}`))) : core;
}

// A core whose worker started bare, with its static data read from the build's file instead: the
// worker's first task is then the first estimate, not the schema, the presets and the GPU table
// (the first run of wasm code is its slowest). Where the file cannot be read, the worker is asked.
// A file that does not answer within STATIC_DATA_WAIT_MS, or does not hold the four parts, is
// given up for the worker's own answer.
export const STATIC_DATA_WAIT_MS = 3000;
const isStaticData = (d) => Boolean(d) && Array.isArray(d.schema) && Array.isArray(d.presets) &&
  Array.isArray(d.gpus) && typeof d.defaults === 'object' && d.defaults !== null && typeof d.defaults.model === 'object';
export function withStaticData(core, dataUrl, waitMs = STATIC_DATA_WAIT_MS) {
  const file = typeof fetch === 'function'
    ? Promise.race([
      fetch(dataUrl).then((r) => (r.ok ? r.json() : null)).then((d) => (isStaticData(d) ? d : null)).catch(() => null),
      new Promise((resolve) => setTimeout(() => resolve(null), waitMs)),
    ])
    : Promise.resolve(null);
  const ready = Promise.all([core.ready, file]).then(([, data]) => data ?? core.call('staticData'));
  return { ...core, ready };
}
