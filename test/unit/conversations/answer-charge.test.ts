import { describe, expect, it } from 'vitest';

import { type AnswerCharge, ConversationService } from '../../../src/conversations/conversation.service.js';
import type { ConversationStore } from '../../../src/conversations/conversation.store.js';
import { responseTooLarge } from '../../../src/errors.js';
import { conversation, MemoryConversations } from '../support/fakes.js';

/** A charge of the service's own port: it records what it is told, and refuses past `maxBytes`. */
function recordingCharge(maxBytes = Number.POSITIVE_INFINITY): AnswerCharge & { charged: number[]; admitted: number[] } {
  let spent = 0;
  const charge = {
    charged: [] as number[],
    admitted: [] as number[],
    charge(bytes: number) {
      charge.charged.push(bytes);
      spent += bytes;
      if (spent > maxBytes) throw responseTooLarge(maxBytes);
    },
    admit(bytes: number) {
      charge.admitted.push(bytes);
    },
  };
  return charge;
}

function serviceOver(rows: ReturnType<typeof conversation>[], charge: AnswerCharge): ConversationService {
  return new ConversationService(new MemoryConversations(rows) as unknown as ConversationStore, 1, charge);
}

describe('the conversations service over any charge of its own port', () => {
  it('charges a page its names and models once, and admits its read as it arrives', async () => {
    const charge = recordingCharge();
    const rows = [conversation(1, 1), conversation(1, 2)];
    const page = await serviceOver(rows, charge).page({ first: 2 });
    expect(page.nodes.map((node) => node.id)).toEqual([2, 1]);
    const summary = (row: (typeof rows)[number]) => Buffer.byteLength(row.name) + Buffer.byteLength(row.model);
    expect(charge.charged).toEqual([summary(rows[1]!) + summary(rows[0]!)]);
    expect(charge.admitted.length).toBeGreaterThan(0);
  });

  it('charges a conversation’s messages each time they are resolved, as an alias repeats them', async () => {
    const charge = recordingCharge();
    const row = conversation(1, 1, [{ role: 'user', content: 'héllo' }]);
    const service = serviceOver([row], charge);
    const found = (await service.get(1))!;
    await service.messagesOf(found);
    await service.messagesOf(found);
    const messageBytes = Buffer.byteLength('user') + Buffer.byteLength('héllo');
    expect(charge.charged.slice(1)).toEqual([messageBytes, messageBytes]);
  });

  it('hands nothing on once the charge refuses: the refusal is what the caller gets', async () => {
    const service = serviceOver([conversation(1, 1)], recordingCharge(1));
    await expect(service.get(1)).rejects.toMatchObject({ kind: 'responseTooLarge' });
  });
});
