import { type Failure, responseTooLarge } from '../errors.js';

/**
 * What one answer (one request, or one subscription event) may carry of the stored text it shows,
 * in the bytes it is written in (`writtenBytes`: UTF-8, and JSON's escapes, so that a control
 * character counts six bytes and a quote two): conversations' names and models, messages' roles
 * and contents. Every door writes the answer it is given as JSON (`/graphql`, the legacy REST
 * endpoints, each subscription transport, the sidecar's answer from its upstream's). Items are capped
 * elsewhere (100 a page, 100 ids), but one conversation may hold up to 16 MiB and aliases repeat
 * it, so the bytes are counted too, as they are produced, before anything is serialised.
 *
 * The services that hand stored text to the answer `charge` it each time they do (a conversation's
 * messages each time they are resolved: an alias repeating them counts again); the reads behind
 * them are `admit`ted as they arrive, and stopped once they hold more than the answer has room left
 * for, so a request never holds much more than the limit. Once past the limit, every later charge
 * throws too, and the execute stage answers the refusal alone: none of what was resolved is written.
 * It is what those services take as their charge (`AnswerCharge` in `conversations/conversation.service.ts`).
 */
export class ResponseBudget {
  private spent = 0;
  private refused: Failure | undefined;

  constructor(readonly maxBytes: number) {}

  /** The failure the answer is, once it went past the limit. */
  get refusal(): Failure | undefined {
    return this.refused;
  }

  /** Counts `bytes` more in the answer; throws once the answer is over the limit. */
  charge(bytes: number): void {
    this.spent += bytes;
    if (this.spent > this.maxBytes) throw this.refuse();
  }

  /** A read for the answer holds `bytes` so far: throws once that is more than the answer has room left for. */
  admit(bytes: number): void {
    if (this.spent + bytes > this.maxBytes) throw this.refuse();
  }

  private refuse(): Failure {
    return (this.refused ??= responseTooLarge(this.maxBytes));
  }
}
