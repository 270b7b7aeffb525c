// The step's phases (result.phases): memory allocated at each phase's high point.
import { Bytes } from './Bytes.jsx';
import { share } from '../../format.js';

export function Phases({ result, units }) {
  const phases = result.phases ?? [];
  const top = Math.max(0, ...phases.map((p) => p.bytes));
  return (
    <section class="card" aria-labelledby="h-phases">
      <h2 id="h-phases">One training step</h2>
      <p class="card-note">Memory allocated at each phase of the step; the highest is the peak.</p>
      <ol class="phases" data-testid="phases">
        {phases.map((p) => (
          <li key={p.name} class={p.bytes === result.peak_allocated_bytes ? 'peak' : ''} data-phase={p.name}>
            <span class="phase-label">{p.label}{p.bytes === result.peak_allocated_bytes && phases.length > 1 && <span class="peak-tag">peak</span>}</span>
            <span class="phase-track"><span class="phase-bar" style={{ width: `${share(p.bytes, top)}%` }} /></span>
            <span class="num"><Bytes bytes={p.bytes} units={units} /></span>
          </li>
        ))}
      </ol>
    </section>
  );
}
