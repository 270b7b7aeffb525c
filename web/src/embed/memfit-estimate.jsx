// <memfit-estimate>: the estimate as a web component, from one script tag (an ES module served as
// memfit-estimate.js beside index.html):
//   <script type="module" src="https://…/memfit-estimate.js"></script>
//   <memfit-estimate preset="llama-3-8b" seq-len="4096" micro-batch-size="2" view="card"></memfit-estimate>
// Attributes: `link` (a share link or its "?v=2&…" part), any configuration field by its link name
// (seq_len or seq-len, precision, gpu, …; these override the link), `view` (card, breakdown, fit,
// full), `theme` (light, dark; default: the reader's preference), `units` (GiB, GB). It follows
// attribute changes, sizes itself to its content (a block in the page's flow, its own styles in a
// shadow root) and fires `estimate` (detail: the core's result) after each answer. What is written
// inside the element (a link to the estimate) shows only where this script does not run. The core runs in
// one Web Worker shared by every element on the page.
import { render } from 'preact';

import pageCss from '../styles.css';
import detailsCss from '../details.css';
import embedCss from '../embed.css';
import { STALE, startCore, wasmInit, withStaticData } from '../core.js';
import { EmbedCard } from './EmbedCard.jsx';
import { readLink } from './link.js';

const here = new URL('./', import.meta.url);
const OWN = new Set(['link', 'view', 'theme', 'units', 'class', 'style', 'id', 'hidden', 'title', 'lang', 'slot']);

// The page's CSS, the details' and the embed forms' with their root variables on the element (a
// shadow root has no :root).
const shadowCss = `${pageCss}\n${detailsCss}\n${embedCss}`
  .replace(/:root:not\(\[data-theme="light"\]\)/g, ':host(:not([theme="light"]))')
  .replace(/:root\[data-theme="dark"\]/g, ':host([theme="dark"])')
  .replace(/:root/g, ':host')
  + '\n:host { display: block; color: var(--text); font: 14px/1.45 var(--font); }\n:host([hidden]) { display: none; }\n';

// One worker for every element. A script from another origin cannot start a worker from its own
// address directly: then the worker's code is fetched and started from a blob.
// The wasm is compiled here while the worker's script loads (core.js wasmInit); the worker starts
// bare and the static data comes from the build's file (core.js withStaticData).
let shared = null;
function sharedCore() {
  if (shared) return shared;
  const workerUrl = new URL('worker.js', here);
  const init = wasmInit(new URL('memfit.wasm', here).href, { bare: true });
  const sameOrigin = workerUrl.origin === location.origin;
  const make = (url) => () => new Worker(url, { type: 'module', name: 'memfit-core' });
  let core;
  if (sameOrigin) {
    core = startCore({ createWorker: make(workerUrl), init });
  } else {
    const pending = fetch(workerUrl).then((r) => r.text()).then((code) =>
      startCore({ createWorker: make(URL.createObjectURL(new Blob([code], { type: 'text/javascript' }))), init }));
    core = {
      ready: pending.then((c) => c.ready),
      latest: (...args) => pending.then((c) => c.latest(...args)),
      call: (...args) => pending.then((c) => c.call(...args)),
    };
  }
  shared = withStaticData(core, new URL('static-data.json', here).href);
  return shared;
}

let count = 0;

class MemfitEstimate extends HTMLElement {
  constructor() {
    super();
    this.uid = ++count;
    const root = this.attachShadow({ mode: 'open' });
    const style = document.createElement('style');
    style.textContent = shadowCss;
    this.mount = document.createElement('div');
    this.mount.className = 'memfit-estimate';
    root.append(style, this.mount);
    this.observer = new MutationObserver(() => this.update());
  }

  connectedCallback() {
    this.observer.observe(this, { attributes: true });
    this.update();
  }

  disconnectedCallback() {
    this.observer.disconnect();
  }

  // The link, then each field attribute over it (micro-batch-size → micro_batch_size).
  linkText() {
    // A link written into HTML by hand with a bare "&": the parser reads "&micro" in
    // "&micro_batch_size" as the character reference for µ (a legacy one, valid without its ";").
    const link = (this.getAttribute('link') ?? '').replace(/\u00b5_batch_size=/g, '&micro_batch_size=');
    const params = new URLSearchParams(/^[a-z]+:\/\//i.test(link) ? new URL(link).search : link.replace(/^[^?]*\?/, ''));
    for (const { name, value } of this.attributes) {
      if (OWN.has(name) || name.startsWith('data-') || name.startsWith('aria-') || name.startsWith('on')) continue;
      params.set(name.replace(/-/g, '_'), value);
    }
    for (const name of ['view', 'units']) if (this.hasAttribute(name)) params.set(name, this.getAttribute(name));
    return `?${params}`;
  }

  async update() {
    const core = sharedCore();
    let data;
    try {
      data = await core.ready;
    } catch (error) {
      render(<p class="embed-card embed-error" role="alert">memfit could not start: {String(error?.message ?? error)}.</p>, this.mount);
      return;
    }
    const link = readLink(data, this.linkText());
    const problems = link.problems.join('\n');
    if (problems && problems !== this.warned) for (const problem of link.problems) console.warn(`memfit-estimate: link: ${problem}`);
    this.warned = problems;
    const draw = (result) => render(
      <EmbedCard result={result} units={link.units} view={link.view} modelName={link.modelName}
        openHref={new URL(`./?${link.query}`, here).href} accuracyHref={new URL('accuracy.html', here).href} />,
      this.mount,
    );
    if (!this.mount.firstChild) draw(null);
    const result = await core.latest(`element-${this.uid}`, 'estimate', [link.config]);
    if (result === STALE) return;
    draw(result);
    this.dispatchEvent(new CustomEvent('estimate', { detail: result, bubbles: true, composed: true }));
  }
}

if (!customElements.get('memfit-estimate')) customElements.define('memfit-estimate', MemfitEstimate);
