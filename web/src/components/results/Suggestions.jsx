// What to change: the core's suggestions (suggestions()), each with the device total it would
// give and its verdict, and a button that applies it to the form. Prominent when the run does not
// fit (or is tight) on the chosen GPU; a folded list otherwise.
import { useEffect, useRef, useState } from 'preact/hooks';

import { fieldLabel } from '../../fields.js';
import { flatten } from '../../url.js';
import { plainMessage, plainText, valueWords } from '../../words.js';
import { Bytes } from './Bytes.jsx';
import { VerdictBadge } from './Verdict.jsx';

// The fields a patch sets, as "Micro-batch size 1 · Gradient accumulation 4" (also the planner's).
export function Changes({ patch }) {
  const items = flatten(patch);
  if (items.length === 0) return null;
  return (
    <span class="suggestion-changes">
      {items.map(([path, value], i) => (
        <span key={path}>
          {i > 0 && ' · '}
          {fieldLabel(path)}: <strong>{valueWords(path, value)}</strong>
        </span>
      ))}
    </span>
  );
}

// While the core works on the configuration on screen (`answer` null), the last list it gave stays,
// greyed and not applicable, so the page does not jump at every keystroke.
function SuggestionList({ answer, previous, units, disabled, onApply }) {
  if (!answer && previous?.ok && previous.suggestions?.length) {
    return <List list={previous.suggestions} units={units} updating onApply={onApply} />;
  }
  if (!answer) return <p class="card-note" aria-busy="true">The core is estimating the changes…</p>;
  if (!answer.ok) {
    return <p class="card-note">{(answer.errors ?? []).map((e) => e.message).join('; ')}</p>;
  }
  const list = answer.suggestions ?? [];
  if (list.length === 0) {
    return <p class="card-note" data-testid="no-suggestions">The core knows no single change that lowers this run's memory.</p>;
  }
  return <List list={list} units={units} disabled={disabled} onApply={onApply} />;
}

// One element for the current list and the previous one (`updating`), so that the answer arriving
// patches it in place.
function List({ list, units, disabled = false, updating = false, onApply }) {
  return (
    <ol
      class={`suggestions${updating ? ' updating' : ''}`}
      data-testid={updating ? 'suggestion-list-previous' : 'suggestion-list'}
      aria-busy={updating ? 'true' : undefined}
      aria-label={updating ? 'The changes for the previous values, while the core estimates the new ones' : undefined}
    >
      {list.map((s, i) => (
        <li key={s.title} class={`suggestion${i === 0 ? ' best' : ''}`} data-title={s.title} data-verdict={s.verdict}>
          <div class="suggestion-text">
            <span class="suggestion-title">{plainText(s.title)}</span>
            <span class="suggestion-detail">{plainMessage(s.detail)}</span>
            <Changes patch={s.patch} />
          </div>
          <div class="suggestion-result">
            <Bytes bytes={s.device_total_bytes} units={units} testid="suggestion-bytes" />
            <VerdictBadge verdict={s.verdict} />
          </div>
          <button
            type="button"
            class={`button${i === 0 && s.verdict === 'fits' ? ' primary' : ''}`}
            disabled={disabled || updating}
            title={updating ? 'Updating for the new values' : disabled ? 'Fix the highlighted inputs first' : `Apply: ${s.title}`}
            onClick={() => {
              focusNext = 'undo';
              onApply(s);
            }}
          >
            Apply
          </button>
        </li>
      ))}
    </ol>
  );
}

const INTRO = {
  does_not_fit: 'does not fit on',
  tight: 'is over the memory budget of',
};

// The run does not fit (or is tight): the card, open, right after the headline.
export function WhatToChange({ result, suggestions, previous, units, stale, onApply }) {
  const fit = result.fits;
  return (
    <section class={`card what-to-change verdict-${fit.verdict}`} aria-labelledby="h-change" data-testid="suggestions">
      <h2 id="h-change">What to change</h2>
      <p class="card-note">
        This run {INTRO[fit.verdict] ?? 'does not fit on'} the {fit.name}. Each change below is estimated by the core:
        the device total it gives per GPU, and whether that fits. Best first.
      </p>
      <SuggestionList answer={suggestions.value} previous={previous?.value} units={units} disabled={stale} onApply={onApply} />
    </section>
  );
}

// The run fits: a folded list, computed only when opened.
export function WaysToSave({ suggestions, previous, units, stale, onApply, onOpen }) {
  const [open, setOpen] = useState(false);
  return (
    <details
      class="card ways-to-save"
      data-testid="suggestions"
      onToggle={(e) => {
        setOpen(e.currentTarget.open);
        if (e.currentTarget.open) onOpen?.();
      }}
    >
      <summary>Ways to save memory <span class="summary-note">changes the core estimates for this run</span></summary>
      {open && <SuggestionList answer={suggestions.value} previous={previous?.value} units={units} disabled={stale} onApply={onApply} />}
    </details>
  );
}

// Where the focus goes after an Apply or Undo press, whose button is redrawn away with its list or
// its status: 'undo', 'results', or nowhere (Reset and typing keep theirs).
let focusNext = null;

// After Apply: what was applied, and the way back. The Apply button that was pressed is gone with
// its list, so focus moves to Undo; after Undo it moves to the answer.
export function Applied({ applied, onUndo }) {
  const undo = useRef(null);
  useEffect(() => {
    if (focusNext !== 'undo') return;
    focusNext = null;
    undo.current?.focus();
  }, [applied]);
  useEffect(() => () => {
    requestAnimationFrame(() => {
      if (focusNext !== 'results') return;
      focusNext = null;
      document.getElementById('results')?.focus();
    });
  }, []);
  return (
    <div class="applied" role="status" data-testid="applied">
      <span>Applied: <strong>{applied.title}</strong>.</span>
      <button type="button" class="link undo" data-testid="undo" ref={undo} onClick={() => {
        focusNext = 'results';
        onUndo();
      }}>Undo</button>
    </div>
  );
}
