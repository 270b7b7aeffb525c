// How the run fits on every GPU in the core's table (result.gpus): a fit bar per card (what
// nvidia-smi would show against the card's memory, the budget marked) in a table that is also
// the chart's fallback, and the budget rule used.
import { formatBytes, formatPercent, share } from '../../format.js';
import { plainText } from '../../words.js';
import { ChartCard } from '../charts/ChartCard.jsx';
import { Bytes } from './Bytes.jsx';
import { VerdictBadge } from './Verdict.jsx';

const NBSP = '\u00a0';

// A card that lacks what the training settings need (bf16 or FP8 tensor cores: the core's `lacks`)
// is listed with its memory but never counted as fitting.
const runs = (g) => g.runs !== false;

export function gpuSummary(result, units) {
  const gpus = result.gpus ?? [];
  const fitting = gpus.filter((g) => runs(g) && g.verdict === 'fits');
  const need = formatBytes(result.fits.need_bytes, units);
  if (fitting.length === 0) {
    const tight = gpus.filter((g) => runs(g) && g.verdict === 'tight');
    return `Needs ${need} per GPU: it fits within the budget on none of the ${gpus.length} cards${tight.length ? `; over the budget but within the card on ${tight.map((g) => g.name).join(', ')}` : ''}.`;
  }
  const smallest = fitting.reduce((a, g) => (g.memory_bytes < a.memory_bytes ? g : a));
  return `Needs ${need} per GPU: fits on ${fitting.length} of ${gpus.length} cards; the smallest that fits is the ${smallest.name}.`;
}

// need against memory: the bar fills to need / memory (capped, with an arrow when over the card).
function FitBar({ g, need }) {
  const over = need > g.memory_bytes;
  return (
    <span class="fitbar" aria-hidden="true">
      <span class={`fitbar-fill verdict-${g.verdict}`} style={{ width: `${over ? 100 : share(need, g.memory_bytes)}%` }} />
      {/* Past the card the bar is full and says how many times over; the budget tick would cross it. */}
      {!over && <span class="fitbar-budget" style={{ left: `${g.budget_bytes / g.memory_bytes * 100}%` }} />}
      {over && <span class="fitbar-over">{`×${(need / g.memory_bytes).toFixed(1)}`}</span>}
    </span>
  );
}

export function GpuTable({ result, units, onSelectGpu, asTable, onTable }) {
  const fit = result.fits;
  const [lo, hi] = result.device_total_range_bytes ?? [];
  const table = (bars) => (
    <div class="table-scroll" tabIndex={0} role="region" aria-label="GPUs: memory, budget, headroom and verdict">
      <table class={`table gpus${bars ? ' with-bars' : ''}`} data-testid="gpu-table">
        <thead>
          <tr>
            <th scope="col">GPU</th>
            {bars && <th scope="col" class="col-bar"><span class="visually-hidden">Share of the card used</span></th>}
            <th scope="col" class="num col-memory" title="What CUDA reports (the card's total less the driver's reserve), where a reading is published">Memory</th>
            <th scope="col" class="num col-budget">Budget</th>
            <th scope="col" class="num col-headroom">Headroom</th>
            <th scope="col">Verdict</th>
          </tr>
        </thead>
        <tbody>
          {(result.gpus ?? []).map((g) => (
            <tr key={g.gpu} data-gpu={g.gpu} class={[g.gpu === fit.gpu && 'selected', !runs(g) && 'lacks'].filter(Boolean).join(' ')} aria-current={g.gpu === fit.gpu ? 'true' : undefined}>
              <th scope="row">
                {onSelectGpu ? <button type="button" class="link" onClick={() => onSelectGpu(g.gpu)} title={`Use the ${g.name}`}>{g.name}</button> : g.name}
              </th>
              {bars && <td class="col-bar"><FitBar g={g} need={g.need_bytes ?? fit.need_bytes} /></td>}
              <td class="num col-memory" title={g.nvidia_smi_total_bytes !== g.memory_bytes ? `the card's total: ${formatBytes(g.nvidia_smi_total_bytes, units)}` : undefined}><Bytes bytes={g.memory_bytes} units={units} /></td>
              <td class="num col-budget"><Bytes bytes={g.budget_bytes} units={units} /></td>
              <td class={`num col-headroom${g.headroom_bytes < 0 ? ' negative' : ''}`}><Bytes bytes={g.headroom_bytes} units={units} /></td>
              <td>
                {runs(g)
                  ? <VerdictBadge verdict={g.verdict} />
                  : <span class="badge badge-lacks" data-verdict="lacks" title={`The ${g.name} has no ${g.lacks} tensor cores: these training settings do not run on it (memory: ${g.verdict.replaceAll('_', ' ')})`}>{`No ${g.lacks}`}</span>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
  return (
    <ChartCard
      id="gpus"
      title="Which GPUs it fits"
      note={<>Needs <Bytes bytes={fit.need_bytes} units={units} /> per GPU (what nvidia-smi would show); budget {formatPercent(fit.budget_fraction)} of each card. {onSelectGpu ? ' Choose a card to make it the configuration\'s GPU.' : ''}</>}
      summary={gpuSummary(result, units)}
      asTable={asTable}
      onTable={onTable}
      testid="gpu-card"
      chart={() => (
        <>
          {table(true)}
          <BudgetRule result={result} units={units} lo={lo} hi={hi} />
        </>
      )}
      table={(
        <>
          {table(false)}
          <BudgetRule result={result} units={units} lo={lo} hi={hi} />
        </>
      )}
    />
  );
}

function BudgetRule({ result, units, lo, hi }) {
  return (
    <div class="rule" data-testid="budget-rule">
      <h3 class="group-title">Budget rule</h3>
      <p>{plainText(result.fits.rule)}</p>
      <p>
        The source documents plan to 80–85{NBSP}% of the card and keep a 10–20{NBSP}% fragmentation margin. This estimate
        uses fragmentation {formatPercent(result.fragmentation)} of the allocated memory for its point value; the
        device-total range <Bytes bytes={lo} units={units} /> – <Bytes bytes={hi} units={units} /> spans the margin.
      </p>
    </div>
  );
}
