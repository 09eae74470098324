// Module loader hooks of loaded-modules.mjs: they run on the loader's own thread, and report there.
let port;

export function initialize(data) {
  port = data.port;
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  if (resolved.url.includes('/@opentelemetry/')) port.postMessage(resolved.url);
  return resolved;
}
