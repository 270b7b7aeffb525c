import { Breakdown } from './Breakdown.jsx';
import { GpuTable } from './GpuTable.jsx';
import { AccuracyLine, Headline } from './Headline.jsx';
import { ActivationTerms, Notes } from './Notes.jsx';
import { Parameters } from './Parameters.jsx';
import { Phases } from './Phases.jsx';
import { Scaling } from './Scaling.jsx';
import { Applied, WaysToSave, WhatToChange } from './Suggestions.jsx';

// Everything the core answered, in reading order. `stale`: the input is invalid and this is the
// last valid answer (greyed). When the run does not fit (or is tight), what to change comes right
// after the headline; when it fits, the ways to save memory wait, folded, below the GPU table.
export function Results({ result, scaling, units, stale, onSelectGpu, suggestions, onWantSuggestions, applied, onApply, onUndo }) {
  const fits = result.fits.verdict === 'fits';
  const change = { suggestions, units, stale, onApply };
  return (
    <div class={`results-body${stale ? ' stale' : ''}`} data-stale={stale ? 'true' : 'false'} aria-busy={stale}>
      <Headline result={result} units={units} />
      <AccuracyLine />
      {applied && <Applied applied={applied} onUndo={onUndo} />}
      {!fits && <WhatToChange result={result} {...change} />}
      <div class="results-grid">
        <Breakdown result={result} units={units} />
        <Phases result={result} units={units} />
      </div>
      <GpuTable result={result} units={units} onSelectGpu={onSelectGpu} />
      {fits && <WaysToSave {...change} onOpen={onWantSuggestions} />}
      <Parameters result={result} />
      <Scaling scaling={scaling} units={units} />
      <Notes result={result} />
      <ActivationTerms result={result} units={units} />
    </div>
  );
}
