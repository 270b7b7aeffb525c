// On narrow screens, once the answer has scrolled out of view (while editing the form below it),
// this bar keeps the answer in sight. Hidden while the answer itself is visible.
import { useEffect, useState } from 'preact/hooks';

import { Bytes } from './Bytes.jsx';
import { VerdictBadge } from './Verdict.jsx';

// The card's name without its maker's words ("H100 SXM 80GB"): a phone's bar has room for little more.
const shortName = (name) => String(name ?? '').replace(/^(NVIDIA|AMD)( GeForce| Instinct)? /, '');

export function SummaryBar({ result, stale, units }) {
  const [answerVisible, setAnswerVisible] = useState(true);
  useEffect(() => {
    const answer = document.getElementById('results');
    if (!answer || typeof IntersectionObserver !== 'function') return undefined;
    const observer = new IntersectionObserver(([entry]) => setAnswerVisible(entry.isIntersecting));
    observer.observe(answer);
    return () => observer.disconnect();
  }, []);
  return (
    <a class={`summary-bar${stale ? ' stale' : ''}`} href="#results" aria-hidden="true" tabIndex={-1} hidden={answerVisible}>
      <span class="summary-total">
        <span class="muted">Device total</span> <strong><Bytes bytes={result.device_total_bytes} units={units} /></strong>
      </span>
      <span class="summary-verdict">
        <VerdictBadge verdict={result.fits.verdict} /> <span class="muted" title={result.fits.name}>{shortName(result.fits.name)}</span>
      </span>
    </a>
  );
}
