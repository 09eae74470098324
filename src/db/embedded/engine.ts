import { Catalog } from './catalog.js';
import { CursorRegistry } from './cursors.js';

export interface CommandEvent {
  /** The command name as sent, e.g. `find`, `insert`, `hello`. */
  name: string;
  db: string;
}

/** The state one server serves: data, open cursors and command statistics. */
export class Engine {
  readonly catalog = new Catalog();
  readonly cursors = new CursorRegistry();
  readonly startedAt = Date.now();
  readonly commandCounts = new Map<string, number>();
  readonly commandListeners = new Set<(event: CommandEvent) => void>();

  recordCommand(event: CommandEvent): void {
    this.commandCounts.set(event.name, (this.commandCounts.get(event.name) ?? 0) + 1);
    for (const listener of this.commandListeners) {
      try {
        listener(event);
      } catch {
        // An observer's failure is not the command's.
      }
    }
  }

  close(): void {
    this.cursors.close();
  }
}
