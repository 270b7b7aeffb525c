// The answer (first view): the headline and, when the run does not fit, what to change.
import { AccuracyLine, Headline } from './Headline.jsx';
import { Applied, WhatToChange } from './Suggestions.jsx';

// The answer: the headline and, when the run does not fit (or is tight), what to change. First on
// the page (and first on a phone); `stale`: the input is invalid and this is the last valid answer
// (greyed, and not marked busy: nothing is computing until the input is fixed; the banner says so).
// solve: the headline's answer (SolveAnswer, drawn by the details module), when it is there.
export function Answer({ result, units, stale, modelName, suggestions, previousSuggestions, applied, onApply, onUndo, solve = null }) {
  const fits = result.fits.verdict === 'fits';
  return (
    <div class={`results-body answer${stale ? ' stale' : ''}`} data-stale={stale ? 'true' : 'false'}>
      <Headline result={result} units={units} modelName={modelName} solve={solve} editHref="#inputs" />
      <AccuracyLine />
      {applied && <Applied applied={applied} onUndo={onUndo} />}
      {!fits && <WhatToChange result={result} suggestions={suggestions} previous={previousSuggestions} units={units} stale={stale} onApply={onApply} />}
    </div>
  );
}

