// The Embed button's dialog: the two ways to put the current configuration's estimate on another
// page (an iframe card, the web component), each as a snippet with a Copy button, and a live
// preview. Copying says so when the browser refuses (then the snippet is selected to copy by hand).
// A chunk of its own (with its styles, embed.css), loaded on the first click.
import { useEffect, useRef, useState } from 'preact/hooks';

import css from '../embed.css';
import { addStyles } from './addStyles.js';
import { CopyBlock } from './CopyBlock.jsx';
import { VIEW_PARAMS } from '../view.js';

const VIEWS = [['card', 'Card'], ['breakdown', 'With the breakdown'], ['fit', 'With the GPUs'], ['full', 'Everything']];
const THEMES = [['auto', 'The reader\'s preference'], ['light', 'Light'], ['dark', 'Dark']];

const attr = (text) => String(text).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

// What the page's link holds for the page alone (charts shown as tables, the sweep, the planner)
// means nothing to an embed and is left out of its snippets; the unit choice stays.
const PAGE_ONLY = [...VIEW_PARAMS].filter((name) => !['units', 'view', 'theme'].includes(name));

function paramName(part) {
  const name = part.split('=')[0];
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

export function snippets(site, pageQuery, view, theme) {
  // The page's own parameters as the page wrote them (commas and slashes left readable): only the
  // page-only ones are taken out, so nothing is encoded a second time.
  const query = String(pageQuery ?? '').replace(/^\?/, '').split('&')
    .filter((part) => part && !PAGE_ONLY.includes(paramName(part)))
    .join('&');
  const extra = `${view !== 'card' ? `&view=${view}` : ''}${theme !== 'auto' ? `&theme=${theme}` : ''}`;
  const src = `${site}embed.html?${query}${extra}`;
  const origin = new URL(site).origin;
  const iframe = `<iframe src="${attr(src)}" title="memfit estimate" data-memfit
  style="width: 100%; border: 0" height="420" loading="lazy"></iframe>
<script>
  // memfit sends its height; only messages from your own memfit iframes are used.
  addEventListener('message', (event) => {
    if (event.origin !== '${origin}' || event.data?.type !== 'memfit:height') return;
    for (const frame of document.querySelectorAll('iframe[data-memfit]')) {
      if (frame.contentWindow === event.source) frame.height = event.data.height;
    }
  });
</script>`;
  // The element's own content shows only where its script does not run (blocked, offline, a host
  // that sends no CORS header): then the reader still has the estimate, one click away.
  const component = `<script type="module" src="${attr(`${site}memfit-estimate.js`)}"></script>
<memfit-estimate link="?${attr(query)}"${view !== 'card' ? ` view="${view}"` : ''}${theme !== 'auto' ? ` theme="${theme}"` : ''}>
  <a href="${attr(`${site}?${query}`)}">Open this estimate in memfit</a>
</memfit-estimate>`;
  return { src, iframe, component };
}


export function EmbedDialog({ query, onClose }) {
  const dialog = useRef(null);
  const [view, setView] = useState('card');
  const [theme, setTheme] = useState('auto');
  useEffect(() => {
    addStyles('embed-styles', css);
    dialog.current?.showModal?.();
  }, []);
  // The preview takes the height its card sends, as a host page with the snippet does.
  const preview = useRef(null);
  const [previewHeight, setPreviewHeight] = useState(0);
  useEffect(() => {
    const onMessage = (event) => {
      if (event.origin !== location.origin || event.source !== preview.current?.contentWindow) return;
      if (event.data?.type === 'memfit:height' && Number.isFinite(event.data.height)) setPreviewHeight(event.data.height);
    };
    addEventListener('message', onMessage);
    return () => removeEventListener('message', onMessage);
  }, []);
  const site = new URL('./', location.href).href;
  const s = snippets(site, query, view, theme);
  return (
    <dialog ref={dialog} class="embed-dialog" aria-labelledby="embed-title" onClose={onClose} data-testid="embed-dialog">
      <div class="card-head">
        <h2 id="embed-title">Embed this estimate</h2>
        <button type="button" class="button ghost small" onClick={() => dialog.current?.close()}>Close</button>
      </div>
      <p class="card-note">Both forms show this configuration's numbers, computed by memfit in the reader's browser, and follow the same link format as the page.</p>
      <div class="embed-options">
        <label class="field-label" for="embed-view">Show</label>
        <select id="embed-view" class="control" value={view} onChange={(e) => setView(e.currentTarget.value)}>
          {VIEWS.map(([v, label]) => <option value={v} key={v}>{label}</option>)}
        </select>
        <label class="field-label" for="embed-theme">Theme</label>
        <select id="embed-theme" class="control" value={theme} onChange={(e) => setTheme(e.currentTarget.value)}>
          {THEMES.map(([v, label]) => <option value={v} key={v}>{label}</option>)}
        </select>
      </div>
      <CopyBlock id="snippet-iframe" label="An iframe card (any page, any site builder)" text={s.iframe} />
      <CopyBlock id="snippet-component" label="A web component (pages that can load a script)" text={s.component} />
      <h3 class="group-title">Preview</h3>
      <iframe class="embed-preview" ref={preview} src={s.src} title="Preview of the embedded card" data-testid="embed-preview"
        style={previewHeight ? { height: `${previewHeight}px` } : undefined} />
    </dialog>
  );
}
