// The size report printed by every build, and its budgets (the build fails over them):
//   first view   what the calculator needs to show its numbers and take input: index.html (numbers
//                prerendered), styles.css, main.js. ≤ 50 KiB gzipped (DESIGN.md, issue 11).
//   calculator   everything it loads, the core's worker and wasm included. ≤ 150 KiB gzipped.
// Pages of their own (accuracy, the report, the embed forms) are listed, outside both budgets.
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

export const FIRST_VIEW = ['index.html', 'styles.css', 'main.js'];
export const CORE = ['worker.js', 'memfit.wasm'];
export const BUDGET = { firstView: 50 * 1024, calculator: 150 * 1024 };

export function sizes(data) {
  return {
    raw: data.length,
    gzip: gzipSync(data, { level: 9 }).length,
    brotli: brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
  };
}

const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;

export async function sizeReport(dist, { quiet = false } = {}) {
  const files = {};
  for (const name of (await readdir(dist, { recursive: true })).sort()) {
    try {
      files[name] = sizes(await readFile(join(dist, name)));
    } catch {
      // a folder
    }
  }
  const sum = (names) => names.reduce((t, n) => {
    const s = files[n] ?? { raw: 0, gzip: 0, brotli: 0 };
    return { raw: t.raw + s.raw, gzip: t.gzip + s.gzip, brotli: t.brotli + s.brotli };
  }, { raw: 0, gzip: 0, brotli: 0 });
  const firstView = sum(FIRST_VIEW);
  const calculator = sum([...FIRST_VIEW, ...CORE]);
  const row = (name, s, note = '') =>
    `  ${name.padEnd(24)} ${String(s.raw).padStart(9)} B   gzip ${String(s.gzip).padStart(7)} B   brotli ${String(s.brotli).padStart(7)} B${note}`;
  const lines = ['web/dist/'];
  for (const [name, s] of Object.entries(files)) lines.push(row(name, s));
  lines.push(row('first view', firstView, `   (${kib(firstView.gzip)} of ${kib(BUDGET.firstView)} gzipped: ${FIRST_VIEW.join(' + ')})`));
  lines.push(row('calculator', calculator, `   (${kib(calculator.gzip)} of ${kib(BUDGET.calculator)}: + ${CORE.join(' + ')})`));
  if (!quiet) console.log(lines.join('\n'));
  const report = { files, firstView, calculator, budget: BUDGET };
  await writeFile(join(dist, '..', '..', 'build-web', 'size-report.json'), `${JSON.stringify(report, null, 1)}\n`).catch(() => {});
  let ok = true;
  if (firstView.gzip > BUDGET.firstView) {
    console.error(`the first view is ${kib(firstView.gzip)} gzipped, over its ${kib(BUDGET.firstView)} budget`);
    ok = false;
  }
  if (calculator.gzip > BUDGET.calculator) {
    console.error(`the calculator is ${kib(calculator.gzip)} gzipped, over its ${kib(BUDGET.calculator)} budget`);
    ok = false;
  }
  return ok;
}
