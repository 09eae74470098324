// Loaded with `node --allow-natives-syntax --import` into a server process: for every response
// that finishes, writes to stderr whether V8 still holds its request and response as fast objects
// (not dictionaries, whose every property read is a hash lookup). Node's own diagnostics channel,
// so the server's code is the code that runs in production.
import { subscribe } from 'node:diagnostics_channel';

const hasFastProperties = new Function('object', 'return %HasFastProperties(object)');

subscribe('http.server.response.finish', ({ request, response }) => {
  const seen = { method: request.method, url: request.url, request: hasFastProperties(request), response: hasFastProperties(response) };
  process.stderr.write(`fast-objects ${JSON.stringify(seen)}\n`);
});
