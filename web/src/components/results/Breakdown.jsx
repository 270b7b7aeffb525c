// Where the memory goes: result.breakdown as a stacked bar (SVG) and a table that is its legend
// and its fallback. Each term has its glossary entry.
import { formatBytes, share } from '../../format.js';
import { termWords } from '../../glossary.js';
import { ChartCard, useWidth } from '../charts/ChartCard.jsx';
import { Term } from '../Term.jsx';
import { Bytes } from './Bytes.jsx';

export const BREAKDOWN_KEYS = ['parameters', 'master_weights', 'weight_copies', 'gradients', 'optimizer_states',
  'activations', 'logits_and_loss', 'overhead'];
const OFF_GPU = 'offloaded';
// Segments light enough that their label is written in dark text.
const LIGHT = new Set(['master_weights', 'weight_copies', 'logits_and_loss', 'overhead']);

// Keys in a fixed order, then any key the core adds later; only those the result has.
export function breakdownKeys(breakdown) {
  const known = new Set([...BREAKDOWN_KEYS, OFF_GPU]);
  const extra = Object.keys(breakdown).filter((k) => !known.has(k));
  return [...BREAKDOWN_KEYS, ...extra].filter((k) => typeof breakdown[k] === 'number');
}

// One sentence: the largest parts.
export function breakdownSummary(b, units) {
  const parts = breakdownKeys(b).filter((k) => b[k] > 0).sort((x, y) => b[y] - b[x]);
  if (parts.length === 0) return 'Nothing is allocated.';
  // Labels as written ("CUDA context" keeps its capitals), but a leading capital lowered.
  const lower = (t) => (/^[A-Z][a-z]/.test(t) ? t[0].toLowerCase() + t.slice(1) : t);
  const top = parts.slice(0, 3).map((k) => `${lower(termWords(k).label)} ${formatBytes(b[k], units)}`);
  return `Largest parts per GPU: ${top.join(', ')}${parts.length > 3 ? `, and ${parts.length - 3} smaller` : ''}.`;
}

function StackedBar({ b, units, summaryId }) {
  const [ref, width] = useWidth();
  const keys = breakdownKeys(b).filter((k) => b[k] > 0);
  const total = keys.reduce((s, k) => s + b[k], 0);
  const h = 34;
  let x = 0;
  return (
    <div ref={ref} class="chart-box">
      <svg class="chart stacked-svg" width={width} height={h} viewBox={`0 0 ${width} ${h}`} role="img"
        aria-label="Stacked bar of the memory per GPU by component" aria-describedby={summaryId} data-testid="breakdown-chart">
        {keys.map((k) => {
          const w = (share(b[k], total) / 100) * width;
          const seg = (
            <g key={k} data-key={k}>
              <rect class={`fill-${k}`} x={x} y={0} width={Math.max(0, w - 1)} height={h} rx={2} data-bytes={b[k]}>
                <title>{`${termWords(k).label}: ${formatBytes(b[k], units)}`}</title>
              </rect>
              {w > formatBytes(b[k], units).length * 7 + 12 && (
                <text class={`seg-text${LIGHT.has(k) ? ' on-light' : ''}`} x={x + 6} y={h / 2 + 4}>{formatBytes(b[k], units)}</text>
              )}
            </g>
          );
          x += w;
          return seg;
        })}
      </svg>
    </div>
  );
}

export function Breakdown({ result, units, asTable, onTable }) {
  const b = result.breakdown;
  const keys = breakdownKeys(b).filter((k) => k !== OFF_GPU);
  return (
    <ChartCard
      id="breakdown"
      title="Where the memory goes"
      note="Per GPU, each component at its largest. They do not all peak together: the step's peak is in the timeline."
      summary={breakdownSummary(b, units)}
      asTable={asTable}
      onTable={onTable}
      chart={(summaryId) => (
        <>
          <StackedBar b={b} units={units} summaryId={summaryId} />
          <BreakdownTable b={b} keys={keys} units={units} legend />
        </>
      )}
      table={<BreakdownTable b={b} keys={keys} units={units} />}
    />
  );
}

function BreakdownTable({ b, keys, units, legend = false }) {
  return (
    <table class="table breakdown" data-testid="breakdown">
      <thead>
        <tr><th scope="col">Component</th><th scope="col" class="num">Per GPU</th></tr>
      </thead>
      <tbody>
        {keys.map((k) => (
          <tr key={k} data-key={k} class={b[k] === 0 ? 'zero' : ''}>
            <th scope="row">
              {legend && <span class={`swatch fill-${k}`} aria-hidden="true" />}
              <Term k={k} />
              {termWords(k).short && <span class="row-note"> · {termWords(k).short}</span>}
            </th>
            <td class="num"><Bytes bytes={b[k]} units={units} testid={`breakdown-${k}`} /></td>
          </tr>
        ))}
        {typeof b[OFF_GPU] === 'number' && (
          <tr data-key={OFF_GPU} class={`off-gpu${b[OFF_GPU] === 0 ? ' zero' : ''}`}>
            <th scope="row">{legend && <span class="swatch swatch-off" aria-hidden="true" />}<Term k={OFF_GPU} /><span class="row-note"> · not on the GPU</span></th>
            <td class="num"><Bytes bytes={b[OFF_GPU]} units={units} testid={`breakdown-${OFF_GPU}`} /></td>
          </tr>
        )}
      </tbody>
    </table>
  );
}
