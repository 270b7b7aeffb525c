// Import a model from a Hugging Face config.json: pasted, dropped as a file, or fetched from the
// Hub. The core reads it (import_hf_config); the page only shows what the core answered.
import { useState } from 'preact/hooks';

import { formatCount } from '../../format.js';

const COMPONENT_LABELS = {
  token_embedding: 'Token embedding',
  position_embedding: 'Position embedding',
  token_type_embedding: 'Token-type embedding',
  embedding_norm: 'Embedding norm',
  attention: 'Attention',
  mlp: 'MLP',
  router: 'Router',
  experts: 'Experts',
  shared_experts: 'Shared experts',
  block_norms: 'Block norms',
  final_norm: 'Final norm',
  head: 'Output head',
  pooler: 'Pooler',
};
export const componentLabel = (key) => COMPONENT_LABELS[key] ?? key.replace(/_/g, ' ');

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
  if (!answer.ok) {
    return (
      <div class="import-errors" role="alert" data-testid="import-errors">
        <strong>memfit could not read this config.json:</strong>
        <ul>
          {answer.errors.map((e) => (
            <li key={`${e.field}${e.message}`}><code>{e.field}</code> {e.message}</li>
          ))}
        </ul>
      </div>
    );
  }
  return (
    <div class="import-ok" data-testid="import-result">
      <p>
        Imported <strong>{answer.model.model_type}</strong>:{' '}
        <strong class="num" data-testid="import-parameter-count">{formatCount(answer.parameter_count)}</strong> parameters.
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

export function HfImport({ text, onText, onImport, hub, onFetch, answer }) {
  const [modelId, setModelId] = useState('');
  const [dragging, setDragging] = useState(false);
  const [open, setOpen] = useState(false);

  const readFile = async (file) => {
    if (!file) return;
    const content = await file.text();
    onText(content);
    onImport(content);
  };

  return (
    <details class="import" open={open || answer !== null || hub.status !== 'idle'} onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Import from Hugging Face</summary>
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
      <textarea
        id="hf-config-text"
        class={`control code${dragging ? ' dragging' : ''}`}
        rows={6}
        spellcheck={false}
        placeholder='{ "model_type": "llama", "hidden_size": 4096, … }  (or drop a .json file here)'
        value={text}
        onInput={(e) => onText(e.currentTarget.value)}
        onPaste={(e) => {
          const area = e.currentTarget;
          setTimeout(() => onImport(area.value), 0);
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
        <button type="button" class="button" disabled={text.trim() === ''} onClick={() => onImport(text)}>Use this config</button>
      </div>
      <ImportAnswer answer={answer} />
    </details>
  );
}
