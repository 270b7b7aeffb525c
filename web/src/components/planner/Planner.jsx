// The planner: every layout of this model on the chosen card, searched by the core in a Web Worker
// of its own (memfit-planner.wasm, state.askPlanner), the ones that fit ranked by step time (or
// cost), each with its per-GPU memory, step time, throughput, MFU, and the time and cost to train;
// Apply puts a plan in the form, and its exports are the engines' own files. A chunk of its own
// (its styles inside), loaded when the planner opens. Its inputs live in the page's state
// (state.planner, in the share link); the core's answers in a cache kept while it is closed.
import { useEffect, useRef, useState } from 'preact/hooks';

import { fieldLabel } from '../../fields.js';
import { formatCount, formatPercent } from '../../format.js';
import { termWords } from '../../glossary.js';
import {
  OPTION_WORDS, RANKS, STEP_PARTS, formatDuration, formatMoney, formatRate, formatTokens, layoutKey, layoutWords, planOptions,
  planPatch, plannerMessage, trainingWords,
} from '../../planner.js';
import { Bytes } from '../results/Bytes.jsx';
import { Changes } from '../results/Suggestions.jsx';
import { VerdictBadge } from '../results/Verdict.jsx';
import { addStyles } from '../addStyles.js';
import { Exports } from './Exports.jsx';
import css from './planner.css';

// How long the inputs (the planner's or the form's) must be still before the core plans again.
const SETTLE_MS = 300;

// The core's answers for one page state, kept while the planner is closed:
// { plan: { key, answer, ms }, exports: { key, answer }, follow: the layout to choose once re-planned }.
const caches = new WeakMap();

// The planner's requests and answers: the plans for the configuration on screen and the planner's
// inputs (asked at once when the planner opens, then once the inputs have been still for a moment),
// the chosen plan, and its exports. ms: from the request to the answer, measured on the page.
function usePlanner(state) {
  if (!caches.has(state)) caches.set(state, { plan: null, exports: null, follow: null, asked: false });
  const cache = caches.get(state);
  const inputs = state.planner.value;
  const shown = state.shown.value;
  const options = planOptions(inputs);
  const key = shown ? JSON.stringify([shown.key, options]) : null;
  const [plan, setPlan] = useState(cache.plan);
  const [exports, setExports] = useState(cache.exports);
  const [failure, setFailure] = useState('');
  const fail = (error) => setFailure(String(error?.message ?? error));
  const set = (changes) => {
    state.planner.value = { ...state.planner.value, ...changes };
  };

  useEffect(() => {
    if (!key || cache.plan?.key === key) return undefined;
    const ask = () => {
      const since = performance.now();
      state.askPlanner('plan', 'plan', [shown.config, options]).then((a) => {
        if (a === null) return;
        cache.plan = { key, answer: a, ms: performance.now() - since };
        setPlan(cache.plan);
        setFailure('');
        if (cache.follow !== null) {
          const i = (a.plans ?? []).findIndex((p) => layoutKey(p.config) === cache.follow);
          cache.follow = null;
          set({ plan: i + 1 });
        }
      }, fail);
    };
    if (!cache.asked) {
      cache.asked = true;
      ask();
      return undefined;
    }
    const timer = setTimeout(ask, SETTLE_MS);
    return () => clearTimeout(timer);
  }, [key]);

  const answer = plan?.answer ?? null;
  const plans = answer?.ok ? answer.plans ?? [] : [];
  const chosen = plans[inputs.plan - 1] ?? null;
  const exportsKey = chosen ? JSON.stringify(chosen.config) : null;
  useEffect(() => {
    if (!exportsKey || cache.exports?.key === exportsKey) return;
    state.askPlanner('exports', 'exports', [chosen.config]).then((a) => {
      if (a === null) return;
      cache.exports = { key: exportsKey, answer: a };
      setExports(cache.exports);
    }, fail);
  }, [exportsKey]);

  return {
    inputs, failure, plan, answer, plans, chosen,
    pending: key !== null && plan?.key !== key,
    exports: exports && exports.key === exportsKey ? exports.answer : null,
    setInput: (name, value) => set({ [name]: value, plan: 0 }),
    choose: (n) => set({ plan: inputs.plan === n ? 0 : n }),
    close: () => set({ open: 0 }),
    // The plan's fields merged into the form (Undo restores it); once re-planned, the same layout
    // is chosen again if the core still ranks it.
    apply(p, n) {
      const patch = planPatch(p.config, state.fieldValue, state.fieldByPath);
      if (Object.keys(patch).length === 0) return;
      cache.follow = layoutKey(p.config);
      const words = layoutWords(p.config);
      state.applySuggestion({ title: `plan ${n} (${words.gpus}${words.parallel ? `: ${words.parallel}` : ''})`, patch });
    },
  };
}

// A configuration field the planner shows next to its own inputs (goal, GPUs per node, price): the
// form's field, drawn here a second time under its own id.
function ConfigField({ state, path, Field }) {
  const field = state.fieldByPath.get(path);
  if (!field) return null;
  const issues = state.issues.value.byField.get(path);
  return (
    <Field
      field={field}
      domId={`planner-${path.replace(/\./g, '-')}`}
      value={state.fieldValue(path)}
      errors={issues?.errors}
      warnings={issues?.warnings}
      onChange={(v) => state.setField(path, v)}
    />
  );
}

// One of the planner's own inputs, as typed; the core's message about it under it.
function OptionInput({ planner, name, errors }) {
  const id = `planner-${name}`;
  const [label, hint] = OPTION_WORDS[name];
  const mine = errors.filter((e) => e.field === name);
  const describedBy = [mine.length && `${id}-error`, hint && `${id}-hint`].filter(Boolean).join(' ') || undefined;
  return (
    <div class={`field kind-text${mine.length ? ' invalid' : ''}`}>
      <div class="field-text">
        <label class="field-label" for={id}>{label}</label>
        {hint && <span class="field-hint" id={`${id}-hint`}>{hint}</span>}
      </div>
      <div class="field-control">
        <input
          id={id}
          type="text"
          inputMode="decimal"
          autoComplete="off"
          spellcheck={false}
          class="control"
          placeholder="auto"
          value={planner.inputs[name]}
          aria-invalid={mine.length > 0}
          aria-describedby={describedBy}
          onInput={(e) => planner.setInput(name, e.currentTarget.value)}
        />
      </div>
      {mine.map((e, i) => <p class="field-error" id={i === 0 ? `${id}-error` : undefined} key={e.message}>{plannerMessage(e.message)}</p>)}
    </div>
  );
}

function Inputs({ state, planner, errors, Field }) {
  const inputs = planner.inputs;
  return (
    <div class="planner-inputs" data-testid="planner-inputs">
      <fieldset class="planner-gpus">
        <legend class="field-label">GPUs <span class="field-hint">a range is searched by powers of two and whole nodes</span></legend>
        <OptionInput planner={planner} name="gpus_min" errors={errors} />
        <OptionInput planner={planner} name="gpus_max" errors={errors} />
      </fieldset>
      <ConfigField state={state} Field={Field} path="hardware.gpus_per_node" />
      <OptionInput planner={planner} name="global_batch_tokens" errors={errors} />
      <ConfigField state={state} Field={Field} path="training.goal" />
      <ConfigField state={state} Field={Field} path="hardware.price_per_gpu_hour" />
      <OptionInput planner={planner} name="train_tokens" errors={errors} />
      <div class="field planner-rank">
        <div class="field-text"><span class="field-label" id="planner-rank-label">{OPTION_WORDS.rank_by[0]}</span></div>
        <div class="segmented" role="radiogroup" aria-labelledby="planner-rank-label">
          {RANKS.map(([id, label]) => (
            <button type="button" role="radio" key={id} aria-checked={inputs.rank_by === id} class={inputs.rank_by === id ? 'on' : ''}
              tabIndex={inputs.rank_by === id ? 0 : -1} data-rank={id}
              onClick={() => planner.setInput('rank_by', id)}
              onKeyDown={(e) => {
                if (!['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown'].includes(e.key)) return;
                e.preventDefault();
                const other = RANKS.find(([r]) => r !== id)[0];
                planner.setInput('rank_by', other);
                e.currentTarget.parentElement.querySelector(`[data-rank="${other}"]`)?.focus();
              }}>
              {label}
            </button>
          ))}
        </div>
      </div>
      <div class="field kind-toggle">
        <div class="field-text">
          <label class="field-label" for="planner-keep_precision">{OPTION_WORDS.keep_precision[0]}</label>
          <span class="field-hint" id="planner-keep_precision-hint">{OPTION_WORDS.keep_precision[1]}</span>
        </div>
        <div class="field-control">
          <input id="planner-keep_precision" type="checkbox" class="toggle" checked={Boolean(inputs.keep_precision)}
            aria-describedby="planner-keep_precision-hint" onChange={(e) => planner.setInput('keep_precision', e.currentTarget.checked ? 1 : 0)} />
        </div>
      </div>
    </div>
  );
}

// The per-GPU memory of a plan by term, and its step time by part, in one line each.
function PlanParts({ plan, units }) {
  const terms = Object.entries(plan.breakdown ?? {}).filter(([, b]) => b > 0);
  const parts = Object.entries(plan.parts ?? {}).filter(([, s]) => s > 0);
  return (
    <div class="plan-parts">
      <p><span class="plan-parts-label">Per GPU:</span> {terms.map(([k, b], i) => (
        <span key={k}>{i > 0 && ' · '}{termWords(k).label} <Bytes bytes={b} units={units} /></span>
      ))}</p>
      <p><span class="plan-parts-label">One step:</span> {parts.map(([k, s], i) => (
        <span key={k} data-part={k}>{i > 0 && ' · '}{STEP_PARTS[k] ?? k.replace(/_s$/, '').replace(/_/g, ' ')} {formatDuration(s)}</span>
      ))}</p>
      <p class="plan-price">
        {formatCount(Math.round(plan.gpu_hours))} GPU-hours at {formatMoney(plan.price_per_gpu_hour)} per GPU-hour
        {plan.fits && <> · on the {plan.fits.name}: <VerdictBadge verdict={plan.fits.verdict} /> with <Bytes bytes={plan.fits.headroom_bytes} units={units} /> headroom</>}
      </p>
    </div>
  );
}

// What Apply would change in the form.
function PlanChanges({ patch }) {
  if (Object.keys(patch).length === 0) return <p class="plan-changes" data-testid="plan-changes">The form already holds this plan.</p>;
  return <p class="plan-changes" data-testid="plan-changes"><span class="plan-parts-label">Apply sets</span> <Changes patch={patch} /></p>;
}

function Stat({ label, value, text, testid }) {
  return (
    <div class="plan-stat">
      <dt>{label}</dt>
      <dd data-value={value} data-testid={testid}>{text}</dd>
    </div>
  );
}

function PlanItem({ state, plan, n, planner, units, tokensText, stale }) {
  const chosen = planner.inputs.plan === n;
  const words = layoutWords(plan.config);
  const moreId = `plan-${n}-more`;
  const noPrice = !(plan.price_per_gpu_hour > 0);
  return (
    <li class={`plan${chosen ? ' chosen' : ''}`} data-plan={n} aria-current={chosen ? 'true' : undefined}>
      <div class="plan-head">
        <span class="plan-rank" aria-hidden="true">{n}</span>
        <div class="plan-words">
          <span class="plan-layout"><span class="visually-hidden">Plan {n}: </span><strong>{words.gpus}</strong>{words.parallel && <>: {words.parallel}</>}</span>
          <span class="plan-detail">{words.sharding}</span>
          <span class="plan-detail">{trainingWords(plan.config)}</span>
        </div>
        <div class="plan-actions">
          <button type="button" class="button small" aria-expanded={chosen} aria-controls={chosen ? moreId : undefined}
            onClick={() => planner.choose(n)} data-testid="plan-more">
            {chosen ? 'Hide exports' : 'Details and exports'}
          </button>
          <button type="button" class={`button small${n === 1 ? ' primary' : ''}`} disabled={stale}
            title={stale ? 'Wait for the planner to finish' : `Apply plan ${n} to the form`} onClick={() => planner.apply(plan, n)} data-testid="plan-apply">
            Apply
          </button>
        </div>
      </div>
      <dl class="plan-stats">
        <div class="plan-stat">
          <dt>Per GPU (nvidia-smi)</dt>
          <dd><Bytes bytes={plan.device_total_bytes} units={units} testid="plan-device-total" /></dd>
        </div>
        <Stat label="Step time" value={plan.step_time_s} text={formatDuration(plan.step_time_s)} testid="plan-step" />
        <Stat label="Tokens per second" value={plan.tokens_per_s} text={formatRate(plan.tokens_per_s)} testid="plan-rate" />
        <Stat label="MFU" value={plan.mfu} text={formatPercent(plan.mfu, { decimals: 1 })} testid="plan-mfu" />
        <Stat label={`${tokensText} tokens in`} value={plan.train_time_s} text={formatDuration(plan.train_time_s)} testid="plan-time" />
        <Stat label="Cost" value={plan.cost_usd} text={noPrice ? 'no price: set one' : formatMoney(plan.cost_usd)} testid="plan-cost" />
      </dl>
      {chosen && (
        <div class="plan-more" id={moreId}>
          <PlanChanges patch={planPatch(plan.config, state.fieldValue, state.fieldByPath)} />
          <PlanParts plan={plan} units={units} />
          <Exports exports={planner.exports} n={n} />
        </div>
      )}
    </li>
  );
}

// The fastest layout of each GPU count searched: how time and cost change with the count.
function ByGpuCount({ rows, units, tokensText }) {
  if (!rows?.length) return null;
  return (
    <details class="plan-counts" data-testid="plan-counts" open>
      <summary>The fastest layout at each GPU count <span class="summary-note">{rows.length} counts</span></summary>
      <div class="table-scroll" tabIndex={0} role="region" aria-label="The fastest layout at each GPU count">
        <table class="table compact">
          <thead>
            <tr>
              <th scope="col" class="num">GPUs</th>
              <th scope="col" class="num">Per GPU (nvidia-smi)</th>
              <th scope="col" class="num">Step time</th>
              <th scope="col" class="num">Tokens per second</th>
              <th scope="col" class="num">MFU</th>
              <th scope="col" class="num">{tokensText} tokens in</th>
              <th scope="col" class="num">Cost</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.num_gpus} data-gpus={r.num_gpus}>
                <th scope="row" class="num">{formatCount(r.num_gpus)}</th>
                <td class="num"><Bytes bytes={r.device_total_bytes} units={units} /></td>
                <td class="num" data-value={r.step_time_s}>{formatDuration(r.step_time_s)}</td>
                <td class="num" data-value={r.tokens_per_s}>{formatRate(r.tokens_per_s)}</td>
                <td class="num" data-value={r.mfu}>{formatPercent(r.mfu, { decimals: 1 })}</td>
                <td class="num" data-value={r.train_time_s}>{formatDuration(r.train_time_s)}</td>
                <td class="num" data-value={r.cost_usd}>{r.cost_usd > 0 ? formatMoney(r.cost_usd) : '\u2014'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </details>
  );
}

// What the planner did, in one sentence for everyone (and announced to screen readers).
function Status({ planner, gpu, valid }) {
  const { failure, plan: a } = planner;
  const r = a?.answer;
  if (failure) return <>The planner stopped: {failure}. Reload the page to start it again.</>;
  if (!valid) return <>The planner plans a valid configuration: fix the highlighted fields of the form first.</>;
  if (!r) return <>The core is searching the layouts…</>;
  if (planner.pending) return <>The core is searching the layouts again…</>;
  if (!r.ok) return <>The planner cannot search these inputs: fix the highlighted values.</>;
  const searched = r.search?.layouts;
  const found = r.plans?.length ?? 0;
  return (
    <>
      {found > 0 ? `${found} plan${found === 1 ? '' : 's'} that fit on the ${gpu}` : `No layout fits on the ${gpu} in this GPU range: widen it, or change the form`}
      ; {formatCount(searched)} layouts searched in {formatCount(Math.round(a.ms))} ms (in a background worker).
    </>
  );
}

// Field: the form's field component (handed down: see PlannerSlot.jsx).
export function Planner({ state, Field, autoFocus = false }) {
  const planner = usePlanner(state);
  const heading = useRef(null);
  useEffect(() => {
    addStyles('planner-styles', css);
    if (autoFocus) heading.current?.focus();
  }, []);
  const units = state.units.value;
  const shown = state.shown.value;
  const r = planner.answer;
  const errors = r && !r.ok ? r.errors ?? [] : [];
  const inputNames = new Set(Object.keys(OPTION_WORDS));
  const otherErrors = errors.filter((e) => !inputNames.has(e.field));
  const stale = planner.pending;
  const tokensText = formatTokens(r?.plans?.[0]?.train_tokens);
  const close = () => {
    planner.close();
    document.getElementById('open-planner')?.focus();
  };
  return (
    <section class="card planner" id="planner" aria-labelledby="h-planner" data-testid="planner">
      <div class="card-head">
        <h2 id="h-planner" ref={heading} tabIndex={-1}>Plan GPUs and layout</h2>
        <button type="button" class="button ghost small" onClick={close} data-testid="close-planner">Close</button>
      </div>
      <p class="card-note">
        The core tries every layout of this model on the {shown?.result.fits.name ?? 'chosen GPU'}: data, tensor, pipeline, context and
        expert parallelism, ZeRO / FSDP sharding, checkpointing, micro-batch and accumulation, offload and precision. It keeps
        those that fit within the memory budget and ranks them by estimated step time or cost. Unlike the headline's answer,
        which keeps the form's settings and only adds GPUs with ZeRO-3 / FSDP, a plan may change the precision (unless
        {' '}<em>Keep the form's precision</em> is on), offload states to the CPU or recompute activations, so it can need
        fewer GPUs.
      </p>
      <Inputs state={state} planner={planner} errors={errors} Field={Field} />
      <p class="planner-status" role="status" aria-live="polite" data-testid="planner-status">
        <Status planner={planner} gpu={shown?.result.fits.name ?? 'GPU'} valid={shown !== null} />
      </p>
      {otherErrors.length > 0 && (
        <ul class="planner-errors" role="alert">
          {otherErrors.map((e) => (
            <li key={e.field + e.message}>{e.field.startsWith('(') ? 'The planner' : fieldLabel(e.field)}: {plannerMessage(e.message)}</li>
          ))}
        </ul>
      )}
      {r?.ok && r.notes?.length > 0 && (
        <ul class="planner-notes" data-testid="planner-notes">
          {r.notes.map((n) => <li key={n}>{plannerMessage(n)}</li>)}
        </ul>
      )}
      {r?.ok && (
        <div class={stale ? 'stale' : ''} aria-busy={stale}>
          <ol class="plans" data-testid="plans">
            {planner.plans.map((plan, i) => (
              <PlanItem key={i} state={state} plan={plan} n={i + 1} planner={planner} units={units} tokensText={tokensText} stale={stale} />
            ))}
          </ol>
          <ByGpuCount rows={r.best_per_gpu_count} units={units} tokensText={tokensText} />
        </div>
      )}
    </section>
  );
}

