// A breakdown term with its glossary entry: what it is, how it is counted, where from. The entry
// shows on hover and on keyboard focus of the "?" button (Escape hides it, keeping the focus), and is the button's
// description for screen readers.
import { termWords } from '../glossary.js';

export function Term({ k, label }) {
  const w = termWords(k);
  const tipId = `tip-${k}`;
  return (
    <span class="term">
      {label ?? w.label}
      {w.formula && (
        <>
          <button
            type="button"
            class="term-info"
            aria-label={`About ${w.label}`}
            aria-describedby={tipId}
            // Escape hides the entry and leaves the focus where it is; it shows again on the next focus.
            onKeyDown={(e) => e.key === 'Escape' && e.currentTarget.classList.add('tip-hidden')}
            onBlur={(e) => e.currentTarget.classList.remove('tip-hidden')}
          >?</button>
          <span role="tooltip" id={tipId} class="tip">
            <strong>{w.label}</strong>{w.short ? `: ${w.short}.` : '.'}
            <span class="tip-line">Counted as {w.formula}.</span>
            <span class="tip-line">Source: {w.source}.</span>
          </span>
        </>
      )}
    </span>
  );
}
