// The core's notes (conventions that applied) and warnings, as text.
import { fieldLabel } from '../../fields.js';
import { activationTermLabel } from '../../glossary.js';
import { plainMessage, plainText } from '../../words.js';
import { Bytes } from './Bytes.jsx';

export function Notes({ result }) {
  const notes = result.notes ?? [];
  const warnings = result.warnings ?? [];
  if (notes.length === 0 && warnings.length === 0) return null;
  return (
    <section class="card" aria-labelledby="h-notes">
      <h2 id="h-notes">Notes</h2>
      <ul class="notes" data-testid="notes">
        {warnings.map((w) => (
          <li key={`w${w.field}${w.message}`} class="warning">
            <strong>{fieldLabel(w.field)}:</strong> {plainMessage(w.message)}
          </li>
        ))}
        {notes.map((n) => <li key={n}>{plainMessage(n)}</li>)}
      </ul>
    </section>
  );
}

export function ActivationTerms({ result, units }) {
  const terms = result.activation_terms_per_layer ?? [];
  return (
    <details class="card terms">
      <summary>Activation terms per layer <span class="summary-note">one block, one micro-batch</span></summary>
      {terms.length === 0 ? (
        <p class="card-note">The core itemises no per-layer terms for this recipe (the textbook convention uses a closed formula).</p>
      ) : (
        <table class="table compact" data-testid="activation-terms">
          <tbody>
            {terms.map((t) => (
              <tr key={t.name}>
                <th scope="row" data-term={t.name}>{activationTermLabel(t.name)}</th>
                <td class="num"><Bytes bytes={t.bytes} units={units} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </details>
  );
}
