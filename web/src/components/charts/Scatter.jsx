// Predicted against measured memory (the accuracy page): one point per published run, memfit's
// estimate (the core's) against the measurement, on log scales, with the line where they agree
// and the ±25 % band. Drawn at build time; no script on the page.
import { formatBytes } from '../../format.js';
import { log2Scale } from './scale.js';

const KIND = {
  full: ['Full fine-tune or pre-training', 'circle'],
  lora: ['LoRA', 'square'],
  qlora: ['QLoRA', 'triangle'],
  peft: ['Other PEFT methods', 'diamond'],
};
export const kindLabel = (k) => KIND[k]?.[0] ?? k;
const KINDS = Object.keys(KIND).length;

function Mark({ shape, x, y, r = 4.5 }) {
  if (shape === 'square') return <rect x={x - r} y={y - r} width={2 * r} height={2 * r} />;
  if (shape === 'diamond') return <path d={`M${x},${y - r * 1.3} L${x + r * 1.3},${y} L${x},${y + r * 1.3} L${x - r * 1.3},${y} Z`} />;
  if (shape === 'triangle') return <path d={`M${x},${y - r * 1.2} L${x + r * 1.1},${y + r * 0.8} L${x - r * 1.1},${y + r * 0.8} Z`} />;
  return <circle cx={x} cy={y} r={r} />;
}

// points: [{ measured, predicted, kind, label }] (bytes). width/height: CSS pixels.
export function Scatter({ points, width = 640, height = 460, summaryId }) {
  const m = { l: 70, r: 16, t: 16, b: 48 };
  const all = points.flatMap((p) => [p.measured, p.predicted]);
  const lo = 2 ** Math.floor(Math.log2(Math.min(...all)));
  const hi = 2 ** Math.ceil(Math.log2(Math.max(...all)));
  const x = log2Scale(lo, hi, m.l, width - m.r);
  const y = log2Scale(lo, hi, height - m.b, m.t);
  const ticks = [];
  for (let v = lo; v <= hi; v *= 2) ticks.push(v);
  // y = f·x across the plot, clipped to it.
  const band = (f) => `M${x(lo)},${y(lo * f)} L${x(hi)},${y(hi * f)}`;
  return (
    <svg class="chart scatter" width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img"
      aria-label="memfit's estimate against the measured memory of published runs" aria-describedby={summaryId} data-testid="accuracy-scatter">
      {ticks.map((t) => (
        <g key={t} class="grid">
          <line x1={m.l} x2={width - m.r} y1={y(t)} y2={y(t)} />
          <line x1={x(t)} x2={x(t)} y1={m.t} y2={height - m.b} />
          <text x={m.l - 6} y={y(t) + 4} text-anchor="end">{formatBytes(t)}</text>
          <text x={x(t)} y={height - m.b + 16} text-anchor="middle">{formatBytes(t).replace('.00', '')}</text>
        </g>
      ))}
      <clipPath id="scatter-plot"><rect x={m.l} y={m.t} width={width - m.l - m.r} height={height - m.t - m.b} /></clipPath>
      <g clip-path="url(#scatter-plot)">
        <path class="band" d={band(1.25)} />
        <path class="band" d={band(0.75)} />
        <path class="diagonal" d={band(1)} />
      </g>
      <text class="axis-title" x={(m.l + width - m.r) / 2} y={height - 8} text-anchor="middle">measured (published)</text>
      <text class="axis-title" x={14} y={(m.t + height - m.b) / 2} text-anchor="middle" transform={`rotate(-90 14 ${(m.t + height - m.b) / 2})`}>memfit's estimate</text>
      {points.map((p) => (
        <g key={p.id} class={`mark kind-${p.kind}`} data-id={p.id} data-measured={p.measured} data-predicted={p.predicted}>
          <Mark shape={KIND[p.kind]?.[1] ?? 'circle'} x={x(p.measured)} y={y(p.predicted)} />
          <title>{`${p.label}: measured ${formatBytes(p.measured)}, memfit ${formatBytes(p.predicted)}`}</title>
        </g>
      ))}
      <g class="legend" transform={`translate(${m.l + 12}, ${m.t + 8})`}>
        {Object.entries(KIND).map(([k, [label, shape]], i) => (
          <g key={k} class={`mark kind-${k}`} transform={`translate(0, ${i * 18})`}>
            <Mark shape={shape} x={5} y={0} />
            <text x={16} y={4}>{label}</text>
          </g>
        ))}
        {/* The lines' entries below the kinds' (one row each, 18 px). */}
        <g transform={`translate(0, ${KINDS * 18})`} class="legend-line"><path class="diagonal" d="M0,0 L10,0" /><text x={16} y={4}>memfit = measured</text></g>
        <g transform={`translate(0, ${(KINDS + 1) * 18})`} class="legend-line"><path class="band" d="M0,0 L10,0" /><text x={16} y={4}>±25 %</text></g>
      </g>
    </svg>
  );
}
