// Number formatting for the views. The core gives exact bytes; the page only chooses a unit.
//
// Rule: binary units (KiB, MiB, GiB, TiB = 2^10, 2^20, 2^30, 2^40 bytes) by default, decimal
// units (kB, MB, GB, TB = 10^3 ... 10^12) on request. The largest unit the value reaches is
// used, with two decimals (so the seeds' 1,991,407,616 bytes read "1.85 GiB"); below 1 KiB/kB
// the exact byte count is shown. The unit is always written, never a bare "MB" for MiB.

const NUMBER = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const INTEGER = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

const UNITS = {
  GiB: [[2 ** 40, 'TiB'], [2 ** 30, 'GiB'], [2 ** 20, 'MiB'], [2 ** 10, 'KiB']],
  GB: [[1e12, 'TB'], [1e9, 'GB'], [1e6, 'MB'], [1e3, 'kB']],
};

const MINUS = '\u2212';

function isNumber(x) {
  return typeof x === 'number' && Number.isFinite(x);
}

// "1.85 GiB", "444.00 MiB", "512 B", "−12.30 GiB"; "—" for anything that is not a number.
export function formatBytes(bytes, system = 'GiB') {
  if (!isNumber(bytes)) return '\u2014';
  const sign = bytes < 0 ? MINUS : '';
  const size = Math.abs(bytes);
  for (const [scale, unit] of UNITS[system] ?? UNITS.GiB) {
    if (size >= scale) return `${sign}${NUMBER.format(size / scale)} ${unit}`;
  }
  return `${sign}${INTEGER.format(size)} B`;
}

// "1,991,407,616 bytes" (for titles / tooltips).
export function formatExactBytes(bytes) {
  if (!isNumber(bytes)) return '';
  return `${bytes < 0 ? MINUS : ''}${INTEGER.format(Math.abs(bytes))} bytes`;
}

// "124,439,808"
export function formatCount(n) {
  if (!isNumber(n)) return '\u2014';
  return `${n < 0 ? MINUS : ''}${INTEGER.format(Math.abs(n))}`;
}

// "124.4M", "8.03B", "70.6M", "512": a short count (parameters).
export function formatCountShort(n) {
  if (!isNumber(n)) return '\u2014';
  const size = Math.abs(n);
  const sign = n < 0 ? MINUS : '';
  for (const [scale, unit] of [[1e12, 'T'], [1e9, 'B'], [1e6, 'M'], [1e3, 'K']]) {
    if (size >= scale) {
      const v = size / scale;
      const digits = v >= 100 ? 0 : v >= 10 ? 1 : 2;
      return `${sign}${v.toFixed(digits)}${unit}`;
    }
  }
  return `${sign}${INTEGER.format(size)}`;
}

// 0.85 → "85 %", 0.075 → "7.5 %".
export function formatPercent(fraction, { decimals } = {}) {
  if (!isNumber(fraction)) return '\u2014';
  const pct = fraction * 100;
  // A column of figures (the planner's MFU) gives every row the same decimals, as the CLI does.
  if (decimals !== undefined) return `${pct.toFixed(decimals)}\u00a0%`;
  const text = Number.isInteger(Math.round(pct * 10) / 10) ? String(Math.round(pct)) : (Math.round(pct * 10) / 10).toFixed(1);
  return `${text}\u00a0%`;
}

// A width for a chart segment, as a CSS percentage of `total` (display only).
export function share(part, total) {
  if (!isNumber(part) || !isNumber(total) || total <= 0 || part <= 0) return 0;
  return Math.min(100, (part / total) * 100);
}
