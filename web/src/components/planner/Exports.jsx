// A plan's exports (the core's export_plan): for each engine, its config file and the command that
// launches it, each with a Copy button, or the engine's reasons it cannot run this plan. Copying
// says so when the browser refuses (the text is then selected, to copy by hand).
import { useRef, useState } from 'preact/hooks';

import { ENGINE_WORDS, plannerMessage } from '../../planner.js';
import { CopyBlock } from '../CopyBlock.jsx';

// wrap: soft-wrap long lines (a command), else keep each line as it is (a file).

// others: the other engines that run the plan (their names).
function Panel({ engine, name, what, answer, n, others }) {
  if (!answer) return <p class="card-note" aria-busy="true">The core is writing the files…</p>;
  if (!answer.ok) {
    return (
      <div class="export-refused" data-testid="export-refused">
        <p>{name} cannot run this plan as it is:</p>
        <ul>{(answer.errors ?? []).map((e) => <li key={e.message}>{plannerMessage(e.message)}</li>)}</ul>
        <p class="card-note">
          {others.length ? `${others.length > 1 ? `${others.slice(0, -1).join(', ')} and ${others.at(-1)}` : others[0]} ${others.length === 1 ? 'runs' : 'run'} it: see ${others.length === 1 ? 'its tab' : 'their tabs'}.`
            : 'No engine here runs it as it is.'}
        </p>
      </div>
    );
  }
  const base = `export-${engine}`;
  return (
    <div class="export-ok">
      {answer.text ? (
        <CopyBlock id={`${base}-file`} label={`${answer.filename}: ${what} for plan ${n}`} text={answer.text} />
      ) : (
        <p class="card-note">{name} takes the plan as arguments on its command line: no file.</p>
      )}
      {answer.command && <CopyBlock id={`${base}-command`} label="The command that launches it" text={answer.command} wrap />}
      {answer.notes?.length > 0 && (
        <ul class="export-notes">{answer.notes.map((t) => <li key={t}>{plannerMessage(t)}</li>)}</ul>
      )}
    </div>
  );
}

// exports: { engine: the core's export answer } (null while the core writes them). n: the plan's number.
export function Exports({ exports, n }) {
  const [picked, setPicked] = useState(null);
  const tabs = useRef(null);
  const firstOk = ENGINE_WORDS.find(([id]) => exports?.[id]?.ok)?.[0];
  const active = picked ?? firstOk ?? ENGINE_WORDS[0][0];
  const onKeyDown = (e) => {
    const i = ENGINE_WORDS.findIndex(([id]) => id === (e.target?.dataset?.engine ?? active));
    const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[e.key];
    let next = step === undefined ? null : (i + step + ENGINE_WORDS.length) % ENGINE_WORDS.length;
    if (e.key === 'Home') next = 0;
    if (e.key === 'End') next = ENGINE_WORDS.length - 1;
    if (next === null) return;
    e.preventDefault();
    setPicked(ENGINE_WORDS[next][0]);
    tabs.current?.querySelectorAll('[role="tab"]')[next]?.focus();
  };
  const [, name, what] = ENGINE_WORDS.find(([id]) => id === active);
  return (
    <div class="exports" data-testid="exports">
      <h3 class="group-title" id={`exports-${n}`}>Run it: the engines' own files</h3>
      <div class="tabs" role="tablist" aria-labelledby={`exports-${n}`} ref={tabs} onKeyDown={onKeyDown}>
        {ENGINE_WORDS.map(([id, label]) => {
          const refused = exports?.[id] && !exports[id].ok;
          return (
            <button type="button" role="tab" key={id} id={`tab-${id}`} aria-selected={id === active} aria-controls={`panel-${id}`}
              tabIndex={id === active ? 0 : -1} class={`tab${refused ? ' refused' : ''}`} data-engine={id} onClick={() => setPicked(id)}>
              {label}{refused && <span class="visually-hidden"> (cannot run this plan)</span>}
            </button>
          );
        })}
      </div>
      <div class="tab-panel" role="tabpanel" id={`panel-${active}`} aria-labelledby={`tab-${active}`} data-engine={active}>
        <Panel engine={active} name={name} what={what} answer={exports?.[active]} n={n}
          others={ENGINE_WORDS.filter(([id]) => id !== active && exports?.[id]?.ok).map(([, label]) => label)} />
      </div>
    </div>
  );
}
