// How the run fits on every GPU in the core's table (result.gpus), and the budget rule used.
import { formatPercent } from '../../format.js';
import { Bytes } from './Bytes.jsx';
import { VerdictBadge } from './Verdict.jsx';

const NBSP = '\u00a0';

export function GpuTable({ result, units, onSelectGpu }) {
  const fit = result.fits;
  const [lo, hi] = result.device_total_range_bytes ?? [];
  return (
    <section class="card" aria-labelledby="h-gpus">
      <h2 id="h-gpus">Which GPUs it fits</h2>
      <p class="card-note">
        Needs <Bytes bytes={fit.need_bytes} units={units} /> per GPU (device total); budget {formatPercent(fit.budget_fraction)} of each card.
        Choose a card to make it the configuration's GPU.
      </p>
      <div class="table-scroll">
        <table class="table gpus" data-testid="gpu-table">
          <thead>
            <tr>
              <th scope="col">GPU</th>
              <th scope="col" class="num col-memory">Memory</th>
              <th scope="col" class="num col-budget">Budget</th>
              <th scope="col" class="num">Headroom</th>
              <th scope="col">Verdict</th>
            </tr>
          </thead>
          <tbody>
            {(result.gpus ?? []).map((g) => (
              <tr key={g.gpu} data-gpu={g.gpu} class={g.gpu === fit.gpu ? 'selected' : ''} aria-current={g.gpu === fit.gpu ? 'true' : undefined}>
                <th scope="row">
                  <button type="button" class="link" onClick={() => onSelectGpu(g.gpu)} title={`Use ${g.name}`}>{g.name}</button>
                </th>
                <td class="num col-memory"><Bytes bytes={g.memory_bytes} units={units} /></td>
                <td class="num col-budget"><Bytes bytes={g.budget_bytes} units={units} /></td>
                <td class={`num ${g.headroom_bytes < 0 ? 'negative' : ''}`}><Bytes bytes={g.headroom_bytes} units={units} /></td>
                <td><VerdictBadge verdict={g.verdict} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div class="rule" data-testid="budget-rule">
        <h3 class="group-title">Budget rule</h3>
        <p>{fit.rule}</p>
        <p>
          The seeds plan to 80–85{NBSP}% of the card and keep a 10–20{NBSP}% fragmentation margin. This estimate uses
          fragmentation {formatPercent(result.fragmentation)} of the allocated memory for its point value; the
          device-total range <Bytes bytes={lo} units={units} /> – <Bytes bytes={hi} units={units} /> spans the margin.
        </p>
      </div>
    </section>
  );
}
