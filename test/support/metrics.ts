/** GETs `/metrics` and returns the Prometheus text (throws unless HTTP 200). */
export async function scrapeMetrics(baseUrl: string, token?: string): Promise<string> {
  const response = await fetch(`${baseUrl}/metrics`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  return response.text();
}

/**
 * The value of the sample `name` whose labels include all of `labels` (0 when there is none),
 * e.g. sample(text, 'http_requests_total', { route: '/quota', status: '200', method: 'GET' }).
 */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([label, value]) => `${label}="${value}"`);
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null || match[1] !== name) continue;
    const present = (match[2] ?? '').split(',');
    if (wanted.every((pair) => present.includes(pair))) return Number(match[3]);
  }
  return 0;
}
