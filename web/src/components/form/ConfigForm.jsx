// The configuration form: the preset picker and import, then every schema field by section.
import { computed } from '@preact/signals';
import { useEffect, useMemo, useState } from 'preact/hooks';

import { choicesNotApplying, fieldApplies, isDefaultValue, whenItApplies } from '../../fields.js';
import { getPath } from '../../paths.js';
import { formatBytes, formatCount } from '../../format.js';
import { plainText } from '../../words.js';
import { Field } from './Field.jsx';
import { PresetPicker } from './PresetPicker.jsx';

// The issues the core reports for one field, the same object while their text is unchanged (so a
// field re-renders only when its own value or messages change, not on every keystroke).
function fieldIssues(state, path) {
  let key = '';
  let last;
  return computed(() => {
    const found = state.issues.value.byField.get(path);
    const next = found ? JSON.stringify(found) : '';
    if (next !== key) {
      key = next;
      last = found;
    }
    return last;
  });
}

// One field, subscribed to its own value, messages and marks only. A field the core does not
// read under the current settings (the schema's applies_when) is disabled with the reason; in a
// "More" group it is left out unless it holds something other than its default.
function FieldSlot({ f, state, options, markEdits, hideInactive }) {
  const path = f.field;
  const signals = useMemo(() => ({
    value: computed(() => state.fieldValue(path)),
    issues: fieldIssues(state, path),
    // Why the field does not apply now ('' when it does).
    notApplying: computed(() => whenItApplies(f, state.fieldValue)),
    // Choices naming parts the model lacks, as one string so the field redraws only when it changes.
    choicesOff: computed(() => (f.choices_apply_when ? JSON.stringify(choicesNotApplying(f, state.fieldValue)) : '')),
    edited: computed(() => state.isEdited(path)),
  }), [state, path, f]);
  const found = signals.issues.value;
  const notApplying = signals.notApplying.value;
  const inactive = notApplying !== '';
  if (hideInactive && inactive && !found && isDefaultValue(f, signals.value.value)) return null;
  return (
    <Field
      field={f}
      value={signals.value.value}
      errors={found?.errors}
      warnings={found?.warnings}
      options={options}
      inactive={inactive}
      inactiveNote={notApplying}
      choicesOff={signals.choicesOff.value ? JSON.parse(signals.choicesOff.value) : undefined}
      changed={markEdits && signals.edited.value}
      onChange={(v) => state.setField(path, v)}
    />
  );
}

// foldMore: a "More" group is folded (MoreGroup); inside the folded architecture it is not.
function FieldGroup({ group, state, gpuOptions, markEdits = false, foldMore = false }) {
  if (foldMore && group.title === 'More') return <MoreGroup group={group} state={state} />;
  return (
    <div class="group">
      {group.title && <h3 class="group-title">{group.title}</h3>}
      {group.fields.map((f) => (
        <FieldSlot
          key={f.field}
          f={f}
          state={state}
          options={f.field === 'hardware.gpu' ? gpuOptions : undefined}
          markEdits={markEdits}
          hideInactive={group.title === 'More'}
        />
      ))}
    </div>
  );
}

// A section's "More" fields. The knobs that apply to the default run (the implementation's, the
// allocator's, the price) are folded until opened, and opened by a value the core refuses; the
// fold says how many hold something other than their default, so a setting from a link or a
// suggestion is never out of sight unannounced. A field that a choice brings in (GaLore's rank
// once GaLore is the optimizer, FSDP's knobs once ZeRO-3 is on) is drawn above the fold while it
// applies or holds a value, as before.
function MoreGroup({ group, state }) {
  const [open, setOpen] = useState(false);
  const { folded, brought } = useMemo(() => {
    const atDefaults = (path) => getPath(state.defaults, path);
    const folded = group.fields.filter((f) => fieldApplies(f, atDefaults));
    return { folded, brought: group.fields.filter((f) => !folded.includes(f)) };
  }, [state, group]);
  // The fold counts what opening it shows (FieldSlot leaves out a field that is not read now, at
  // its default and without a message), and is left out when that is nothing.
  const counts = useMemo(() => computed(() => {
    const issues = state.issues.value.byField;
    let set = 0;
    let visible = 0;
    let wrong = false;
    for (const f of folded) {
      const changed = !isDefaultValue(f, state.fieldValue(f.field));
      const found = issues.get(f.field);
      if (changed) set += 1;
      if (found?.errors.length) wrong = true;
      if (changed || found || fieldApplies(f, state.fieldValue)) visible += 1;
    }
    // A string, so the fold re-renders only when one of the three changes (not at every answer).
    return `${set}|${visible}|${wrong ? 1 : 0}`;
  }), [state, folded]);
  const [set, visible, wrong] = counts.value.split('|').map(Number);
  const shown = open || wrong === 1;  // a boolean: a 0 would print as text and as open="0"
  return (
    <>
      <div class="group">
        <h3 class="group-title">For these choices</h3>
        {brought.map((f) => <FieldSlot key={f.field} f={f} state={state} hideInactive />)}
      </div>
      {visible > 0 && (
        <details class="group more" open={shown} onToggle={(e) => setOpen(e.currentTarget.open)}>
          <summary>
            More settings <span class="summary-note">{set ? `${set} changed` : visible === 1 ? '1 field' : `${visible} fields`}</span>
          </summary>
          {shown && folded.map((f) => <FieldSlot key={f.field} f={f} state={state} hideInactive />)}
        </details>
      )}
    </>
  );
}

// Whether the model is no longer exactly a preset's.
const isEdited = (state) => state.presetId.value === '' || state.presetLabel.value.startsWith('custom');

// The architecture is long: folded by default, opened when one of its fields is wrong.
function Architecture({ section, state }) {
  const [open, setOpen] = useState(false);
  const hasErrorSignal = useMemo(() => computed(() => {
    const issues = state.issues.value.byField;
    return section.groups.some((g) => g.fields.some((f) => issues.get(f.field)?.errors.length));
  }), [state, section]);
  const hasError = hasErrorSignal.value;
  const edited = isEdited(state);
  return (
    <details class="architecture" open={open || hasError} onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>
        Architecture <span class="summary-note">{edited ? 'edited' : 'from the preset'}</span>
      </summary>
      {(open || hasError) &&
        section.groups.map((g) => <FieldGroup key={g.title} group={g} state={state} markEdits={state.presetId.value !== ''} />)}
    </details>
  );
}


// A preset's limits, shown before they bite: a learned position table caps the sequence length.
// When the sequence is longer, the two ways out are offered.
function Limits({ state }) {
  const kind = state.fieldValue('model.position_embedding');
  const max = Number(state.fieldValue('model.max_position_embeddings'));
  if (kind !== 'learned' || !Number.isInteger(max)) return null;
  const raw = state.fieldValue('training.seq_len');
  const seq = Number(raw);
  const over = Number.isFinite(seq) && seq > max;
  return (
    <div class={`limit-note${over ? ' over' : ''}`} data-testid="preset-limit" role={over ? 'alert' : undefined}>
      {over ? (
        <>
          <p>
            This model has a learned position table of {formatCount(max)} positions: it cannot read sequences of{' '}
            {formatCount(seq)} tokens.
          </p>
          <div class="inline">
            <button type="button" class="button small" data-testid="limit-use-max" onClick={() => state.setField('training.seq_len', String(max))}>
              Use {formatCount(max)} tokens
            </button>
            <button type="button" class="button small ghost" data-testid="limit-extend" onClick={() => state.setField('model.max_position_embeddings', String(seq))}>
              Extend the table to {formatCount(seq)} positions
            </button>
          </div>
        </>
      ) : (
        <p>Learned positions: sequences of up to {formatCount(max)} tokens.</p>
      )}
    </div>
  );
}

const NO_ERRORS = [];

function PresetSlot({ state }) {
  const errorsSignal = useMemo(() => fieldIssues(state, 'model.preset'), [state]);
  return (
    <PresetPicker
      presets={state.presets}
      value={state.presetId.value}
      label={plainText(state.presetLabel.value)}
      edited={isEdited(state)}
      errors={errorsSignal.value?.errors ?? NO_ERRORS}
      onChange={state.selectPreset}
    >
      <Limits state={state} />
    </PresetPicker>
  );
}

// Import from Hugging Face: the fold is drawn at once; what is inside (the paste box, the Hub
// fetch, the answer) is loaded when it is first opened (it is not part of the first view).
let loadImport = null;
function HfImportSlot({ state }) {
  const [Body, setBody] = useState(null);
  const [open, setOpen] = useState(false);
  const busy = state.imported.value !== null || state.hub.value.status !== 'idle';
  const shown = open || busy;
  useEffect(() => {
    if (!shown || Body) return;
    loadImport ??= import('./HfImport.jsx');
    loadImport.then((m) => setBody(() => m.HfImportBody));
  }, [shown, Body]);
  return (
    <details class="import" open={shown} onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Import from Hugging Face</summary>
      {shown && (Body ? (
        <Body
          text={state.pasteText.value}
          onText={(t) => (state.pasteText.value = t)}
          onImport={(t) => state.importConfig(t)}
          hub={state.hub.value}
          onFetch={state.fetchFromHub}
          answer={state.imported.value}
        />
      ) : <p class="field-hint">Loading…</p>)}
    </details>
  );
}

// The form reads only the units itself (the GPU choices' labels); each part below subscribes to
// what it shows, so typing in one field re-renders that field and nothing else of the form.
export function ConfigForm({ state }) {
  const units = state.units.value;
  const gpuOptions = useMemo(
    // The memory a run can use, as the core counts it in every verdict.
    () => state.gpus.map((g) => ({ value: g.id, label: `${g.name} · ${formatBytes(g.usable_bytes, units)}` })),
    [state, units]);
  const sections = state.sections;
  const model = sections.find((s) => s.id === 'model');

  return (
    <div class="inputs" id="inputs" aria-label="Configuration">
      <section class="card form-section" aria-labelledby="section-model">
        <h2 id="section-model">Model</h2>
        <PresetSlot state={state} />
        <HfImportSlot state={state} />
        {model && <Architecture section={model} state={state} />}
      </section>
      {sections.filter((s) => s.id !== 'model').map((s) => (
        <section class="card form-section" aria-labelledby={`section-${s.id}`} key={s.id}>
          <h2 id={`section-${s.id}`}>{s.title}</h2>
          {s.groups.map((g) => <FieldGroup key={g.title} group={g} state={state} gpuOptions={gpuOptions} foldMore />)}
        </section>
      ))}
    </div>
  );
}
