// Small helpers for the page's SVG charts: scales and tick values. Display only: the values
// plotted are the core's. Pure.

export const linear = (d0, d1, r0, r1) => (v) => (d1 === d0 ? r0 : r0 + ((v - d0) / (d1 - d0)) * (r1 - r0));
export const log2Scale = (d0, d1, r0, r1) => {
  const f = linear(Math.log2(d0), Math.log2(d1), r0, r1);
  return (v) => f(Math.log2(v));
};

// Nice tick values from 0 to at least `max` bytes, in steps of 1, 2 or 5 × 10^k of the display
// unit (GiB or GB; MiB or MB below one of those). → { ticks: [bytes], unit: bytes per unit, name }.
export function byteTicks(max, system = 'GiB', count = 4) {
  const big = system === 'GB' ? [1e9, 'GB'] : [2 ** 30, 'GiB'];
  const small = system === 'GB' ? [1e6, 'MB'] : [2 ** 20, 'MiB'];
  const [unit, name] = max >= big[0] ? big : small;
  const top = Math.max(max / unit, 1e-9);
  const raw = top / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const ticks = [];
  for (let v = 0; v <= top + step * 0.999; v += step) ticks.push(v * unit);
  return { ticks, unit, name, step: step * unit };
}

// A tick's label: "40 GiB", "1.5 GiB", "512 MiB".
export function tickLabel(bytes, unit, name) {
  const v = bytes / unit;
  const text = Number.isInteger(Math.round(v * 100) / 100) ? String(Math.round(v)) : String(Math.round(v * 100) / 100);
  return `${text} ${name}`;
}

export const countLabel = (n) => (n >= 1024 && n % 1024 === 0 ? `${n / 1024}k` : String(n));
