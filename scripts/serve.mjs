// A minimal static file server for web/dist (the page has no server side; this only serves
// files with the right content types, .wasm included). Usage: node scripts/serve.mjs DIR PORT
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const types = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.css': 'text/css', '.wasm': 'application/wasm', '.json': 'application/json', '.svg': 'image/svg+xml',
  '.png': 'image/png', '.webmanifest': 'application/manifest+json', '.ico': 'image/x-icon', '.md': 'text/markdown; charset=utf-8',
};

export function serve(dir, port, host = '127.0.0.1') {
  const root = path.resolve(dir);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost');
    let file = path.join(root, decodeURIComponent(url.pathname));
    if (!file.startsWith(root)) {
      res.writeHead(403).end();
      return;
    }
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    fs.readFile(file, (err, data) => {
      if (err) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      // Any origin may read these public files: a documentation site on another origin loads the web
      // component (a module script), its worker's code, the wasm and the static data, all under CORS.
      res.writeHead(200, {
        'content-type': types[path.extname(file)] || 'application/octet-stream',
        'access-control-allow-origin': '*',
      });
      res.end(data);
    });
  });
  return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [dir = 'web/dist', port = '8080'] = process.argv.slice(2);
  const server = await serve(dir, Number(port), '0.0.0.0');
  console.log(`memfit is at http://localhost:${server.address().port}/`);
}
