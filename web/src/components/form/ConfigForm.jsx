// The configuration form: the preset picker and import, then every schema field by section.
import { useState } from 'preact/hooks';

import { formatBytes } from '../../format.js';
import { Field } from './Field.jsx';
import { HfImport } from './HfImport.jsx';
import { PresetPicker } from './PresetPicker.jsx';

const LORA_ONLY = new Set(['training.finetune.lora_rank', 'training.finetune.lora_targets', 'training.finetune.base_bits']);

function FieldGroup({ group, state, gpuOptions, markEdits = false }) {
  const issues = state.issues.value.byField;
  const method = state.fieldValue('training.finetune.method');
  return (
    <div class="group">
      {group.title && <h3 class="group-title">{group.title}</h3>}
      {group.fields.map((f) => {
        const found = issues.get(f.field);
        return (
          <Field
            key={f.field}
            field={f}
            value={state.fieldValue(f.field)}
            errors={found?.errors}
            warnings={found?.warnings}
            options={f.field === 'hardware.gpu' ? gpuOptions() : undefined}
            inactive={LORA_ONLY.has(f.field) && method !== 'lora'}
            changed={markEdits && state.isEdited(f.field)}
            onChange={(v) => state.setField(f.field, v)}
          />
        );
      })}
    </div>
  );
}

// The architecture is long: folded by default, opened when one of its fields is wrong.
function Architecture({ section, state, edited }) {
  const [open, setOpen] = useState(false);
  const issues = state.issues.value.byField;
  const hasError = section.groups.some((g) => g.fields.some((f) => issues.get(f.field)?.errors.length));
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

export function ConfigForm({ state }) {
  const units = state.units.value;
  const gpuOptions = () =>
    state.gpus.map((g) => ({ value: g.id, label: `${g.name} · ${formatBytes(g.memory_bytes, units)}` }));
  const sections = state.sections;
  const model = sections.find((s) => s.id === 'model');
  const presetErrors = state.issues.value.byField.get('model.preset')?.errors ?? [];
  const edited = state.presetId.value === '' || state.presetLabel.value.startsWith('custom');

  return (
    <div class="inputs" aria-label="Configuration">
      <section class="card form-section" aria-labelledby="section-model">
        <h2 id="section-model">Model</h2>
        <PresetPicker
          presets={state.presets}
          value={state.presetId.value}
          label={state.presetLabel.value}
          edited={edited}
          errors={presetErrors}
          onChange={state.selectPreset}
        />
        <HfImport
          text={state.pasteText.value}
          onText={(t) => (state.pasteText.value = t)}
          onImport={(t) => state.importConfig(t)}
          hub={state.hub.value}
          onFetch={state.fetchFromHub}
          answer={state.imported.value}
        />
        {model && <Architecture section={model} state={state} edited={edited} />}
      </section>
      {sections.filter((s) => s.id !== 'model').map((s) => (
        <section class="card form-section" aria-labelledby={`section-${s.id}`} key={s.id}>
          <h2 id={`section-${s.id}`}>{s.title}</h2>
          {s.groups.map((g) => <FieldGroup key={g.title} group={g} state={state} gpuOptions={gpuOptions} />)}
        </section>
      ))}
    </div>
  );
}
