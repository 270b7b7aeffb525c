// The details (charts and tables): loaded next to the first view, not in it (main.jsx imports
// this module while the core starts). With them, the headline's answer (prerendered, so on screen
// at first paint) and the planner's slot (the planner itself is a chunk loaded when it opens), and
// their stylesheet.
import css from '../../details.css';
import { addStyles } from '../addStyles.js';
import { Breakdown } from './Breakdown.jsx';
import { GpuTable } from './GpuTable.jsx';
import { ActivationTerms, Notes } from './Notes.jsx';
import { Parameters } from './Parameters.jsx';
import { Phases } from './Phases.jsx';
import { Scaling } from './Scaling.jsx';
import { Sweep } from './Sweep.jsx';
import { WaysToSave } from './Suggestions.jsx';

export { SolveAnswer } from './SolveAnswer.jsx';
export { PlannerSlot } from '../planner/PlannerSlot.jsx';

// The details' styles come with them (details.css), before they are drawn.
if (typeof document !== 'undefined') addStyles('details-styles', css);

// Everything else the core answered, in reading order: the charts (each with its table), the GPU
// table, the ways to save memory when the run fits, the model, the scaling table, notes.
export function Details({ result, scaling, sweep, previousSweep, units, stale, view, onSelectGpu, suggestions, previousSuggestions, onWantSuggestions, onApply }) {
  const fits = result.fits.verdict === 'fits';
  const asTable = (name) => view.tables.includes(name);
  const onTable = (name) => (on) => view.onTable(name, on);
  return (
    <div class={`results-body details${stale ? ' stale' : ''}`} aria-busy={stale}>
      <div class="results-grid">
        <Breakdown result={result} units={units} asTable={asTable('breakdown')} onTable={onTable('breakdown')} />
        <Phases result={result} units={units} asTable={asTable('timeline')} onTable={onTable('timeline')} />
      </div>
      <Sweep sweep={sweep} previous={previousSweep} short={view.sweep} onShort={view.onSweep} units={units} asTable={asTable('sweep')} onTable={onTable('sweep')} />
      <GpuTable result={result} units={units} onSelectGpu={onSelectGpu} asTable={asTable('gpus')} onTable={onTable('gpus')} />
      {fits && <WaysToSave suggestions={suggestions} previous={previousSuggestions} units={units} stale={stale} onApply={onApply} onOpen={onWantSuggestions} />}
      <Parameters result={result} />
      <Scaling scaling={scaling} units={units} />
      <Notes result={result} />
      <ActivationTerms result={result} units={units} />
    </div>
  );
}
