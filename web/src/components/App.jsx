import { useComputed } from '@preact/signals';
import { useEffect, useState } from 'preact/hooks';

import { ConfigForm } from './form/ConfigForm.jsx';
import { ErrorBanner } from './ErrorBanner.jsx';
import { Header } from './Header.jsx';
import { Answer } from './results/Answer.jsx';
import { SummaryBar } from './results/SummaryBar.jsx';
import { Field, fieldDomId } from './form/Field.jsx';
import { formatBytes } from '../format.js';
import { plainText } from '../words.js';
import { afterPaint } from '../afterPaint.js';

function focusField(path) {
  const el = document.getElementById(fieldDomId(path));
  if (!el) return;
  el.closest('details')?.setAttribute('open', '');
  el.focus();
}

// The banner naming the inputs to fix waits this long after an input turns invalid (the field
// itself is marked at once): clearing a field to type a new value would otherwise push the answer
// down and back up again at each keystroke.
const BANNER_DELAY_MS = 600;

// Its children, once they have stayed on the page for `ms`.
function Later({ ms, children }) {
  const [shown, setShown] = useState(false);
  useEffect(() => {
    const timer = setTimeout(() => setShown(true), ms);
    return () => clearTimeout(timer);
  }, []);
  return shown ? children : null;
}

// One sentence for screen readers, announced as the numbers change.
// An input the core refused is announced once, by the banner (an alert) when it appears, and by
// the field itself (its message is part of the field's description): not a third time here.
function summary(result, shown, units) {
  if (!result || !result.ok || !shown) return '';
  const r = shown.result;
  const verdict = { fits: 'fits', tight: 'is tight', does_not_fit: 'does not fit' }[r.fits.verdict] ?? r.fits.verdict;
  return `Device total ${formatBytes(r.device_total_bytes, units)}; ${verdict} on ${r.fits.name}.`;
}

// Each part below reads the signals it shows, so a keystroke re-renders the results (and the one
// field typed in), not the whole page.
function HeaderSlot({ state }) {
  // Prerendered at build time there is no address: the page's own is filled in once it runs.
  const here = typeof location === 'undefined' ? '' : `${location.origin}${location.pathname}`;
  const href = `${here}?${state.query.value}`;
  return (
    <Header
      units={state.units.value}
      onUnits={(u) => (state.units.value = u)}
      href={href}
      query={state.query.value}
      onReset={state.resetAll}
    />
  );
}

// The shown answer's model: the form's name for it when it was asked for.
const modelName = (state) => plainText(state.shown.value?.label ?? state.presetLabel.value);

// Why there is no answer: fields marked on the form, or (an error no field carries, like a run
// too large to count in bytes) the message above.
function emptyWords(result, state) {
  const marked = (result.errors ?? []).some((e) => state.fieldByPath.has(e.field));
  return marked ? 'No result yet: fix the highlighted fields and the estimate appears here.'
    : 'No result yet: change the inputs as the message above says and the estimate appears here.';
}

// The answer: banners, the headline and its answer, what to change, the planner when open.
// SolveAnswer and PlannerSlot come with the details module (`late`).
function AnswerSection({ state, late }) {
  const { SolveAnswer, PlannerSlot } = late;
  const result = state.result.value;
  const shown = state.shown.value;
  const units = state.units.value;
  const coreError = state.coreError.value;
  return (
    <section class="answer-area" id="results" aria-label="The answer" tabIndex={-1}>
      {coreError && (
        <div class="banner" role="alert" data-testid="core-error">
          <strong>The memfit core stopped: {coreError}.</strong> Reload the page to start it again.
        </div>
      )}
      <LinkNotes state={state} />
      {result && !result.ok && (
        <Later ms={BANNER_DELAY_MS}>
          <ErrorBanner
            errors={result.errors}
            hasResult={shown !== null}
            fieldByPath={state.fieldByPath}
            onFocusField={focusField}
          />
        </Later>
      )}
      <p class="visually-hidden" aria-live="polite">{summary(result, shown, units)}</p>
      {shown ? (
        <Answer
          result={shown.result}
          units={units}
          stale={!result?.ok}
          modelName={modelName(state)}
          suggestions={state.suggestions}
          previousSuggestions={state.previousSuggestions}
          applied={state.canUndo.value ? state.applied.value : null}
          onApply={state.applySuggestion}
          onUndo={state.undoSuggestion}
          solve={SolveAnswer && <SolveAnswer state={state} />}
        />
      ) : (
        <div class="empty-results">{result ? emptyWords(result, state) : 'Computing…'}</div>
      )}
      {PlannerSlot && <PlannerSlot state={state} Field={Field} />}
    </section>
  );
}

// What the share link held that the page could not use (unknown names, a bad view value): said
// once, in words, until dismissed; the rest of the link is shown as it reads.
function LinkNotes({ state }) {
  const notes = state.linkNotes.value;
  if (!notes.length) return null;
  return (
    <div class="banner link-notes" role="note" data-testid="link-notes">
      <strong>Part of this link could not be used as written:</strong> {notes.join('; ')}.{' '}
      <button type="button" class="link" onClick={() => {
        state.linkNotes.value = [];
        document.getElementById('results')?.focus();
      }}>Dismiss</button>
    </div>
  );
}

// Details: the charts and tables, drawn by `Details` (the details module, loaded next to the first
// view), which reads the answers it shows from the state itself; until there is an answer to
// show, an empty area.
function DetailsSection({ state, Details }) {
  const ready = useComputed(() => state.shown.value !== null && state.settled.value !== null).value;
  return (
    <section class="details-area" id="details" aria-label="Details">
      {ready && Details && <Details state={state} />}
    </section>
  );
}

function SummarySlot({ state }) {
  const shown = state.shown.value;
  if (!shown) return null;
  return <SummaryBar result={shown.result} stale={!state.result.value?.ok} units={state.units.value} />;
}

// Page order: the answer, the form, the details. Wide screens put the form in a column on the
// left; on a phone the answer comes first, then the form, then the charts.
// late: what the details module (components/results/Details.jsx, loaded next to the first view)
// draws: { Details, SolveAnswer, PlannerSlot }; the prerendered page has the headline's answer only.
// staged: draw the answer first and the form and the details a frame later (a share link: nothing
// prerendered is on screen, and the answer is what the reader came for); onDrawn runs once all of
// it is on the page.
export function App({ state, late = {}, staged = false, onDrawn }) {
  const [all, setAll] = useState(!staged);
  useEffect(() => {
    if (all) {
      onDrawn?.();
      return undefined;
    }
    return afterPaint(() => setAll(true));
  }, [all]);
  return (
    <div class="page">
      <nav class="skip-links" aria-label="Skip links">
        <a href="#results" class="skip-link">Skip to the answer</a>
        <a href="#preset-input" class="skip-link">Skip to the form</a>
      </nav>
      <HeaderSlot state={state} />
      <main class="layout" id="main">
        <AnswerSection state={state} late={late} />
        {all ? <ConfigForm state={state} /> : <div class="inputs" aria-busy="true" />}
        {all ? <DetailsSection state={state} Details={late.Details} /> : <section class="details-area" id="details" aria-label="Details" />}
      </main>
      <SummarySlot state={state} />
      <footer class="footer">
        Every number on this page comes from the memfit core (C++ compiled to WebAssembly), computed in your
        browser. GiB = 2<sup>30</sup> bytes, GB = 10<sup>9</sup> bytes. <a href="accuracy.html">How accurate is it?</a>
      </footer>
    </div>
  );
}
