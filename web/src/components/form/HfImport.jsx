// Import a model from a Hugging Face config.json: pasted, dropped as a file, or fetched from the
// Hub. The core reads it (import_hf_config); the page only shows what the core answered.
import { useEffect, useRef, useState } from 'preact/hooks';

import { formatCount } from '../../format.js';

import { componentLabel } from '../componentLabel.js';

export function ComponentTable({ byComponent, total, caption }) {
  return (
    <table class="table compact">
      {caption && <caption>{caption}</caption>}
      <tbody>
        {Object.entries(byComponent ?? {}).map(([key, count]) => (
          <tr key={key} data-component={key}>
            <th scope="row">{componentLabel(key)}</th>
            <td class="num">{formatCount(count)}</td>
          </tr>
        ))}
      </tbody>
      {total !== undefined && (
        <tfoot>
          <tr>
            <th scope="row">Total</th>
            <td class="num">{formatCount(total)}</td>
          </tr>
        </tfoot>
      )}
    </table>
  );
}

function ImportAnswer({ answer }) {
  if (!answer) return null;
  if (answer.pending) return <p class="field-hint" role="status">Reading the config.json…</p>;
  if (!answer.ok) {
    return (
      <div class="import-errors" role="alert" data-testid="import-errors">
        <strong>memfit could not read this config.json:</strong>
        <ul>
          {answer.errors.map((e) => (
            <li key={`${e.field}${e.message}`}>{e.field ? <><code>{e.field}</code> </> : null}{e.message}</li>
          ))}
        </ul>
      </div>
    );
  }
  return (
    <div class="import-ok" data-testid="import-result">
      <p>
        Imported <strong>{answer.model.model_type}</strong>:{' '}
        <strong class="num" data-testid="import-parameter-count">{formatCount(answer.parameter_count)}</strong> parameters
        {answer.vision_parameter_count > 0 && <> in its language model, and a vision tower of{' '}
          <strong class="num">{formatCount(answer.vision_parameter_count)}</strong>, held frozen</>}.
        The architecture fields now hold this model.
      </p>
      <ComponentTable byComponent={answer.parameters_by_component} />
      {answer.warnings.length > 0 && (
        <ul class="warnings">
          {answer.warnings.map((w) => <li key={w.message}><code>{w.field}</code> {w.message}</li>)}
        </ul>
      )}
    </div>
  );
}

// Text longer than this is not put into the text box (a browser lays out half a megabyte of
// text for most of a second): it is read as it is and said in words.
export const SHOWN_TEXT_LIMIT = 32 * 1024;

const kib = (n) => `${Math.max(1, Math.round(n / 1024))} KiB`;

// The paste box is uncontrolled: typing in it re-renders nothing. `text` (from the Hub) is put in
// when it changes; a long text is kept aside and named instead of shown.
export function HfImportBody({ text, onText, onImport, hub, onFetch, answer }) {
  const [modelId, setModelId] = useState('');
  const [dragging, setDragging] = useState(false);
  const [aside, setAside] = useState(null);  // { text, name } too long to show
  const [empty, setEmpty] = useState(true);
  const area = useRef(null);
  const shownText = useRef('');

  // A text from outside (the Hub): into the box, or aside when long.
  useEffect(() => {
    if (!area.current || text === shownText.current) return;
    shownText.current = text;
    if (text.length > SHOWN_TEXT_LIMIT) {
      area.current.value = '';
      setAside({ text, name: 'the config.json from the Hub' });
    } else {
      area.current.value = text;
      setAside(null);
    }
    setEmpty(text.trim() === '');
  }, [text]);

  const take = (content, name) => {
    shownText.current = content;
    onText(content);
    if (content.length > SHOWN_TEXT_LIMIT) {
      if (area.current) area.current.value = '';
      setAside({ text: content, name });
    } else {
      if (area.current) area.current.value = content;
      setAside(null);
    }
    setEmpty(content.trim() === '');
    onImport(content);
  };

  const readFile = async (file) => {
    if (!file) return;
    take(await file.text(), file.name);
  };

  const current = () => aside?.text ?? area.current?.value ?? '';

  return (
    <>
      <form
        class="hub-row"
        onSubmit={(e) => {
          e.preventDefault();
          onFetch(modelId);
        }}
      >
        <label class="field-label" for="hub-model-id">Hub model id</label>
        <div class="inline">
          <input
            id="hub-model-id"
            class="control"
            type="text"
            placeholder="meta-llama/Llama-3.1-8B"
            autoComplete="off"
            spellcheck={false}
            value={modelId}
            onInput={(e) => setModelId(e.currentTarget.value)}
          />
          <button type="submit" class="button" disabled={hub.status === 'loading' || modelId.trim() === ''}>Fetch</button>
        </div>
        {hub.status !== 'idle' && (
          <p class={hub.status === 'error' ? 'field-error' : 'field-hint'} role={hub.status === 'error' ? 'alert' : 'status'} data-testid="hub-status">
            {hub.message}
          </p>
        )}
      </form>
      <label class="field-label" for="hf-config-text">…or paste its config.json</label>
      {aside && (
        <p class="field-hint pasted-aside" data-testid="pasted-aside">
          Read {aside.name} ({kib(aside.text.length)}, too long to show here).{' '}
          <button type="button" class="link" onClick={() => { setAside(null); setEmpty(true); }}>Clear</button>
        </p>
      )}
      <textarea
        ref={area}
        id="hf-config-text"
        class={`control code${dragging ? ' dragging' : ''}`}
        rows={6}
        spellcheck={false}
        placeholder='{ "model_type": "llama", "hidden_size": 4096, … }  (or drop a .json file here)'
        onInput={(e) => {
          const isEmpty = e.currentTarget.value.trim() === '';
          if (isEmpty !== empty) setEmpty(isEmpty);
          if (aside) setAside(null);
        }}
        onPaste={(e) => {
          const pasted = e.clipboardData?.getData('text') ?? '';
          const box = e.currentTarget;
          if (pasted.length > SHOWN_TEXT_LIMIT) {
            e.preventDefault();
            take(pasted, 'the pasted config.json');
          } else {
            setTimeout(() => take(box.value, 'the pasted config.json'), 0);
          }
        }}
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={(e) => {
          e.preventDefault();
          setDragging(false);
          readFile(e.dataTransfer?.files?.[0]);
        }}
      />
      <div class="inline end">
        <label class="button ghost file-button">
          Choose file…
          <input type="file" accept=".json,application/json" class="visually-hidden" onChange={(e) => readFile(e.currentTarget.files?.[0])} />
        </label>
        <button type="button" class="button" disabled={empty && !aside} onClick={() => take(current(), 'the config.json')}>Use this config</button>
      </div>
      <ImportAnswer answer={answer} />
    </>
  );
}
