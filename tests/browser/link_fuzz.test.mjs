// Fuzzing the share-link decoder (web/src/url.js) and what the page does with a link: seeded
// random links — known parameter names with hostile values, unknown and prototype-polluting names,
// raw percent-encoded bytes, huge and repeated parameters — are decoded, turned into the
// configuration the page would send (state.js buildConfig), and answered by the wasm core.
// Properties: decoding never throws and keeps only known fields; nothing reaches
// Object.prototype; the core answers every link with data (ok, or errors naming fields), never an
// exception, and every number it returns is finite. Deterministic (a fixed seed), so a failure
// names the link that caused it.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';

import { buildConfig } from '../../web/src/state.js';
import { decode } from '../../web/src/url.js';
import { WASM_DIR, loadNodeCore } from './helpers.mjs';

const DECODE_RUNS = 50_000;
const CORE_RUNS = 3_000;

// xorshift32: a small seeded generator.
function generator(seed) {
  let s = seed >>> 0 || 1;
  const next = () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >> 17;
    s ^= s << 5; s >>>= 0;
    return s / 2 ** 32;
  };
  const int = (n) => Math.floor(next() * n);
  const pick = (list) => list[int(list.length)];
  return { next, int, pick };
}

const HOSTILE_VALUES = ['', '0', '-1', '1e3', '1e308', '1e400', '-0', 'NaN', 'Infinity', '0x10', '4.5', ' 12 ',
  '99999999999999999999', 'true', 'false', 'null', 'auto', 'q,k,v', ',,,', 'q,,zz', '\u0000', '\uffff', '\ud800',
  '<script>alert(1)</script>', '"quoted"', '{"a":1}', '[1,2]', '%', '%zz', 'é', '🙂'.repeat(50), 'x'.repeat(10_000)];
const HOSTILE_NAMES = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'v', 'V', '',
  'model', 'training', 'model.', '.seq_len', 'seq_len.', 'model.__proto__', 'training.finetune.__proto__.x'];

// encodeURIComponent throws on a lone surrogate; a real address bar carries its WTF-8 bytes instead,
// which is exactly what a hostile link would hold.
function encodeField(text) {
  try {
    return encodeURIComponent(text);
  } catch {
    return text.replace(/[\ud800-\udfff]/g, '%ED%A0%80').split('%ED%A0%80').map(encodeURIComponent).join('%ED%A0%80');
  }
}

function randomText(rng, length) {
  let out = '';
  for (let i = 0; i < length; i += 1) out += String.fromCharCode(rng.int(0x3000));
  return out;
}

function randomLink(rng, names, choicesOf) {
  const parts = [];
  const count = rng.int(12);
  for (let i = 0; i < count; i += 1) {
    const roll = rng.next();
    const name = roll < 0.7 ? rng.pick(names) : roll < 0.85 ? rng.pick(HOSTILE_NAMES) : randomText(rng, rng.int(12));
    const choices = choicesOf.get(name);
    const valueRoll = rng.next();
    const value = choices && valueRoll < 0.4 ? rng.pick(choices)
      : valueRoll < 0.8 ? rng.pick(HOSTILE_VALUES)
        : String(rng.int(2 ** 31) * (rng.next() < 0.5 ? 1 : -1) * 10 ** rng.int(12));
    parts.push(`${encodeField(name)}=${encodeField(value)}`);
  }
  if (rng.next() < 0.1) parts.push(`v=${rng.pick(['1', '2', 'x', ''])}`);
  if (rng.next() < 0.05) {
    // Raw bytes, percent-encoded or not.
    let raw = '';
    for (let i = rng.int(200); i > 0; i -= 1) raw += rng.next() < 0.5 ? `%${rng.int(256).toString(16).padStart(2, '0')}` : String.fromCharCode(32 + rng.int(95));
    parts.push(raw);
  }
  return (rng.next() < 0.5 ? '?' : '') + parts.join(rng.next() < 0.95 ? '&' : ';');
}

function assertFinite(value, where) {
  if (typeof value === 'number') assert.ok(Number.isFinite(value), `${where} is ${value}`);
  else if (Array.isArray(value)) value.forEach((v, i) => assertFinite(v, `${where}[${i}]`));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) assertFinite(v, `${where}.${k}`);
}

describe('share-link fuzzing', { skip: !existsSync(join(WASM_DIR, 'memfit.mjs')) && 'wasm module not built' }, () => {
  let core;
  let defaults;
  let fieldByPath;
  let names;
  let choicesOf;
  before(async () => {
    core = await loadNodeCore();
    defaults = core.defaultConfig();
    const schema = core.schema();
    fieldByPath = new Map(schema.map((f) => [f.field, f]));
    names = schema.map((f) => f.field.slice(f.field.lastIndexOf('.') + 1));
    choicesOf = new Map(schema.filter((f) => f.choices).map((f) => [f.field.slice(f.field.lastIndexOf('.') + 1), f.choices]));
  });

  test(`${DECODE_RUNS} random links decode without throwing, to known fields only`, () => {
    const rng = generator(20261201);
    const known = new Set(fieldByPath.keys());
    for (let i = 0; i < DECODE_RUNS; i += 1) {
      const link = randomLink(rng, names, choicesOf);
      let decoded;
      assert.doesNotThrow(() => { decoded = decode(link, defaults); }, `link ${JSON.stringify(link)}`);
      for (const path of Object.keys(decoded.values)) assert.ok(known.has(path), `${path} from ${JSON.stringify(link)}`);
      assert.doesNotThrow(() => buildConfig(decoded.values['model.preset'] ?? 'llama-3-8b', decoded.values, fieldByPath));
    }
    assert.equal({}.polluted, undefined);
    assert.equal(Object.prototype.x, undefined);
  });

  test(`${CORE_RUNS} random links are answered by the core with data and finite numbers`, () => {
    const rng = generator(7);
    let answered = 0;
    let refused = 0;
    for (let i = 0; i < CORE_RUNS; i += 1) {
      const link = randomLink(rng, names, choicesOf);
      const { values } = decode(link, defaults);
      const { 'model.preset': preset, ...edits } = values;
      const config = buildConfig(preset ?? 'llama-3-8b', edits, fieldByPath);
      let result;
      assert.doesNotThrow(() => { result = core.estimate(config); }, `link ${JSON.stringify(link)}`);
      assert.equal(typeof result.ok, 'boolean', `link ${JSON.stringify(link)}`);
      if (result.ok) {
        answered += 1;
        assertFinite(result, `estimate of ${JSON.stringify(link)}`);
      } else {
        refused += 1;
        assert.ok(result.errors.length > 0 && result.errors.every((e) => typeof e.field === 'string' && e.message), `errors for ${JSON.stringify(link)}`);
      }
    }
    // Both paths are exercised (the generator is not so hostile that nothing is ever answered).
    assert.ok(answered > CORE_RUNS / 20, `only ${answered} answered`);
    assert.ok(refused > CORE_RUNS / 20, `only ${refused} refused`);
  });
});
