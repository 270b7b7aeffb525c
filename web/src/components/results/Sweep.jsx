// How memory grows with the micro-batch or the sequence length: the core's estimates at a ladder of
// values (a sweep run in the worker), against the card's memory and the budget, with the largest
// value that fits. The table is the fallback. The swept field is part of the share link.
import { formatBytes, formatCount } from '../../format.js';
import { SWEEP_FIELDS } from '../../view.js';
import { fieldWords } from '../../words.js';
import { ChartCard, useWidth } from '../charts/ChartCard.jsx';
import { byteTicks, countLabel, linear, log2Scale, tickLabel } from '../charts/scale.js';
import { Bytes } from './Bytes.jsx';
import { VerdictBadge } from './Verdict.jsx';

const fieldName = (short) => fieldWords(SWEEP_FIELDS[short]).label.toLowerCase();

export function sweepSummary(sweep, short, units) {
  if (!sweep) return 'The core is estimating the memory at other values…';
  if (!sweep.ok) return sweep.errors.map((e) => e.message).join('; ');
  const name = fieldName(short);
  const pts = sweep.points;
  const first = pts[0];
  const last = pts[pts.length - 1];
  const range = first && last && last !== first ? `From ${formatBytes(first.device_total_bytes, units)} at ${formatCount(first.value)} to ${formatBytes(last.device_total_bytes, units)} at ${formatCount(last.value)}. ` : '';
  let fit;
  if (sweep.largest_fit === null) fit = `No ${name} fits on the ${sweep.gpu_name} with the other settings as they are.`;
  else if (sweep.largest_fit_at_least) fit = `Every ${name} tried fits on the ${sweep.gpu_name}, up to ${formatCount(sweep.largest_fit)}.`;
  else fit = `The largest ${name} that fits on the ${sweep.gpu_name} (within its budget) is ${formatCount(sweep.largest_fit)}.`;
  return `${range}${fit}${sweep.stop ? ` Beyond ${formatCount(sweep.points.at(-1)?.value ?? 0)}: ${sweep.stop.message}.` : ''}`;
}

function SweepPlot({ sweep, units, short, summaryId }) {
  const [ref, width] = useWidth();
  const pts = sweep.points;
  const h = 230;
  const m = { l: 64, r: 16, t: 16, b: 40 };
  const top = Math.max(sweep.memory_bytes, ...pts.map((p) => p.device_total_bytes)) * 1.06;
  const { ticks, unit, name } = byteTicks(top, units);
  const y = linear(0, ticks[ticks.length - 1], h - m.b, m.t);
  const lo = pts[0]?.value ?? 1;
  const hi = Math.max(pts[pts.length - 1]?.value ?? 2, lo * 2);
  const x = log2Scale(lo, hi, m.l + 8, width - m.r - 8);
  const line = pts.map((p, i) => `${i ? 'L' : 'M'}${x(p.value).toFixed(1)},${y(p.device_total_bytes).toFixed(1)}`).join(' ');
  const fitX = sweep.largest_fit !== null ? x(Math.min(Math.max(sweep.largest_fit, lo), hi)) : null;
  // Axis labels: every grid value, thinned to what fits the width.
  const every = Math.max(1, Math.ceil((pts.length * 44) / Math.max(1, width - m.l - m.r)));
  return (
    <div ref={ref} class="chart-box">
      <svg class="chart" width={width} height={h} viewBox={`0 0 ${width} ${h}`} role="img"
        aria-label={`Memory against ${fieldName(short)}`} aria-describedby={summaryId} data-testid="sweep-chart">
        {ticks.map((t) => (
          <g key={t} class="grid">
            <line x1={m.l} x2={width - m.r} y1={y(t)} y2={y(t)} />
            <text x={m.l - 6} y={y(t) + 4} text-anchor="end">{tickLabel(t, unit, name)}</text>
          </g>
        ))}
        <g class="limit" data-testid="sweep-limit" data-bytes={sweep.memory_bytes}>
          <line x1={m.l} x2={width - m.r} y1={y(sweep.memory_bytes)} y2={y(sweep.memory_bytes)} />
          <text x={width - m.r - 4} y={y(sweep.memory_bytes) - 5} text-anchor="end">{`${sweep.gpu_name}: ${formatBytes(sweep.memory_bytes, units)}`}</text>
        </g>
        <g class="budget" data-bytes={sweep.budget_bytes}>
          <line x1={m.l} x2={width - m.r} y1={y(sweep.budget_bytes)} y2={y(sweep.budget_bytes)} />
          <text x={m.l + 4} y={y(sweep.budget_bytes) + 14}>budget</text>
        </g>
        {fitX !== null && (
          <g class="fit-mark" data-testid="sweep-largest" data-value={sweep.largest_fit}>
            <line x1={fitX} x2={fitX} y1={m.t} y2={h - m.b} />
            <text x={fitX + (fitX > width / 2 ? -5 : 5)} y={m.t + 12} text-anchor={fitX > width / 2 ? 'end' : 'start'}>
              largest that fits: {formatCount(sweep.largest_fit)}{sweep.largest_fit_at_least ? '+' : ''}
            </text>
          </g>
        )}
        <path class="line" d={line} />
        {pts.map((p, i) => (
          <g key={p.value} class={`point verdict-${p.verdict}${p.value === sweep.current ? ' current' : ''}`} data-value={p.value} data-bytes={p.device_total_bytes}>
            <circle cx={x(p.value)} cy={y(p.device_total_bytes)} r={p.value === sweep.current ? 6 : 4}>
              <title>{`${countLabel(p.value)}: ${formatBytes(p.device_total_bytes, units)}`}</title>
            </circle>
            {(i % every === 0 || p.value === sweep.current) && (
              <text class={`axis${p.value === sweep.current ? ' current' : ''}`} x={x(p.value)} y={h - m.b + 16} text-anchor="middle">{countLabel(p.value)}</text>
            )}
          </g>
        ))}
        <text class="axis-title" x={(m.l + width - m.r) / 2} y={h - 6} text-anchor="middle">
          {fieldWords(SWEEP_FIELDS[short]).label}{width >= 520 ? ' (up: what nvidia-smi would show per GPU)' : ''}
        </text>
      </svg>
    </div>
  );
}

function SweepTable({ sweep, units, short }) {
  if (!sweep?.ok) return null;
  return (
    <table class="table compact" data-testid="sweep-table">
      <thead>
        <tr>
          <th scope="col" class="num">{fieldWords(SWEEP_FIELDS[short]).label}</th>
          <th scope="col" class="num">Peak allocated</th>
          <th scope="col" class="num">Device total</th>
          <th scope="col">On the {sweep.gpu_name}</th>
        </tr>
      </thead>
      <tbody>
        {sweep.points.map((p) => (
          <tr key={p.value} data-value={p.value} class={p.value === sweep.current ? 'selected' : ''} aria-current={p.value === sweep.current ? 'true' : undefined}>
            <th scope="row" class="num">{formatCount(p.value)}</th>
            <td class="num"><Bytes bytes={p.peak_allocated_bytes} units={units} /></td>
            <td class="num"><Bytes bytes={p.device_total_bytes} units={units} /></td>
            <td><VerdictBadge verdict={p.verdict} /></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

// previous: the last sweep over the same field, drawn greyed while the core works on this one.
export function Sweep({ sweep, previous = null, short, onShort, units, asTable, onTable }) {
  const drawn = sweep ?? previous;
  const updating = !sweep && !!previous;
  const picker = (
    <div class="segmented small" role="group" aria-label="Memory against">
      {Object.keys(SWEEP_FIELDS).map((s) => (
        <button type="button" key={s} aria-pressed={s === short} class={s === short ? 'on' : ''} onClick={() => onShort(s)} data-testid={`sweep-${s}`}>
          {fieldWords(SWEEP_FIELDS[s]).label}
        </button>
      ))}
    </div>
  );
  return (
    <ChartCard
      id="sweep"
      title="How memory grows"
      note="The core's estimate at other values of one setting, everything else as it is."
      summary={sweepSummary(sweep, short, units)}
      asTable={asTable}
      onTable={onTable}
      extra={picker}
      chart={(summaryId) => (drawn?.ok && drawn.points.length > 0
        ? <div class={updating ? 'updating' : undefined} aria-busy={updating ? 'true' : undefined}>
            <SweepPlot sweep={drawn} units={units} short={short} summaryId={summaryId} />
          </div>
        : <div class="chart-placeholder" aria-hidden="true" />)}
      table={<SweepTable sweep={sweep} units={units} short={short} />}
    />
  );
}
