// Dotted paths into a configuration object ("training.seq_len"). Pure.

// [path, value] for every leaf of a configuration object, in its order. Arrays are leaves.
export function flatten(config, prefix = '') {
  const out = [];
  for (const [key, value] of Object.entries(config ?? {})) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) out.push(...flatten(value, path));
    else out.push([path, value]);
  }
  return out;
}

export function getPath(object, path) {
  let node = object;
  for (const key of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = node[key];
  }
  return node;
}

// Sets a dotted path in a nested object (creating objects on the way); returns the object.
export function setPath(object, path, value) {
  const keys = path.split('.');
  let node = object;
  for (const key of keys.slice(0, -1)) {
    if (node[key] === null || typeof node[key] !== 'object' || Array.isArray(node[key])) node[key] = {};
    node = node[key];
  }
  node[keys[keys.length - 1]] = value;
  return object;
}
