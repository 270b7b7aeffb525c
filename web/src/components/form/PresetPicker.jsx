// The preset picker: a combobox with a search box over the core's presets, grouped by family.
import { useMemo, useRef, useState } from 'preact/hooks';

import { formatCount, formatCountShort } from '../../format.js';

const norm = (s) => String(s ?? '').toLowerCase();

export function filterPresets(presets, query) {
  const words = norm(query).split(/\s+/).filter(Boolean);
  if (words.length === 0) return presets;
  return presets.filter((p) => {
    const hay = `${norm(p.name)} ${norm(p.id)} ${norm(p.family)} ${norm(p.model?.model_type)}`;
    return words.every((w) => hay.includes(w));
  });
}

function byFamily(list) {
  const groups = new Map();
  for (const p of list) {
    if (!groups.has(p.family)) groups.set(p.family, []);
    groups.get(p.family).push(p);
  }
  return [...groups.entries()];
}

const optionId = (id) => `preset-option-${id}`;

export function PresetPicker({ presets, value, label, edited = false, errors = [], onChange }) {
  const [open, setOpen] = useState(false);
  const [query, setQuery] = useState('');
  const [active, setActive] = useState(-1);
  const input = useRef(null);
  const list = useRef(null);

  const filtered = useMemo(() => filterPresets(presets, query), [presets, query]);
  const groups = useMemo(() => byFamily(filtered), [filtered]);
  const flat = useMemo(() => groups.flatMap(([, items]) => items), [groups]);
  const current = presets.find((p) => p.id === value);

  const openList = () => {
    setQuery('');
    setActive(Math.max(0, presets.findIndex((p) => p.id === value)));
    setOpen(true);
  };
  const choose = (id) => {
    setOpen(false);
    setQuery('');
    onChange(id);
  };
  const move = (delta) => {
    if (!open) return openList();
    const next = flat.length === 0 ? -1 : (active + delta + flat.length) % flat.length;
    setActive(next);
    if (next >= 0) list.current?.querySelector(`#${CSS.escape(optionId(flat[next].id))}`)?.scrollIntoView({ block: 'nearest' });
  };
  const onKeyDown = (e) => {
    if (e.key === 'ArrowDown') { e.preventDefault(); move(1); }
    else if (e.key === 'ArrowUp') { e.preventDefault(); move(-1); }
    else if (e.key === 'Enter') {
      e.preventDefault();
      if (open && flat[active]) choose(flat[active].id);
      else if (!open) openList();
    } else if (e.key === 'Escape') { setOpen(false); setQuery(''); }
  };

  const invalid = errors.length > 0;
  return (
    <div class={`picker${invalid ? ' invalid' : ''}`}>
      <label class="field-label" for="preset-input">Preset</label>
      <div class="picker-box">
        <input
          ref={input}
          id="preset-input"
          class="control picker-input"
          role="combobox"
          aria-expanded={open}
          aria-controls="preset-list"
          aria-autocomplete="list"
          aria-activedescendant={open && flat[active] ? optionId(flat[active].id) : undefined}
          aria-invalid={invalid}
          aria-describedby="preset-detail"
          autoComplete="off"
          spellcheck={false}
          placeholder={open ? `Search ${presets.length} presets by name, family or id` : ''}
          value={open ? query : label}
          onFocus={openList}
          onClick={() => !open && openList()}
          onBlur={() => setOpen(false)}
          onInput={(e) => {
            setQuery(e.currentTarget.value);
            setActive(0);
            setOpen(true);
          }}
          onKeyDown={onKeyDown}
        />
        <span class="picker-chevron" aria-hidden="true">▾</span>
        {open && (
          <div id="preset-list" role="listbox" class="picker-list" ref={list} aria-label="Model presets">
            {groups.map(([family, items]) => (
              <div role="group" aria-label={family} key={family}>
                <div class="picker-family" aria-hidden="true">{family}</div>
                {items.map((p) => {
                  const index = flat.indexOf(p);
                  return (
                    <div
                      role="option"
                      id={optionId(p.id)}
                      key={p.id}
                      data-preset-id={p.id}
                      aria-selected={p.id === value}
                      class={`picker-option${index === active ? ' active' : ''}${p.id === value ? ' selected' : ''}`}
                      onMouseDown={(e) => e.preventDefault()}
                      onMouseMove={() => index !== active && setActive(index)}
                      onClick={() => choose(p.id)}
                    >
                      <span class="picker-name">{p.name}</span>
                      <span class="picker-id">{p.id}</span>
                      <span class="picker-count num">{formatCountShort(p.parameter_count)}</span>
                    </div>
                  );
                })}
              </div>
            ))}
            {flat.length === 0 && <div class="picker-empty">No preset matches “{query}”.</div>}
          </div>
        )}
      </div>
      <p class="field-hint" id="preset-detail">
        {current && edited && <>Started from {current.name}; the edited architecture fields are marked.</>}
        {current && !edited
          ? <>{formatCount(current.parameter_count)} parameters · {current.family} · source: {current.source}</>
          : !current && 'A model of your own: choose a preset to start over.'}
      </p>
      {errors.map((m) => <p class="field-error" key={m}>{m}</p>)}
    </div>
  );
}
