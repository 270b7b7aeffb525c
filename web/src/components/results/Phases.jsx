// One training step as a timeline: the memory allocated at each of the core's phases (result.phases),
// against the card's memory and the budget, with the peak marked; what nvidia-smi would show at
// the peak (allocator reserve and CUDA context) is the dotted line. The table is the fallback.
import { formatBytes, formatPercent } from '../../format.js';
import { ChartCard, useWidth } from '../charts/ChartCard.jsx';
import { placeLabels } from '../charts/labels.js';
import { byteTicks, linear, tickLabel } from '../charts/scale.js';
import { Bytes } from './Bytes.jsx';

const PHASE_WORDS = {
  forward_block: 'Block forward', forward: 'Forward', backward: 'Backward', optimizer_step: 'Optimizer step',
  between: 'Between steps',
};
const phaseName = (p) => PHASE_WORDS[p.name] ?? p.label;
// Under the chart, where a phase has less room than the longest name needs (a phone, or the six
// points of a step with a block's forward high point): one word each.
const SHORT_WORDS = {
  load: 'Load', forward_block: 'Block', forward: 'Forward', backward: 'Backward', optimizer_step: 'Step', between: 'After',
};
// And where even those do not fit (six points on a phone), the fewest letters.
const TINY_WORDS = { forward: 'Fwd', backward: 'Bwd' };
const shortName = (p) => SHORT_WORDS[p.name] ?? phaseName(p).split(' ')[0];
const fits = (phases, room, name) => phases.every((p) => name(p).length * 7 <= room);
const axisNamer = (phases, room) => (fits(phases, room, phaseName) ? phaseName
  : fits(phases, room, shortName) ? shortName : (p) => TINY_WORDS[p.name] ?? shortName(p));

// The core's phases and, after the optimizer step, what stays allocated until the next step
// (result.between_steps_bytes: what memory_allocated() reads in a loop that logs it per step).
export function stepPhases(result) {
  const phases = result.phases ?? [];
  // The seeds' convention has one "total" phase and no step to be between.
  if (!(result.between_steps_bytes > 0) || phases.length < 2) return phases;
  return [...phases, { name: 'between', label: 'Between steps', bytes: result.between_steps_bytes }];
}

export function timelineSummary(result, units) {
  const phases = result.phases ?? [];
  const peak = phases.reduce((a, p) => (p.bytes > (a?.bytes ?? -1) ? p : a), null);
  const fit = result.fits;
  if (!peak) return '';
  const over = fit.need_bytes > fit.memory_bytes;
  return `Memory allocated peaks at ${formatBytes(result.peak_allocated_bytes, units)} during the ${phaseName(peak).toLowerCase()} phase; ` +
    `with the allocator's reserve and the CUDA context the GPU shows ${formatBytes(fit.need_bytes, units)}, ` +
    `${over ? 'more than' : 'within'} the ${fit.name}'s ${formatBytes(fit.memory_bytes, units)}` +
    ` (budget ${formatPercent(fit.budget_fraction)}: ${formatBytes(fit.budget_bytes, units)}).`;
}

function Timeline({ result, units, summaryId }) {
  const [ref, width] = useWidth();
  const phases = stepPhases(result);
  const fit = result.fits;
  const h = 220;
  const m = { l: 64, r: 16, t: 16, b: 30 };
  const top = Math.max(fit.memory_bytes, fit.need_bytes, ...phases.map((p) => p.bytes)) * 1.06;
  const { ticks, unit, name } = byteTicks(top, units);
  const yMax = ticks[ticks.length - 1];
  const y = linear(0, yMax, h - m.b, m.t);
  const n = phases.length;
  const x = (i) => m.l + ((i + 0.5) / Math.max(n, 1)) * (width - m.l - m.r);
  const peakIndex = phases.findIndex((p) => p.bytes === result.peak_allocated_bytes);
  const axisName = axisNamer(phases, (width - m.l - m.r) / Math.max(n, 1));
  const line = phases.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(i).toFixed(1)},${y(p.bytes).toFixed(1)}`).join(' ');
  const area = n ? `${line} L${x(n - 1).toFixed(1)},${y(0)} L${x(0).toFixed(1)},${y(0)} Z` : '';
  // The labels: the peak's by its point (centred, or ending at it on the right edge, where the
  // optimizer step often is), then the card's, nvidia-smi's and the budget's on their lines, each
  // in the first of its places that is clear of the line and of the labels before it.
  const peak = peakIndex < 0 ? null : phases[peakIndex];
  const peakText = peak ? `peak ${formatBytes(peak.bytes, units)}` : '';
  const labelTexts = {
    limit: `${fit.name}: ${formatBytes(fit.memory_bytes, units)}`,
    // (shorter on a phone, where the long one leaves the budget's label no clear place)
    device: `nvidia-smi${width < 480 ? '' : ' at the peak'}: ${formatBytes(fit.need_bytes, units)}`,
    budget: `budget ${formatPercent(fit.budget_fraction)}`,
  };
  // A rule's label sits at either end of its line, above or below it, or failing those, centred in
  // one of the gaps between the phases' points, where the plotted line is furthest from them.
  const gaps = phases.slice(1).map((_, i) => (x(i) + x(i + 1)) / 2);
  const onLine = (bytes, order) => [
    ...order.map((where) => ({
      x: where.startsWith('end') ? width - m.r - 4 : m.l + 4,
      y: where.endsWith('below') ? y(bytes) + 14 : y(bytes) - 5,
      anchor: where.startsWith('end') ? 'end' : 'start',
    })),
    ...gaps.flatMap((gx) => [{ x: gx, y: y(bytes) - 5, anchor: 'middle' }, { x: gx, y: y(bytes) + 14, anchor: 'middle' }]),
  ];
  const peakPlaces = () => {
    const px = x(peakIndex), py = y(peak.bytes);
    const ax = px + 70 > width ? { anchor: 'end', x: px + 8 } : { anchor: 'middle', x: px };
    const above = { ...ax, y: py - 12 }, below = { ...ax, y: py + 20 };
    return [...(py > h / 2 ? [above, below] : [below, above]),
      { anchor: 'end', x: px - 10, y: py + 4 }, { anchor: 'start', x: px + 10, y: py + 4 }];
  };
  const labels = placeLabels([
    ...(peak ? [{ id: 'peak', text: peakText, bold: true, places: peakPlaces() }] : []),
    { id: 'limit', text: labelTexts.limit, bold: true, places: onLine(fit.memory_bytes, ['end-above', 'end-below', 'start-above', 'start-below']) },
    { id: 'device', text: labelTexts.device, places: onLine(fit.need_bytes, ['start-above', 'start-below', 'end-above', 'end-below']) },
    { id: 'budget', text: labelTexts.budget, places: onLine(fit.budget_bytes, ['start-below', 'start-above', 'end-below', 'end-above']) },
  ], {
    bounds: { left: m.l, right: width - m.r, top: 0, bottom: h - m.b },
    line: phases.map((p, i) => [x(i), y(p.bytes)]),
    points: phases.map((p, i) => [x(i), y(p.bytes), i === peakIndex ? 6 : 4]),
    rules: [{ id: 'limit', y: y(fit.memory_bytes) }, { id: 'device', y: y(fit.need_bytes) }, { id: 'budget', y: y(fit.budget_bytes) }],
  });
  const hLine = (bytes, cls, id, testid) => (
    <g class={cls} data-testid={testid} data-bytes={bytes}>
      <line x1={m.l} x2={width - m.r} y1={y(bytes)} y2={y(bytes)} />
      <text x={labels[id].x} y={labels[id].y} text-anchor={labels[id].anchor}>{labelTexts[id]}</text>
    </g>
  );
  return (
    <div ref={ref} class="chart-box">
      <svg class="chart" width={width} height={h} viewBox={`0 0 ${width} ${h}`} role="img"
        aria-label="Memory over one training step" aria-describedby={summaryId} data-testid="timeline-chart">
        {ticks.map((t) => (
          <g key={t} class="grid">
            <line x1={m.l} x2={width - m.r} y1={y(t)} y2={y(t)} />
            <text x={m.l - 6} y={y(t) + 4} text-anchor="end">{tickLabel(t, unit, name)}</text>
          </g>
        ))}
        <path class="area" d={area} />
        <path class="line" d={line} />
        {hLine(fit.memory_bytes, 'limit', 'limit', 'timeline-limit')}
        {hLine(fit.budget_bytes, 'budget', 'budget', 'timeline-budget')}
        {hLine(fit.need_bytes, 'device', 'device', 'timeline-device')}
        {phases.map((p, i) => (
          <g key={p.name} class={i === peakIndex ? 'point peak' : 'point'} data-phase={p.name} data-bytes={p.bytes}>
            <circle cx={x(i)} cy={y(p.bytes)} r={i === peakIndex ? 6 : 4} />
            {i === peakIndex && (
              <text class="peak-label" x={labels.peak.x} y={labels.peak.y} text-anchor={labels.peak.anchor}>{peakText}</text>
            )}
            <text class="axis" x={x(i)} y={h - 10} text-anchor="middle">{axisName(p)}<title>{phaseName(p)}</title></text>
          </g>
        ))}
      </svg>
    </div>
  );
}

function PhaseTable({ result, units }) {
  const phases = stepPhases(result);
  const peakIndex = phases.findIndex((p) => p.bytes === result.peak_allocated_bytes);
  return (
    <table class="table compact" data-testid="phases">
      <thead><tr><th scope="col">Phase</th><th scope="col" class="num">Allocated</th></tr></thead>
      <tbody>
        {phases.map((p, i) => (
          <tr key={p.name} data-phase={p.name} class={i === peakIndex ? 'peak' : ''}>
            <th scope="row">{p.label}{i === peakIndex && phases.length > 1 && <span class="peak-tag">peak</span>}</th>
            <td class="num"><Bytes bytes={p.bytes} units={units} /></td>
          </tr>
        ))}
      </tbody>
      <tfoot>
        <tr><th scope="row">What nvidia-smi would show at the peak</th><td class="num"><Bytes bytes={result.fits.need_bytes} units={units} /></td></tr>
        <tr><th scope="row">{result.fits.name}</th><td class="num"><Bytes bytes={result.fits.memory_bytes} units={units} /></td></tr>
      </tfoot>
    </table>
  );
}

export function Phases({ result, units, asTable, onTable }) {
  return (
    <ChartCard
      id="timeline"
      title="One training step"
      summary={timelineSummary(result, units)}
      asTable={asTable}
      onTable={onTable}
      chart={(summaryId) => <Timeline result={result} units={units} summaryId={summaryId} />}
      table={<PhaseTable result={result} units={units} />}
    />
  );
}
