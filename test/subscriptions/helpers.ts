/** What the gateway at `url` reports in /readyz: open WebSockets, and subscriptions whose event streams run. */
export async function readiness(url: string): Promise<{ status: string; websockets: number; subscriptions: number }> {
  return (await (await fetch(`${url}/readyz`)).json()) as { status: string; websockets: number; subscriptions: number };
}

/** The subscriptions whose event streams run on the gateway at `url`, as its /readyz reports them. */
export async function subscriptionsRunning(url: string): Promise<number> {
  return (await readiness(url)).subscriptions;
}
