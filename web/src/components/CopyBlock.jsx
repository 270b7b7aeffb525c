// A read-only text with a Copy button (the Embed dialog's snippets, the planner's exports). When the
// browser refuses the clipboard the text is selected and the user is told how to copy it.
import { useRef, useState } from 'preact/hooks';

import { copyText } from './ShareLink.jsx';

export function CopyBlock({ id, label, text, wrap = false }) {
  const [copied, setCopied] = useState(null);
  const area = useRef(null);
  const copy = async () => {
    const ok = await copyText(text);
    if (!ok) {
      area.current?.focus();
      area.current?.select();
    }
    setCopied(ok);
  };
  return (
    <div class="snippet">
      <div class="snippet-head">
        <label class="field-label" for={id}>{label}</label>
        <button type="button" class="button small" onClick={copy} data-testid={`copy-${id}`}>Copy</button>
      </div>
      <textarea id={id} ref={area} class={`control code${wrap ? ' wrap' : ''}`} readOnly value={text} spellcheck={false} wrap={wrap ? 'soft' : 'off'}
        rows={wrap ? Math.min(8, Math.ceil(text.length / 90)) : Math.min(16, text.split('\n').length)} data-testid={id} />
      <p class={copied === false ? 'field-error' : 'field-hint'} role="status" data-testid={`copy-${id}-status`}>
        {copied === true ? 'Copied.' : copied === false ? 'This browser did not allow copying here: the text is selected, press Ctrl+C (⌘C on a Mac).' : ''}
      </p>
    </div>
  );
}
