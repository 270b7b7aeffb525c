// The details (charts and tables): loaded next to the first view, not in it (main.jsx imports
// this module while the core starts). With them, the headline's answer (prerendered, so on screen
// at first paint) and the planner's slot (the planner itself is a chunk loaded when it opens), and
// their stylesheet.
import { useComputed } from '@preact/signals';

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
// Each part is a component of its own that reads the state's signals it shows, so an answer
// re-renders only what it changes: the breakdown and the parameter counts follow `shown` (numbers
// beside the headline's), everything else `settled` (state.js: the same answer, drawn once the
// new numbers are painted). The state has an answer to show when this is drawn (App.jsx).
export function Details({ state }) {
  const stale = useComputed(() => !state.result.value?.ok).value;
  return (
    <div class={`results-body details${stale ? ' stale' : ''}`} data-stale={stale ? 'true' : 'false'}>
      <div class="results-grid">
        <BreakdownPart state={state} />
        <PhasesPart state={state} />
      </div>
      <SweepPart state={state} />
      <GpuPart state={state} />
      <WaysPart state={state} stale={stale} />
      <ParametersPart state={state} />
      <ModelPart state={state} />
      <SettledMark state={state} />
    </div>
  );
}

// Whether the details show the answer on screen yet (they follow it by a paint): for tests and
// tools that read the page, which wait for data-settled="true".
function SettledMark({ state }) {
  const settled = state.settled.value === state.shown.value;
  return <span hidden data-testid="details-settled" data-settled={settled ? 'true' : 'false'} />;
}

// Whether a chart is drawn as a table, and the switch that changes it.
const tableView = (state, name) => ({
  asTable: state.tables.value.includes(name),
  onTable: (on) => state.showAsTable(name, on),
});

function BreakdownPart({ state }) {
  return <Breakdown result={state.shown.value.result} units={state.units.value} {...tableView(state, 'breakdown')} />;
}

function PhasesPart({ state }) {
  return <Phases result={state.settled.value.result} units={state.units.value} {...tableView(state, 'timeline')} />;
}

function SweepPart({ state }) {
  return (
    <Sweep
      sweep={state.sweep.value}
      previous={state.previousSweep.value}
      short={state.sweepName.value}
      onShort={(name) => (state.sweepName.value = name)}
      units={state.units.value}
      {...tableView(state, 'sweep')}
    />
  );
}

function GpuPart({ state }) {
  return (
    <GpuTable
      result={state.settled.value.result}
      units={state.units.value}
      onSelectGpu={(id) => state.setField('hardware.gpu', id)}
      {...tableView(state, 'gpus')}
    />
  );
}

// When the run fits: the ways to save memory (asked for from the core when opened).
function WaysPart({ state, stale }) {
  if (state.settled.value.result.fits.verdict !== 'fits') return null;
  return (
    <WaysToSave
      suggestions={state.suggestions}
      previous={state.previousSuggestions}
      units={state.units.value}
      stale={stale}
      onApply={state.applySuggestion}
      onOpen={() => (state.suggestionsWanted.value = true)}
    />
  );
}

function ParametersPart({ state }) {
  return <Parameters result={state.shown.value.result} />;
}

function ModelPart({ state }) {
  const { result, scaling } = state.settled.value;
  const units = state.units.value;
  return (
    <>
      <Scaling scaling={scaling} units={units} />
      <Notes result={result} />
      <ActivationTerms result={result} units={units} />
    </>
  );
}
