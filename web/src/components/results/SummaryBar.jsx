// On narrow screens the results sit below a long form: this bar keeps the answer in view.
import { Bytes } from './Bytes.jsx';
import { VerdictBadge } from './Verdict.jsx';

export function SummaryBar({ result, stale, units }) {
  return (
    <a class={`summary-bar${stale ? ' stale' : ''}`} href="#results" aria-hidden="true" tabIndex={-1}>
      <span class="summary-total">
        <span class="muted">Device total</span> <strong><Bytes bytes={result.device_total_bytes} units={units} /></strong>
      </span>
      <span class="summary-verdict">
        <VerdictBadge verdict={result.fits.verdict} /> <span class="muted">{result.fits.name}</span>
      </span>
    </a>
  );
}
