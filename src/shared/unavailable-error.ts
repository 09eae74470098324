/** A feature the caller asked for cannot be served: not offered here, or its provider is down. */
export class UnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnavailableError';
  }
}
