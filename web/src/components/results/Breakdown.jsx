// Where the memory goes: result.breakdown as a stacked bar and a table (which is the legend).
import { Bytes } from './Bytes.jsx';
import { formatBytes, share } from '../../format.js';

export const BREAKDOWN_ROWS = [
  ['parameters', 'Parameters', 'weights the model computes with'],
  ['master_weights', 'Master weights', 'fp32 copy kept for the optimizer'],
  ['weight_copies', 'Weight copies', '16-bit / FP8 autocast copies, alive forward → backward'],
  ['gradients', 'Gradients', ''],
  ['optimizer_states', 'Optimizer states', ''],
  ['activations', 'Activations', 'saved for backward at the end of forward'],
  ['logits_and_loss', 'Logits and loss', 'output head and loss at their largest'],
  ['overhead', 'CUDA context and workspaces', 'outside the caching allocator'],
];
const OFF_GPU = 'offloaded';

// Rows in a fixed order, then any key the core adds later.
export function breakdownRows(breakdown) {
  const known = new Set([...BREAKDOWN_ROWS.map(([k]) => k), OFF_GPU]);
  const extra = Object.keys(breakdown).filter((k) => !known.has(k)).map((k) => [k, k.replace(/_/g, ' '), '']);
  return [...BREAKDOWN_ROWS, ...extra].filter(([k]) => typeof breakdown[k] === 'number');
}

export function Breakdown({ result, units }) {
  const b = result.breakdown;
  const rows = breakdownRows(b);
  const scale = rows.reduce((sum, [k]) => sum + Math.max(0, b[k]), 0);  // bar widths only
  return (
    <section class="card" aria-labelledby="h-breakdown">
      <h2 id="h-breakdown">Where the memory goes</h2>
      <p class="card-note">Per GPU, each component at its largest. They do not all peak together: the step's peak is in the phases below.</p>
      <div class="stacked" role="img" aria-label={rows.filter(([k]) => b[k] > 0).map(([k, label]) => `${label} ${formatBytes(b[k], units)}`).join(', ')}>
        {rows.map(([k, label]) => b[k] > 0 && (
          <div key={k} class={`seg seg-${k}`} style={{ width: `${share(b[k], scale)}%` }} title={`${label}: ${formatBytes(b[k], units)}`} />
        ))}
      </div>
      <table class="table breakdown" data-testid="breakdown">
        <thead>
          <tr><th scope="col">Component</th><th scope="col" class="num">Per GPU</th></tr>
        </thead>
        <tbody>
          {rows.map(([k, label, note]) => (
            <tr key={k} data-key={k} class={b[k] === 0 ? 'zero' : ''}>
              <th scope="row">
                <span class={`swatch seg-${k}`} aria-hidden="true" />
                {label}
                {note && <span class="row-note"> · {note}</span>}
              </th>
              <td class="num"><Bytes bytes={b[k]} units={units} testid={`breakdown-${k}`} /></td>
            </tr>
          ))}
          {typeof b[OFF_GPU] === 'number' && (
            <tr data-key={OFF_GPU} class={`off-gpu${b[OFF_GPU] === 0 ? ' zero' : ''}`}>
              <th scope="row"><span class="swatch swatch-off" aria-hidden="true" />Offloaded to CPU memory<span class="row-note"> · not on the GPU</span></th>
              <td class="num"><Bytes bytes={b[OFF_GPU]} units={units} testid={`breakdown-${OFF_GPU}`} /></td>
            </tr>
          )}
        </tbody>
      </table>
    </section>
  );
}
