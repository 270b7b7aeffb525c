// Builds the static page into web/dist/: the bundled app (main.js), index.html, styles.css and the
// wasm core (memfit.mjs + memfit.wasm from build-wasm/wasm/). Prints each file's gzip size.
//   node web/build.mjs            (npm run build:web)
//   MEMFIT_WASM_DIR=... to take the wasm files from elsewhere
import { copyFile, mkdir, readFile, readdir, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

import { build } from 'esbuild';

const web = dirname(fileURLToPath(import.meta.url));
const root = resolve(web, '..');
const dist = join(web, 'dist');
const wasmDir = resolve(root, process.env.MEMFIT_WASM_DIR ?? 'build-wasm/wasm');
const BUDGET_BYTES = 150 * 1024;  // DESIGN.md: the whole page compressed well under 150 KB

async function exists(path) {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

for (const name of ['memfit.mjs', 'memfit.wasm']) {
  if (!(await exists(join(wasmDir, name)))) {
    console.error(`missing ${join(wasmDir, name)}: build the wasm module first:
  NODE_PATH=/usr/share/nodejs emcmake cmake -S . -B build-wasm && NODE_PATH=/usr/share/nodejs cmake --build build-wasm -j2`);
    process.exit(1);
  }
}

await rm(dist, { recursive: true, force: true });
await mkdir(dist, { recursive: true });

await build({
  entryPoints: [join(web, 'src/main.jsx')],
  outfile: join(dist, 'main.js'),
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2020'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  logLevel: 'warning',
});
await copyFile(join(web, 'index.html'), join(dist, 'index.html'));
await copyFile(join(web, 'src/styles.css'), join(dist, 'styles.css'));
await copyFile(join(wasmDir, 'memfit.mjs'), join(dist, 'memfit.mjs'));
await copyFile(join(wasmDir, 'memfit.wasm'), join(dist, 'memfit.wasm'));

let raw = 0;
let gz = 0;
const lines = [];
for (const name of (await readdir(dist)).sort()) {
  const data = await readFile(join(dist, name));
  const zipped = gzipSync(data, { level: 9 }).length;
  raw += data.length;
  gz += zipped;
  lines.push(`  ${name.padEnd(14)} ${String(data.length).padStart(9)} B   gzip ${String(zipped).padStart(8)} B`);
}
console.log(`web/dist/\n${lines.join('\n')}\n  ${'total'.padEnd(14)} ${String(raw).padStart(9)} B   gzip ${String(gz).padStart(8)} B` +
  `  (${(gz / 1024).toFixed(1)} KiB of the ${BUDGET_BYTES / 1024} KiB budget)`);
if (gz > BUDGET_BYTES) {
  console.error('the page is over its size budget');
  process.exit(1);
}
