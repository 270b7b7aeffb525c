// The page's view settings that travel in the share link next to the configuration: the unit
// system, which charts are shown as tables, and which field the "memory grows with" chart sweeps.
//   ?v=1&…&units=GB&tables=breakdown,timeline&sweep=seq_len
// Pure: no DOM, no wasm.

export const CHARTS = ['breakdown', 'timeline', 'sweep', 'gpus'];
export const SWEEP_FIELDS = { micro_batch_size: 'training.micro_batch_size', seq_len: 'training.seq_len' };
// view and theme belong to the embed forms (embed/link.js); the page ignores them quietly.
export const VIEW_PARAMS = new Set(['units', 'tables', 'sweep', 'view', 'theme']);
export const DEFAULT_VIEW = Object.freeze({ units: 'GiB', tables: Object.freeze([]), sweep: 'micro_batch_size' });

// URLSearchParams-able text → { view, problems: [text] } (a bad value falls back to the default).
export function decodeView(search) {
  const params = new URLSearchParams(String(search ?? '').replace(/^\?/, ''));
  const view = { ...DEFAULT_VIEW };
  const problems = [];
  if (params.has('units')) {
    const u = params.get('units');
    if (u === 'GiB' || u === 'GB') view.units = u;
    else problems.push(`units must be GiB or GB; got "${u}"`);
  }
  if (params.has('tables')) {
    const names = params.get('tables').split(',').filter(Boolean);
    view.tables = names.filter((n) => CHARTS.includes(n));
    for (const n of names) if (!CHARTS.includes(n)) problems.push(`tables: no chart "${n}" (${CHARTS.join(', ')})`);
  }
  if (params.has('sweep')) {
    const s = params.get('sweep');
    if (s in SWEEP_FIELDS) view.sweep = s;
    else problems.push(`sweep must be ${Object.keys(SWEEP_FIELDS).join(' or ')}; got "${s}"`);
  }
  return { view, problems };
}

// view → "&units=GB&…" ('' when everything is the default).
export function encodeView(view) {
  const parts = [];
  if (view.units !== DEFAULT_VIEW.units) parts.push(`units=${view.units}`);
  const tables = CHARTS.filter((c) => view.tables.includes(c));
  if (tables.length) parts.push(`tables=${tables.join(',')}`);
  if (view.sweep !== DEFAULT_VIEW.sweep) parts.push(`sweep=${view.sweep}`);
  return parts.length ? `&${parts.join('&')}` : '';
}
