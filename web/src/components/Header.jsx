import { ShareLink } from './ShareLink.jsx';

export function UnitToggle({ value, onChange }) {
  return (
    <div class="segmented" role="radiogroup" aria-label="Units">
      {[['GiB', 'GiB (2³⁰ bytes)'], ['GB', 'GB (10⁹ bytes)']].map(([u, title]) => (
        <button
          type="button"
          role="radio"
          aria-checked={value === u}
          class={value === u ? 'on' : ''}
          title={title}
          onClick={() => onChange(u)}
        >
          {u}
        </button>
      ))}
    </div>
  );
}

export function Header({ units, onUnits, href, onReset }) {
  return (
    <header class="header">
      <div class="brand">
        <svg class="logo" viewBox="0 0 36 36" aria-hidden="true">
          <rect width="36" height="36" rx="9" fill="currentColor" />
          <rect x="8" y="9" width="20" height="4" rx="1.5" fill="#fff" opacity="0.55" />
          <rect x="8" y="16" width="14" height="4" rx="1.5" fill="#fff" opacity="0.8" />
          <rect x="8" y="23" width="9" height="4" rx="1.5" fill="#fff" />
        </svg>
        <div>
          <h1>memfit</h1>
          <p class="tagline">Will this training run fit on the GPU? Memory for training and fine-tuning transformers.</p>
        </div>
      </div>
      <div class="header-actions">
        <UnitToggle value={units} onChange={onUnits} />
        <button type="button" class="button ghost" onClick={onReset}>Reset</button>
        <ShareLink href={href} />
      </div>
    </header>
  );
}
