// Entry point. index.html arrives with the default configuration's numbers already in it
// (prerendered at build time), so they are on screen at first paint. Meanwhile this starts the
// core's worker; once the browser has painted, it loads the live page (live.jsx: the app, its
// state) and the details (charts and tables), which take the prerendered page's place when the
// core has answered.
import { render } from 'preact';

import { afterPaint } from './afterPaint.js';
import { startPageCore } from './core.js';

const root = document.getElementById('app');
const core = startPageCore();
const painted = new Promise((resolve) => afterPaint(resolve));
// A chunk of the page that does not arrive (the network, or a site updated since this page loaded)
// is the page's code missing, not the core: LoadError says which.
const pageCode = (error) => { throw Object.assign(new Error(String(error?.message ?? error)), { pageCode: true }); };
const live = painted.then(() => import('./live.jsx')).catch(pageCode);
const details = painted.then(() => import('./components/results/Details.jsx')).catch(pageCode);

Promise.all([core.ready, details, live])
  .then(([data, late, { goLive }]) => goLive(root, core, data, late, startOffline))
  .catch((error) => {
    console.error(error);
    startOffline();
    // The prerendered numbers stay (they are right for the default configuration); the reason the
    // page cannot compute others goes above them.
    const prerendered = root.querySelector('.page') && !document.documentElement.classList.contains('from-link');
    document.documentElement.classList.remove('from-link');
    if (!prerendered) root.textContent = '';
    const box = document.createElement('div');
    root.prepend(box);
    render(<LoadError error={error} />, box);
  });

// Offline: a service worker caches the site (not for a page opened from a file). Its install
// fetches every file of the site (a few MB), so it starts once the page is up and the main thread
// idle, not while the core is still loading: on a first visit it would compete with it.
let offlineAsked = false;
function startOffline() {
  if (offlineAsked || !('serviceWorker' in navigator) || !location.protocol.startsWith('http') ||
      document.getElementById('memfit-worker')) return;
  offlineAsked = true;
  const register = () => navigator.serviceWorker.register('sw.js').catch(() => {});
  if ('requestIdleCallback' in window) requestIdleCallback(register, { timeout: 2000 });
  else setTimeout(register, 500);
}

// The core could not start, or a part of the page's code did not load: say so in words, and what
// to do.
function LoadError({ error }) {
  const local = location.protocol === 'file:';
  if (error?.pageCode) {
    return (
      <div class="load-error" role="alert">
        <h2>memfit could not load all of this page</h2>
        <p>A part of the page's code did not arrive: {error.message}. The numbers below are for the default
          configuration; to change them, reload the page (if memfit was updated since this page was opened, the
          reload fetches the new files).</p>
      </div>
    );
  }
  return (
    <div class="load-error" role="alert">
      <h2>memfit could not start its core</h2>
      <p>The memfit core (WebAssembly, run in a Web Worker) did not load: {String(error?.message ?? error)}.</p>
      {local ? (
        <p>This page was opened from a file. Browsers do not run Web Workers and WebAssembly from files: open
          <strong> memfit.html</strong> (the single-file build) instead, or serve this folder, e.g.
          <code> python3 -m http.server</code>, and open http://localhost:8000/.</p>
      ) : (
        <p>Reload the page. If it persists, your browser or an extension may block WebAssembly or Web Workers:
          memfit needs both (any current Chrome, Edge, Firefox or Safari has them).</p>
      )}
    </div>
  );
}
