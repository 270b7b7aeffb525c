// One configuration field, drawn from its schema entry: { value, onChange } and the core's
// messages. Text inputs hold exactly what was typed; the core decides whether it is valid. Labels,
// explanations and choices are in words (words.js), never the core's ids.
import { AUTO_VALUE, autoText } from '../../fields.js';
import { CHOICES, CHOICE_INTEGERS, choiceWords, fieldWords, plainMessage } from '../../words.js';

export const fieldDomId = (path) => (path === 'model.preset' ? 'preset-input' : `field-${path.replace(/\./g, '-')}`);

const text = (value) => (value === undefined || value === null ? '' : Array.isArray(value) ? value.join(',') : String(value));

function Messages({ id, errors, warnings }) {
  return (
    <>
      {errors.map((m, i) => (
        <p class="field-error" id={i === 0 ? id : undefined} key={m}>{plainMessage(m)}</p>
      ))}
      {errors.length === 0 && warnings.map((m) => (
        <p class="field-warning" key={m}>{plainMessage(m)}</p>
      ))}
    </>
  );
}

function TextInput({ id, field, value, invalid, describedBy, onChange, disabled }) {
  const auto = AUTO_VALUE[field.field];
  const shown = auto !== undefined && value === auto ? autoText(field) : text(value);
  return (
    <input
      id={id}
      type="text"
      inputMode={auto !== undefined ? 'text' : field.kind === 'integer' ? 'numeric' : field.kind === 'number' ? 'decimal' : 'text'}
      autoComplete="off"
      spellcheck={false}
      class="control"
      value={shown}
      disabled={disabled}
      aria-invalid={invalid}
      aria-describedby={describedBy}
      onInput={(e) => onChange(e.currentTarget.value)}
    />
  );
}

// Rendered at build time (web/src/pages/render.jsx, no document): the prerendered page is replaced
// whole once the core runs, so a select there carries its current choice only (the GPU, method and
// optimizer lists were about a twentieth of the first view's bytes).
const PRERENDER = typeof document === 'undefined';

function Select({ id, options: all, value, invalid, describedBy, onChange, disabled }) {
  const current = text(value);
  const known = all.some((o) => o.value === current);
  const options = PRERENDER ? all.filter((o) => o.value === current) : all;
  return (
    <select
      id={id}
      class="control"
      value={current}
      disabled={disabled}
      aria-invalid={invalid}
      aria-describedby={describedBy}
      onChange={(e) => onChange(e.currentTarget.value)}
    >
      {!known && <option value={current}>{current === '' ? '(empty)' : `${current} (not a choice)`}</option>}
      {options.map((o) => (
        <option value={o.value} key={o.value}>{o.label}</option>
      ))}
    </select>
  );
}

function Toggle({ id, value, invalid, describedBy, onChange }) {
  return (
    <input
      id={id}
      type="checkbox"
      class="toggle"
      checked={value === true || value === 'true'}
      aria-invalid={invalid}
      aria-describedby={describedBy}
      onChange={(e) => onChange(e.currentTarget.checked)}
    />
  );
}

// choicesOff: { choice: why it does not apply } for choices naming parts this model lacks (a MoE
// router on a dense model): left out of the offer, or, when chosen, kept and marked with the reason.
function ListChoices({ id, field, value, describedBy, onChange, disabled, choicesOff = {} }) {
  const items = Array.isArray(value) ? value : text(value).split(',').filter(Boolean);
  const all = [...field.choices, ...items.filter((v) => !field.choices.includes(v))];
  const shown = all.filter((c) => !choicesOff[c] || items.includes(c));
  const toggle = (choice, on) => {
    const next = all.filter((c) => (c === choice ? on : items.includes(c)));
    onChange(next);
  };
  const bad = (choice) => !field.choices.includes(choice) || Boolean(choicesOff[choice]);
  const name = (choice) => {
    if (!field.choices.includes(choice)) return `${choice} (not a choice)`;
    const label = choiceWords(field.field, choice).label;
    return choicesOff[choice] ? `${label} (not in this model: ${choicesOff[choice]})` : label;
  };
  return (
    <div class="chips" id={id} role="group" tabIndex={-1} aria-labelledby={`${id}-label`} aria-describedby={describedBy}>
      {shown.map((choice) => (
        <label class={`chip ${bad(choice) ? 'chip-bad' : ''}`} key={choice}>
          <input type="checkbox" disabled={disabled} checked={items.includes(choice)} onChange={(e) => toggle(choice, e.currentTarget.checked)} />
          <span>{name(choice)}</span>
        </label>
      ))}
    </div>
  );
}

// The options of a field with choices (or an integer field shown as choices), in words.
export function choiceOptions(field) {
  if (CHOICE_INTEGERS.has(field.field)) {
    // Object keys that are integers come in ascending order; bits read best largest first.
    const keys = Object.keys(CHOICES[field.field]);
    if (field.field === 'training.finetune.base_bits') keys.reverse();
    return keys.map((c) => ({ value: c, label: choiceWords(field.field, c).label }));
  }
  return (field.choices ?? []).map((c) => ({ value: c, label: choiceWords(field.field, c).label }));
}

// field: schema entry; value: what the form holds; errors / warnings: the core's messages for it.
// options: [{ value, label }] for a select built from data other than field.choices (the GPUs).
// domId: the input's id where the field is drawn a second time (the planner), else fieldDomId.
export function Field({ field, value, errors = [], warnings = [], options, inactive = false, inactiveNote = '', choicesOff, changed = false, onChange, domId }) {
  const id = domId ?? fieldDomId(field.field);
  const hintId = `${id}-hint`;
  const errId = `${id}-error`;
  const invalid = errors.length > 0;
  const words = fieldWords(field.field, field.help);
  const label = words.label;
  const asChoices = field.kind === 'choice' || CHOICE_INTEGERS.has(field.field);
  // A choice's own explanation replaces the field's when it has one.
  const chosen = asChoices ? choiceWords(field.field, text(value)).explain : '';
  const hint = chosen || words.explain;
  const note = inactive && inactiveNote ? inactiveNote : '';
  const hasHint = Boolean(hint || note);
  const describedBy = [invalid && errId, hasHint && hintId].filter(Boolean).join(' ') || undefined;
  // A field that does not apply (the schema's applies_when: LoRA settings of a full fine-tune) is
  // disabled, not faded, and its hint says when it applies; one the core refuses stays editable, so
  // the value can be put right (an FSDP version left set when DeepSpeed became the engine).
  const common = { id, field, value, invalid, describedBy, onChange, disabled: inactive && !invalid };
  const kind = field.kind === 'list' ? 'list' : options || asChoices ? 'select' : field.kind === 'boolean' ? 'toggle' : 'text';

  return (
    <div
      class={`field kind-${kind}${invalid ? ' invalid' : ''}${inactive ? ' inactive' : ''}${changed ? ' changed' : ''}`}
      data-field={field.field}
    >
      <div class="field-text">
        {kind === 'list' ? (
          <span class="field-label" id={`${id}-label`}>{label}</span>
        ) : (
          <label class="field-label" for={id}>{label}{changed && <span class="changed-mark" title="edited: differs from the preset"> • edited</span>}</label>
        )}
        {hasHint && <span class="field-hint" id={hintId}>{hint && note ? `${hint} (${note})` : hint || note}</span>}
      </div>
      <div class="field-control">
        {kind === 'text' && <TextInput {...common} />}
        {kind === 'select' && <Select {...common} options={options ?? choiceOptions(field)} />}
        {kind === 'toggle' && <Toggle {...common} />}
        {kind === 'list' && <ListChoices {...common} choicesOff={choicesOff} />}
      </div>
      <Messages id={errId} errors={errors} warnings={warnings} />
    </div>
  );
}
