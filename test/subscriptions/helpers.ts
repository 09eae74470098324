/** The subscriptions whose event streams run on the gateway at `url`, as its /readyz reports them. */
export async function subscriptionsRunning(url: string): Promise<number> {
  const readiness = (await (await fetch(`${url}/readyz`)).json()) as { subscriptions: number };
  return readiness.subscriptions;
}
