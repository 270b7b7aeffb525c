import { fieldLabel } from '../fields.js';
import { plainMessage } from '../words.js';

// The inputs the core refused, each named in words: a form field is a button that takes the
// focus to it; anything else (the configuration as a whole, a link parameter) is its message alone.
// Over a last valid answer (shown faded) the banner lies on top of it, held in a slot that takes no
// room, so its coming and going while someone types never moves the page; with no answer yet it
// stands in the answer's place.
export function ErrorBanner({ errors, hasResult, fieldByPath, onFocusField }) {
  const banner = (
    <div class={`banner input-errors${hasResult ? ' over-answer' : ''}`} role="alert" data-testid="error-banner">
      <strong>
        {hasResult ? 'Showing the last valid result. ' : ''}
        {errors.length === 1 ? 'One input needs fixing:' : `${errors.length} inputs need fixing:`}
      </strong>
      <ul>
        {errors.map((e) => (
          <li key={`${e.field}:${e.message}`}>
            {fieldByPath.has(e.field) ? (
              <>
                <button type="button" class="link" onClick={() => onFocusField(e.field)}>
                  {fieldLabel(e.field)}
                </button>{' '}
              </>
            ) : (
              issueName(e.field)
            )}
            {plainMessage(e.message)}
          </li>
        ))}
      </ul>
    </div>
  );
  return hasResult ? <div class="banner-slot">{banner}</div> : banner;
}

// A problem outside the form's fields: named once, in words ("Configuration: …"), never as a
// path twice over.
function issueName(field) {
  const name = String(field ?? '').trim();
  if (!name || name === 'configuration' || name === '(configuration)') return 'Configuration: ';
  return `${fieldLabel(name)}: `;
}
