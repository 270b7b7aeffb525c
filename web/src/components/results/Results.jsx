import { Breakdown } from './Breakdown.jsx';
import { GpuTable } from './GpuTable.jsx';
import { Headline } from './Headline.jsx';
import { ActivationTerms, Notes } from './Notes.jsx';
import { Parameters } from './Parameters.jsx';
import { Phases } from './Phases.jsx';
import { Scaling } from './Scaling.jsx';

// Everything the core answered, in reading order. `stale`: the input is invalid and this is the
// last valid answer (greyed).
export function Results({ result, scaling, units, stale, onSelectGpu }) {
  return (
    <div class={`results-body${stale ? ' stale' : ''}`} data-stale={stale ? 'true' : 'false'} aria-busy={stale}>
      <Headline result={result} units={units} />
      <div class="results-grid">
        <Breakdown result={result} units={units} />
        <Phases result={result} units={units} />
      </div>
      <GpuTable result={result} units={units} onSelectGpu={onSelectGpu} />
      <Parameters result={result} />
      <Scaling scaling={scaling} units={units} />
      <Notes result={result} />
      <ActivationTerms result={result} units={units} />
    </div>
  );
}
