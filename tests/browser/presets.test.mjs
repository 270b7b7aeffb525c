// The preset list (web/src/presets.js): real models first, grouped by family; the source
// documents' configurations last, in their own group; typed queries ranked by name, family and
// size. Pure; the real preset list comes from the core in node. In the browser: "llama 70b" and
// Enter picks Llama 3 70B, and a preset's position table is shown before it bites, with the fixes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { TEXTBOOK_GROUP, groupPresets, rankPresets, searchGroups, sizeOf, words } from '../../web/src/presets.js';
import { launchBrowser, loadNodeCore, missingPrerequisites, startServer, waitForAnswer } from './helpers.mjs';

const missing = missingPrerequisites();

// query → the preset that must come first.
const QUERIES = [
  ['llama 70b', 'llama-3-70b'],
  ['LLaMA-70B', 'llama-3-70b'],
  ['llama 8b', 'llama-3-8b'],
  ['Llama 3.1 8B', 'llama-3.1-8b'],
  ['llama 2 13b', 'llama-2-13b'],
  ['mixtral', 'mixtral-8x7b'],
  ['gpt2 xl', 'gpt2-xl'],
  ['gpt-2', 'gpt2'],
  ['qwen 7b', 'qwen2.5-7b'],
  ['gemma 27b', 'gemma-2-27b'],
  ['deepseek', 'deepseek-v3'],
  ['bert large', 'bert-large-uncased'],
  ['phi 3', 'phi-3-mini-4k'],
  ['124m', 'gpt2'],
  ['1.5b', 'qwen2.5-1.5b'],
  ['gpt 1.5b', 'gpt2-xl'],
  ['qwen3', 'qwen3-8b'],
  ['qwen3 moe', 'qwen3-30b-a3b'],
  ['qwen 235b', 'qwen3-235b-a22b'],
  ['qwen3 14b', 'qwen3-14b'],
  ['phi 4', 'phi-4'],
  ['mistral', 'mistral-7b-v0.3'],
  ['toy', 'seed-toy-70m'],
  ['olmo', 'olmo-2-7b'],
  ['moe', 'qwen1.5-moe-a2.7b'],
];

describe('presets.js', { skip: missing || false }, () => {
  let presets;
  before(async () => {
    presets = (await loadNodeCore()).presets();
  });

  test(`${QUERIES.length} typed queries: the expected preset first`, () => {
    const wrong = [];
    for (const [query, id] of QUERIES) {
      const first = rankPresets(presets, query)[0]?.preset.id;
      if (first !== id) wrong.push(`"${query}" → ${first}, expected ${id}`);
    }
    assert.deepEqual(wrong, []);
  });

  test('the real models outrank the source documents\' idealised ones of the same name', () => {
    const ranked = rankPresets(presets, 'llama 70b').map((r) => r.preset.id);
    assert.ok(ranked.indexOf('seed-llama-70b') > ranked.indexOf('llama-2-70b'));
    assert.ok(ranked.indexOf('seed-llama-70b') > ranked.indexOf('llama-3.1-70b'));
    assert.deepEqual(rankPresets(presets, 'zzz qqq'), []);
    assert.equal(rankPresets(presets, '').length, presets.length);
  });

  test('groups: families of real models in order, with sizes; the source documents\' group last', () => {
    const groups = groupPresets(presets);
    assert.equal(groups.at(-1)[0], TEXTBOOK_GROUP);
    assert.ok(groups.at(-1)[1].every((p) => p.id.startsWith('seed-')));
    assert.ok(groups.slice(0, -1).every(([, items]) => items.every((p) => !p.id.startsWith('seed-'))));
    assert.equal(groups.reduce((n, [, items]) => n + items.length, 0), presets.length);
    assert.ok(groups.slice(0, -1).every(([family, items]) => items.every((p) => p.family === family)));
  });

  test('a search shows the source documents\' matches in their own group, after the real models\'', () => {
    const groups = searchGroups(presets, 'llama 7b');
    assert.deepEqual(groups.map(([title]) => title), ['Best matches', TEXTBOOK_GROUP]);
    assert.ok(groups[0][1].length > 0 && groups[0][1].every((p) => !p.id.startsWith('seed-')));
    assert.ok(groups[1][1].some((p) => p.id === 'seed-llama-7b') && groups[1][1].every((p) => p.id.startsWith('seed-')));
    assert.deepEqual(searchGroups(presets, 'mixtral').map(([title]) => title), ['Best matches']);
    assert.deepEqual(searchGroups(presets, 'zzz qqq'), []);
  });

  test('words and sizes', () => {
    assert.ok(words('GPT-2 XL (1.5B)').includes('gpt2'));
    assert.ok(words('Qwen2.5 7B').includes('qwen'));
    assert.equal(sizeOf('70b'), 70e9);
    assert.equal(sizeOf('124m'), 124e6);
    assert.equal(sizeOf('llama'), null);
  });
});

describe('the preset picker in the page', { skip: missing || false, concurrency: false }, () => {
  let server;
  let browser;
  let core;
  before(async () => {
    [server, browser, core] = await Promise.all([startServer(), launchBrowser(), loadNodeCore()]);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('typing "llama 70b" and Enter picks Llama 3 70B; the list opens grouped, real models first', async () => {
    const p = await browser.newPage();
    await p.goto(server.url);
    await p.waitForSelector('html[data-ready="true"]');
    await p.locator('#preset-input').click();
    // The list is drawn over the cards below it: every option in view is what a click there reaches
    // (cards keep their layout inside them, which also stacks them; the card in use is raised).
    const reached = await p.locator('#preset-list [role="option"]').evaluateAll((options) => {
      const list = document.getElementById('preset-list').getBoundingClientRect();
      return options.filter((o) => o.getBoundingClientRect().bottom <= list.bottom).map((o) => {
        const r = o.getBoundingClientRect();
        return o.contains(document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2));
      });
    });
    assert.ok(reached.length >= 5, `${reached.length} options in view`);
    assert.deepEqual(reached, reached.map(() => true));
    const groups = await p.locator('#preset-list [role="group"]').evaluateAll((gs) => gs.map((g) => g.getAttribute('aria-label')));
    assert.equal(groups.at(-1), TEXTBOOK_GROUP);
    assert.equal(groups[0], 'GPT-2');
    await p.locator('#preset-input').fill('llama 70b');
    await p.keyboard.press('Enter');
    assert.equal(await p.locator('#preset-input').inputValue(), 'Llama 3 70B');
    await waitForAnswer(p, core.estimate({ model: { preset: 'llama-3-70b' } }));
    assert.match(await p.locator('body').innerText(), /Llama 3 70B/);
    await p.close();
  });

  test('a learned position table is said before it bites; past it, both fixes are offered and work', async () => {
    const p = await browser.newPage();
    await p.goto(`${server.url}?v=2&preset=seed-llama-70b&seq_len=1024`);
    await p.waitForSelector('html[data-ready="true"]');
    assert.match(await p.getByTestId('preset-limit').textContent(), /up to 2,048 tokens/);
    await p.fill('#field-training-seq_len', '4096');
    await p.getByTestId('limit-use-max').waitFor();
    assert.match(await p.getByTestId('preset-limit').textContent(), /2,048 positions.*4,096 tokens/);
    await p.getByTestId('limit-use-max').click();
    assert.equal(await p.inputValue('#field-training-seq_len'), '2048');
    await waitForAnswer(p, core.estimate({ model: { preset: 'seed-llama-70b' }, training: { seq_len: 2048 } }));
    await p.fill('#field-training-seq_len', '4096');
    await p.getByTestId('limit-extend').click();
    const config = { model: { preset: 'seed-llama-70b', max_position_embeddings: 4096 }, training: { seq_len: 4096 } };
    await waitForAnswer(p, core.estimate(config));
    assert.match(await p.locator('#preset-input').inputValue(), /^custom \(from /);
    await p.close();
  });
});
