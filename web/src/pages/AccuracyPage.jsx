// The accuracy page, for users: how close memfit's estimates come to published measurements of
// real GPU runs, as numbers, a chart and a table; what that means when planning a run; and the
// full generated report one link away. Rendered to HTML when the page is built (no script runs on
// it). The estimates are the core's (computed at build time for each published run); the
// statistics are docs/data/accuracy_summary.json's.
import { formatBytes, formatCount, formatPercent } from '../format.js';
import { Scatter, kindLabel } from '../components/charts/Scatter.jsx';

const pct = (f) => formatPercent(Math.abs(f));
const signed = (f) => `${f < 0 ? '−' : '+'}${formatPercent(Math.abs(f))}`;
const times = (x) => `${x.toFixed(2)}×`;

// points: [{ id, kind, label, source, measured, predicted, error, expressible }]
export function AccuracyPage({ summary, points, sources }) {
  const low = 1 / (1 + summary.p90_signed_error);
  const high = 1 / (1 + summary.p10_signed_error);
  const within25 = points.filter((p) => Math.abs(p.error) <= 0.25).length;
  const under = points.filter((p) => p.error < 0).length;
  const kinds = [['full fine-tune / pre-training', 'Full fine-tune or pre-training'], ['LoRA', 'LoRA'], ['QLoRA', 'QLoRA'],
    ['other PEFT', 'Other PEFT methods']];
  return (
    <>
      <h1>How accurate is memfit?</h1>
      <p class="lead">
        memfit computes the memory of a training step from what PyTorch allocates for it. We check those numbers
        against {formatCount(summary.count)} memory measurements that framework authors and users published for real
        GPU runs (Hugging Face, torchtune, LitGPT, PEFT, FastGECToR, torchtitan), each recreated as a memfit configuration
        from what its source states.
      </p>
      <div class="headline doc-stats">
        <div class="stat">
          <div class="stat-label">Typical error</div>
          <div class="stat-value" data-testid="median-error">{formatPercent(summary.median_abs_error, { decimals: 1 })}</div>
          <div class="stat-note">median over {formatCount(summary.count)} runs; {formatCount(within25)} of them within 25 %</div>
        </div>
        <div class="stat">
          <div class="stat-label">Where real runs landed</div>
          <div class="stat-value">{times(low)} – {times(high)}</div>
          <div class="stat-note">80 % of the runs measured between these multiples of memfit's estimate</div>
        </div>
        <div class="stat">
          <div class="stat-label">Direction</div>
          <div class="stat-value">{signed(summary.median_signed_error)}</div>
          <div class="stat-note">memfit is lower than the measurement in {formatCount(under)} of {formatCount(points.length)} runs</div>
        </div>
      </div>

      <h2 id="chart">Estimate against measurement</h2>
      <p class="chart-summary" id="scatter-summary">
        Each mark is one published run: across, what was measured; up, memfit's estimate of the same quantity. Marks on
        the diagonal are exact; most sit a little below it (memfit lower), between the ±25 % lines.
      </p>
      <div class="scatter-box" tabIndex={0} role="region" aria-label="Chart: memfit's estimate against measured memory">
        <Scatter points={points} summaryId="scatter-summary" />
      </div>
      <details class="doc-table">
        <summary>The numbers behind the chart ({formatCount(points.length)} runs)</summary>
        <div class="table-scroll" tabIndex={0} role="region" aria-label="Every scored run">
          <table class="table" data-testid="accuracy-table">
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Kind</th>
                <th scope="col">Source</th>
                <th scope="col" class="num">Measured</th>
                <th scope="col" class="num">memfit</th>
                <th scope="col" class="num">Error</th>
              </tr>
            </thead>
            <tbody>
              {points.map((p) => (
                <tr key={p.id} data-id={p.id}>
                  <th scope="row">{p.label}</th>
                  <td>{kindLabel(p.kind)}</td>
                  <td>{p.source}</td>
                  <td class="num" data-bytes={p.measured}>{formatBytes(p.measured)}</td>
                  <td class="num" data-bytes={p.predicted}>{formatBytes(p.predicted)}</td>
                  <td class="num">{signed(p.error)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>

      <h2 id="planning">What this means when you plan a run</h2>
      <ul>
        <li>
          Next to its peak estimate the calculator shows where published runs like yours landed: between
          {' '}{times(low)} and {times(high)} the estimate for 80 % of them. Plan for the upper end when the run must not
          run out of memory.
        </li>
        <li>
          The exact parts are exact: parameter counts equal the published counts of real checkpoints, and the bytes of
          weights, gradients and optimizer states equal what PyTorch allocates. The activations saved for backward
          match real PyTorch modules to the byte on a 28-configuration grid.
        </li>
        <li>
          The large misses come from what memfit does not model: <code>torch.compile</code>, datasets padded to a
          length below the documented cap, FP8 training, framework-specific buffers and the caching allocator's
          fragmentation. When your run uses one of these, expect a wider margin.
        </li>
      </ul>

      <h2 id="kinds">By kind of run</h2>
      <div class="table-scroll" tabIndex={0} role="region" aria-label="Error by kind of run">
        <table class="table" data-testid="accuracy-kinds">
          <thead>
            <tr><th scope="col">Kind</th><th scope="col" class="num">Runs</th><th scope="col" class="num">Typical error</th><th scope="col" class="num">Median direction</th><th scope="col" class="num">Worst</th></tr>
          </thead>
          <tbody>
            {kinds.filter(([k]) => summary.by_kind[k]).map(([k, label]) => {
              const s = summary.by_kind[k];
              return (
                <tr key={k}>
                  <th scope="row">{label}</th>
                  <td class="num">{formatCount(s.count)}</td>
                  <td class="num">{pct(s.median_abs_error)}</td>
                  <td class="num">{signed(s.median_signed_error)}</td>
                  <td class="num">{pct(s.worst_abs_error)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>

      <h2 id="sources">Where the measurements come from</h2>
      <ul class="sources">
        {sources.map(([title, n]) => <li key={title}>{title} <span class="muted">({formatCount(n)} {n === 1 ? 'run' : 'runs'})</span></li>)}
      </ul>
      <p>
        Every case, its settings and why, the statistics broken down further, and the runs memfit could not
        describe: <a href="accuracy-report.html">the full report</a>.
      </p>
    </>
  );
}
