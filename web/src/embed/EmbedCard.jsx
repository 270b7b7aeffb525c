// The estimate as a compact card, for the iframe card (embed.html) and the web component
// (<memfit-estimate>): the headline (the peak carries data-testid="peak-allocated"), and for the
// larger views the breakdown, the GPU fit and the step timeline. Every number is the core's.
// Links leave the embedding page: a new tab, without an opener.
import { useState } from 'preact/hooks';

import { Breakdown } from '../components/results/Breakdown.jsx';
import { GpuTable } from '../components/results/GpuTable.jsx';
import { Headline } from '../components/results/Headline.jsx';
import { Phases } from '../components/results/Phases.jsx';
import { formatCount, formatPercent } from '../format.js';
import { count, medianAbsError } from '../accuracy.js';
import { errorLines } from './link.js';

const NEW_TAB = { target: '_blank', rel: 'noopener' };

export function EmbedCard({ result, units, view = 'card', modelName, openHref, accuracyHref, onSelectGpu }) {
  const [tables, setTables] = useState([]);
  const asTable = (name) => tables.includes(name);
  const onTable = (name) => (on) => setTables((t) => (on ? [...t, name] : t.filter((x) => x !== name)));
  if (!result) return <div class="embed-card embed-loading" aria-busy="true">Computing…</div>;
  if (!result.ok) {
    return (
      <div class="embed-card embed-error" role="alert">
        <strong>memfit cannot estimate this configuration:</strong>
        <ul>{errorLines(result).map((line) => <li key={line}>{line}</li>)}</ul>
        <a href={openHref} {...NEW_TAB}>Open in memfit</a>
      </div>
    );
  }
  return (
    <div class={`embed-card view-${view}`} data-view={view}>
      <Headline result={result} units={units} modelName={modelName} />
      {(view === 'breakdown' || view === 'full') && (
        <Breakdown result={result} units={units} asTable={asTable('breakdown')} onTable={onTable('breakdown')} />
      )}
      {view === 'full' && <Phases result={result} units={units} asTable={asTable('timeline')} onTable={onTable('timeline')} />}
      {(view === 'fit' || view === 'full') && (
        <GpuTable result={result} units={units} onSelectGpu={onSelectGpu} asTable={asTable('gpus')} onTable={onTable('gpus')} />
      )}
      <p class="embed-foot">
        <a href={openHref} {...NEW_TAB} data-testid="open-in-memfit">Open in memfit</a>
        <span class="muted"> · scored against {formatCount(count)} published runs, median error {formatPercent(medianAbsError, { decimals: 1 })} · </span>
        <a href={accuracyHref} {...NEW_TAB}>How accurate?</a>
      </p>
    </div>
  );
}
