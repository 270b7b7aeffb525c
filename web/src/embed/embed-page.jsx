// embed.html: the iframe card. Reads the page's link format (plus view= and theme=), asks the core
// (in its Web Worker, as on the page) and draws the card. Its height goes to the embedding page:
//   parent.postMessage({ type: 'memfit:height', height }, '*')
// The message carries nothing but the height; the embedding page keeps only messages whose
// event.source is its own iframe (the snippet the page's Embed button gives does that).
import { render } from 'preact';

import { startPageCore } from '../core.js';
import { EmbedCard } from './EmbedCard.jsx';
import { readLink } from './link.js';

const root = document.getElementById('card');
const site = new URL('./', location.href);

function postHeight() {
  if (window.parent === window) return;
  const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
  window.parent.postMessage({ type: 'memfit:height', height }, '*');
}
new ResizeObserver(postHeight).observe(document.documentElement);

const core = startPageCore({ staticDataFile: 'static-data.json' });
core.ready
  .then(async (data) => {
    const link = readLink(data, location.search);
    for (const problem of link.problems) console.warn(`memfit: link: ${problem}`);
    if (link.theme !== 'auto') document.documentElement.dataset.theme = link.theme;
    const openHref = new URL(`./?${link.query}`, site).href;
    const draw = (result) => render(
      <EmbedCard result={result} units={link.units} view={link.view} modelName={link.modelName}
        openHref={openHref} accuracyHref={new URL('accuracy.html', site).href} />,
      root,
    );
    root.textContent = '';
    draw(null);
    draw(await core.call('estimate', link.config));
    document.documentElement.dataset.ready = 'true';
  })
  .catch((error) => {
    root.textContent = '';
    render(<p class="embed-card embed-error" role="alert">memfit could not start: {String(error?.message ?? error)}.</p>, root);
  });
