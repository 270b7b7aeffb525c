// The only module that touches the wasm core. Every function takes and returns plain objects;
// the JSON text that crosses the embind boundary is written and parsed here. The core never
// throws across the boundary: problems come back as data in `errors`.

let loading = null;

// Loads memfit.mjs (and through it memfit.wasm) from beside the page's script, once.
// `options.moduleUrl` / `options.wasmBinary` let a test load it elsewhere.
export function loadCore(options = {}) {
  if (!loading) {
    const moduleUrl = options.moduleUrl ?? new URL('./memfit.mjs', import.meta.url).href;
    loading = import(/* @vite-ignore */ moduleUrl)
      .then(({ default: createMemfit }) =>
        createMemfit(options.wasmBinary ? { wasmBinary: options.wasmBinary } : {}))
      .then(wrapCore)
      .catch((error) => {
        loading = null;
        throw error;
      });
  }
  return loading;
}

function call(fn, ...args) {
  return JSON.parse(fn(...args));
}

// The wasm module → the page's core API.
export function wrapCore(module) {
  const text = (config) => JSON.stringify(config ?? {});
  return {
    estimate: (config) => call(module.estimate, text(config)),
    validate: (config) => call(module.validate, text(config)),
    scalingTable: (config) => call(module.scaling_table, text(config)),
    suggestions: (config) => call(module.suggestions, text(config)),
    importHfConfig: (configText) => call(module.import_hf_config, String(configText)),
    defaultConfig: () => call(module.default_config),
    schema: () => call(module.config_schema),
    presets: () => call(module.presets),
    gpus: () => call(module.gpus),
  };
}
