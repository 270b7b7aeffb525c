// The preset picker: a combobox with a search box over the core's presets. With nothing typed:
// real models first, grouped by family, each with its size; the source documents' idealised
// configurations in their own group, last. Typed words rank the presets by name, family and size
// (presets.js), best first.
import { useMemo, useRef, useState } from 'preact/hooks';

import { formatCount, formatCountShort } from '../../format.js';
import { TEXTBOOK_GROUP, groupPresets, isTextbook, searchGroups } from '../../presets.js';
import { plainMessage, plainText } from '../../words.js';

// The count the source states, where the estimate uses it instead of the shape's (the source
// documents' idealised models: "LLaMA-7B" is 7e9 though its stated shape counts 5.3e9).
const nominal = (p) => (p?.model?.nominal_parameter_count > 0 ? p.model.nominal_parameter_count : 0);

export const presetName = (p) => plainText(p.name);
const optionId = (id) => `preset-option-${id}`;

export function PresetPicker({ presets, value, label, edited = false, errors = [], onChange, children }) {
  const [open, setOpen] = useState(false);
  const [query, setQuery] = useState('');
  const [active, setActive] = useState(-1);
  const list = useRef(null);

  const searching = query.trim() !== '';
  const groups = useMemo(() => (searching ? searchGroups(presets, query) : groupPresets(presets)), [presets, query, searching]);
  const flat = useMemo(() => groups.flatMap(([, items]) => items), [groups]);
  const current = presets.find((p) => p.id === value);

  const openList = () => {
    setQuery('');
    setActive(Math.max(0, groupPresets(presets).flatMap(([, items]) => items).findIndex((p) => p.id === value)));
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
    return undefined;
  };
  const onKeyDown = (e) => {
    if (e.key === 'ArrowDown') { e.preventDefault(); move(1); }
    else if (e.key === 'ArrowUp') { e.preventDefault(); move(-1); }
    else if (e.key === 'Enter') {
      e.preventDefault();
      if (open && flat[active]) choose(flat[active].id);
      else if (!open) openList();
    } else if (e.key === 'Escape') { setOpen(false); setQuery(''); }
    else if (e.key === 'Tab') setOpen(false);
  };

  const invalid = errors.length > 0;
  return (
    <div class={`picker${invalid ? ' invalid' : ''}`}>
      <label class="field-label" for="preset-input">Model</label>
      <div class="picker-box">
        <input
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
          placeholder={open ? 'Search by name, family or size: "llama 70b"' : ''}
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
          // tabIndex -1: a scrolling list is otherwise a Tab stop, and Tab from the box would land
          // on it just as it closes (and drop the focus to the page).
          <div id="preset-list" role="listbox" class="picker-list" ref={list} aria-label="Model presets" tabIndex={-1}>
            {groups.map(([group, items]) => (
              <div role="group" aria-label={group} key={group} class={group === TEXTBOOK_GROUP ? 'picker-group textbook' : 'picker-group'}>
                <div class="picker-family" aria-hidden="true">{group}</div>
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
                      <span class="picker-name">{presetName(p)}</span>
                      <span class="picker-id">{searching ? (isTextbook(p) ? 'source documents' : p.family) : ''}</span>
                      <span class="picker-count num">{formatCountShort(nominal(p) || p.parameter_count)}</span>
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
        {current && edited && <>Started from {presetName(current)}; the edited architecture fields are marked.</>}
        {current && !edited
          ? <>{nominal(current)
            ? <>{formatCount(nominal(current))} parameters as the source states (its shape counts {formatCount(current.parameter_count)})</>
            : <>{formatCount(current.parameter_count)} parameters</>} · {isTextbook(current) ? 'idealised configuration from the source documents' : current.family} · source: {plainText(current.source)}</>
          : !current && 'A model of your own: choose a preset to start over.'}
      </p>
      {children}
      {errors.map((m) => <p class="field-error" key={m}>{plainMessage(m)}</p>)}
    </div>
  );
}
