// memfit's service worker: every file of the site is cached when it installs, so the calculator,
// its core and the accuracy pages work with the network off. Cache first; a new build (a new file
// list, named by its hash) replaces the old cache when it activates. The list is written into this
// file by web/build.mjs.
const FILES = self.__MEMFIT_FILES__;
const CACHE = `memfit-${self.__MEMFIT_VERSION__}`;

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(FILES.map((f) => (f === 'index.html' ? './' : f)))).then(() => self.skipWaiting()));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys.filter((k) => k.startsWith('memfit-') && k !== CACHE).map((k) => caches.delete(k))))
    .then(() => self.clients.claim()));
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET' || new URL(request.url).origin !== location.origin) return;
  // A page with a share link is the same page: its address's query is read by the script.
  const navigation = request.mode === 'navigate';
  event.respondWith(caches.open(CACHE).then(async (cache) => {
    const hit = await cache.match(request, { ignoreSearch: navigation });
    return hit ?? fetch(request);
  }));
});
