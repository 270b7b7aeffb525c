import { useState } from 'preact/hooks';

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
          data-unit={u}
          tabIndex={value === u ? 0 : -1}
          onClick={() => onChange(u)}
          // A radio group: one stop for Tab, the arrow keys choose (and move the focus).
          onKeyDown={(e) => {
            if (!['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown'].includes(e.key)) return;
            e.preventDefault();
            const other = u === 'GiB' ? 'GB' : 'GiB';
            onChange(other);
            e.currentTarget.parentElement.querySelector(`[data-unit="${other}"]`)?.focus();
          }}
        >
          {u}
        </button>
      ))}
    </div>
  );
}

// The Embed dialog is a chunk of its own, loaded on the first click.
let loadEmbed = null;
function EmbedButton({ query }) {
  const [Dialog, setDialog] = useState(null);
  const [open, setOpen] = useState(false);
  const show = () => {
    loadEmbed ??= import('./EmbedDialog.jsx');
    loadEmbed.then((m) => {
      setDialog(() => m.EmbedDialog);
      setOpen(true);
    });
  };
  return (
    <>
      <button type="button" class="button ghost" onClick={show} data-testid="embed-button">Embed</button>
      {open && Dialog && <Dialog query={query} onClose={() => setOpen(false)} />}
    </>
  );
}

export function Header({ units, onUnits, href, onReset, query }) {
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
        {query !== undefined && <EmbedButton query={query} />}
        <ShareLink href={href} />
      </div>
    </header>
  );
}
