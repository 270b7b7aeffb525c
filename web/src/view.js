// The page's view settings that travel in the share link next to the configuration: the unit
// system, which charts are shown as tables, which field the "memory grows with" chart sweeps, and
// the planner (open, its inputs as typed, the chosen plan; written only while it is open).
//   ?v=2&…&units=GB&tables=breakdown,timeline&sweep=seq_len
//   &planner=1&plan_gpus_min=8&plan_gpus_max=64&plan_global_batch_tokens=4e6&plan_rank_by=cost&plan=2
// Pure: no DOM, no wasm.
import { KNOWN_VERSIONS } from './url.js';

export const CHARTS = ['breakdown', 'timeline', 'sweep', 'gpus'];
export const SWEEP_FIELDS = { micro_batch_size: 'training.micro_batch_size', seq_len: 'training.seq_len' };
// view and theme belong to the embed forms (embed/link.js); the page ignores them quietly.
// The planner: open (1 or 0), its inputs (the core's plan options as typed: the core names a bad
// value; how plans are ranked; 1 to keep the form's precision) and the chosen plan's number (0: none).
export const DEFAULT_PLANNER = Object.freeze({
  open: 0, gpus_min: '1', gpus_max: '64', global_batch_tokens: '', train_tokens: '',
  rank_by: 'step_time', keep_precision: 0, plan: 0,
});
// [key, link parameter, the values it accepts]: numbers for the flags and the plan's number.
const TEXT = /^[^]{0,40}$/;
const PLANNER_PARAMS = [['open', 'planner', /^[01]$/], ['gpus_min', 'plan_gpus_min', TEXT], ['gpus_max', 'plan_gpus_max', TEXT],
  ['global_batch_tokens', 'plan_global_batch_tokens', TEXT], ['train_tokens', 'plan_train_tokens', TEXT],
  ['rank_by', 'plan_rank_by', /^(step_time|cost)$/], ['keep_precision', 'plan_keep_precision', /^[01]$/], ['plan', 'plan', /^\d{1,3}$/]];
export const VIEW_PARAMS = new Set(['units', 'tables', 'sweep', 'view', 'theme', ...PLANNER_PARAMS.map((p) => p[1])]);
export const DEFAULT_VIEW = Object.freeze({ units: 'GiB', tables: Object.freeze([]), sweep: 'micro_batch_size', planner: DEFAULT_PLANNER });

// URLSearchParams-able text → { view, problems: [text] } (a bad value falls back to the default).
export function decodeView(search) {
  const params = new URLSearchParams(String(search ?? '').replace(/^\?/, ''));
  const view = { ...DEFAULT_VIEW };
  const problems = [];
  if (params.has('units')) {
    const u = params.get('units');
    if (u === 'GiB' || u === 'GB') view.units = u;
    else problems.push(`units must be GiB or GB; got "${u.slice(0, 40)}"`);
  }
  if (params.has('tables')) {
    const names = params.get('tables').split(',').filter(Boolean);
    view.tables = names.filter((n) => CHARTS.includes(n));
    const bad = names.filter((n) => !CHARTS.includes(n));
    if (bad.length) problems.push(`tables: no chart ${bad.slice(0, 3).map((n) => `"${n.slice(0, 40)}"`).join(', ')}${bad.length > 3 ? ` and ${bad.length - 3} more` : ''} (${CHARTS.join(', ')})`);
  }
  if (params.has('sweep')) {
    const s = params.get('sweep');
    if (s in SWEEP_FIELDS) view.sweep = s;
    else problems.push(`sweep must be ${Object.keys(SWEEP_FIELDS).join(' or ')}; got "${s.slice(0, 40)}"`);
  }
  view.planner = { ...DEFAULT_PLANNER };
  for (const [key, name, allowed] of PLANNER_PARAMS) {
    const v = params.get(name);
    if (v === null) continue;
    if (allowed.test(v)) view.planner[key] = typeof DEFAULT_PLANNER[key] === 'number' ? Number(v) : v;
    else problems.push(`${name}: "${v.slice(0, 40)}" is not accepted`);
  }
  return { view, problems };
}

// What a link holds that cannot be used as written, for the page's notice and the embeds' console:
// link: url.js decode()'s answer; linkView: decodeView()'s. → { unknown: [names], version (null
// when known), view: [problems] }.
export function unusedLinkParts(link, linkView) {
  return {
    unknown: link.unknown.filter((name) => !VIEW_PARAMS.has(name)),
    version: link.version !== null && !KNOWN_VERSIONS.has(link.version) ? link.version : null,
    view: linkView.problems,
  };
}

// view → "&units=GB&…" ('' when everything is the default).
export function encodeView(view) {
  const parts = [];
  if (view.units !== DEFAULT_VIEW.units) parts.push(`units=${view.units}`);
  const tables = CHARTS.filter((c) => view.tables.includes(c));
  if (tables.length) parts.push(`tables=${tables.join(',')}`);
  if (view.sweep !== DEFAULT_VIEW.sweep) parts.push(`sweep=${view.sweep}`);
  // The planner's parameters while it is open, those that differ from the defaults.
  for (const [key, name] of view.planner?.open ? PLANNER_PARAMS : []) {
    if (view.planner[key] !== DEFAULT_PLANNER[key]) parts.push(`${name}=${encodeURIComponent(view.planner[key])}`);
  }
  return parts.length ? `&${parts.join('&')}` : '';
}
