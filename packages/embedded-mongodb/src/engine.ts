import { Catalog } from './catalog.js';
import { CursorRegistry } from './cursors.js';

/** The state one server serves: data and open cursors. */
export class Engine {
  readonly catalog = new Catalog();
  readonly cursors = new CursorRegistry();
  readonly startedAt = Date.now();

  close(): void {
    this.cursors.close();
  }
}
