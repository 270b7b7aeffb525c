// Entry point: load the core, build the state from the address bar, keep the address bar in step.
import { render } from 'preact';
import { effect } from '@preact/signals';

import { App } from './components/App.jsx';
import { loadCore } from './core.js';
import { createAppState } from './state.js';

const root = document.getElementById('app');
const URL_DELAY_MS = 150;

loadCore()
  .then((core) => {
    const state = createAppState(core, { search: location.search });
    // The address bar follows the configuration. replaceState is slow and rate-limited by
    // browsers, so typing updates it once the keystrokes pause (the Copy link button is exact).
    let timer = 0;
    effect(() => {
      const url = `${location.pathname}?${state.query.value}${location.hash}`;
      clearTimeout(timer);
      timer = setTimeout(() => {
        if (url !== `${location.pathname}${location.search}${location.hash}`) history.replaceState(history.state, '', url);
      }, URL_DELAY_MS);
    });
    root.textContent = '';
    render(<App state={state} />, root);
    document.documentElement.dataset.ready = 'true';
  })
  .catch((error) => {
    console.error(error);
    root.textContent = '';
    render(
      <div class="load-error" role="alert">
        <h1>memfit could not start</h1>
        <p>The WebAssembly core did not load: {String(error?.message ?? error)}</p>
        <p>Reload the page; if it persists, your browser may block WebAssembly.</p>
      </div>,
      root,
    );
  });
