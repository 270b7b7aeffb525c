import { fieldLabel } from '../fields.js';

export function ErrorBanner({ errors, hasResult, fieldByPath, onFocusField }) {
  return (
    <div class="banner" role="alert" data-testid="error-banner">
      <strong>
        {hasResult ? 'Showing the last valid result. ' : ''}
        {errors.length === 1 ? 'One input needs fixing:' : `${errors.length} inputs need fixing:`}
      </strong>
      <ul>
        {errors.map((e) => (
          <li key={`${e.field}:${e.message}`}>
            {fieldByPath.has(e.field) ? (
              <button type="button" class="link" onClick={() => onFocusField(e.field)}>
                {fieldLabel(e.field)}
              </button>
            ) : (
              <code>{e.field}</code>
            )}{' '}
            <span class="muted">({e.field})</span> {e.message}
          </li>
        ))}
      </ul>
    </div>
  );
}
