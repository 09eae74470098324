import { z } from 'zod';

import { MAX_PAGE_SIZE } from '../limits.js';
import { userErrors } from '../shared/user-error.js';
import {
  BuyDocument,
  DeleteAllConversationsDocument,
  DeleteConversationDocument,
  GiftPackageDocument,
  ListConversationsDocument,
  LoadConversationDocument,
  type LoadConversationQuery,
  QuotaDocument,
  RenameConversationDocument,
} from './generated/operations.js';
import { conversationIdQuery, purchaseBody, purchaseHeaders, renameBody } from './inputs.js';
import { defineRoute, failed, failureBody, type RestRoute, succeeded } from './route.js';

const message = z.object({ role: z.string(), content: z.string() });

/** A conversation in the legacy shape; `message` is null in lists and the messages in a load. */
const legacyConversation = <M extends z.ZodType>(messages: M) =>
  z.object({
    id: z.int32(),
    user_id: z.int32(),
    name: z.string(),
    message: messages,
    model: z.string(),
    enable_web: z.boolean(),
  });

type Conversation = Omit<NonNullable<LoadConversationQuery['conversation']>, 'messages'>;

/** The legacy body shows a conversation's number as its `id`. */
function toLegacy<M>(conversation: Conversation, messages: M) {
  const { number, userId, name, model, enableWeb } = conversation;
  return { id: number, user_id: userId, name, message: messages, model, enable_web: enableWeb };
}

/**
 * The legacy REST API: one entry per endpoint of the legacy service, and the two the legacy web
 * client also calls (rename, clean); `rest/openapi.ts` documents them from this table. Bodies keep
 * the legacy service's key order: `status`, then `message` or `error`, then `data`.
 */
export const legacyRoutes: RestRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/conversation/list',
    summary: 'List the 100 most recent conversations of the caller, newest first',
    operation: ListConversationsDocument,
    failureField: 'message',
    input: { from: 'nothing' },
    answers: z.union([
      z.object({
        status: z.literal(true),
        message: z.literal(''),
        data: z.array(legacyConversation(z.null())).max(MAX_PAGE_SIZE),
      }),
      failureBody('message'),
    ]),
    respond: ({ conversations }) =>
      succeeded({ message: '', data: conversations.nodes.map((conversation) => toLegacy(conversation, null)) }),
  }),
  defineRoute({
    method: 'GET',
    path: '/conversation/load',
    summary: 'Load one conversation with its messages',
    operation: LoadConversationDocument,
    failureField: 'message',
    input: { from: 'query', schema: conversationIdQuery },
    answers: z.union([
      z.object({ status: z.literal(true), message: z.literal('success'), data: legacyConversation(z.array(message)) }),
      failureBody('message'),
    ]),
    respond: ({ conversation }) =>
      conversation === null
        ? failed('message', userErrors.conversationNotFound.message)
        : succeeded({
            message: 'success',
            data: toLegacy(
              conversation,
              conversation.messages.map(({ role, content }) => ({ role, content })),
            ),
          }),
  }),
  defineRoute({
    method: 'GET',
    path: '/conversation/delete',
    summary: 'Delete one conversation',
    operation: DeleteConversationDocument,
    failureField: 'message',
    input: { from: 'query', schema: conversationIdQuery },
    answers: z.union([z.object({ status: z.literal(true) }), failureBody('message')]),
    respond: ({ deleteConversationByNumber: { ok, error } }) => (ok ? succeeded({}) : failed('message', error!.message)),
  }),
  defineRoute({
    method: 'POST',
    path: '/conversation/rename',
    summary: 'Rename one conversation',
    operation: RenameConversationDocument,
    failureField: 'message',
    input: { from: 'json-body', schema: renameBody },
    answers: z.union([z.object({ status: z.literal(true), message: z.literal('') }), failureBody('message')]),
    respond: ({ renameConversationByNumber: { ok, error } }) => (ok ? succeeded({ message: '' }) : failed('message', error!.message)),
  }),
  defineRoute({
    method: 'GET',
    path: '/conversation/clean',
    summary: 'Delete all conversations of the caller',
    operation: DeleteAllConversationsDocument,
    failureField: 'message',
    input: { from: 'nothing' },
    answers: z.union([z.object({ status: z.literal(true), message: z.literal('') }), failureBody('message')]),
    respond: () => succeeded({ message: '' }),
  }),
  defineRoute({
    method: 'GET',
    path: '/quota',
    summary: 'Query the balance in points',
    operation: QuotaDocument,
    failureField: 'error',
    input: { from: 'nothing' },
    answers: z.union([z.object({ status: z.literal(true), quota: z.number() }), failureBody('error')]),
    respond: ({ quota }) => succeeded({ quota }),
  }),
  defineRoute({
    method: 'POST',
    path: '/buy',
    summary: 'Buy points, paid from the wallet at the SSO provider (official deployment only)',
    operation: BuyDocument,
    failureField: 'error',
    input: { from: 'json-body', schema: purchaseBody, headers: purchaseHeaders },
    answers: z.union([z.object({ status: z.literal(true), error: z.literal('success') }), failureBody('error')]),
    respond: ({ buy: { ok, error } }) => (ok ? succeeded({ error: 'success' }) : failed('error', error!.message)),
  }),
  defineRoute({
    method: 'GET',
    path: '/package',
    summary: 'Query the gift package status, claiming it when eligible (official deployment only)',
    operation: GiftPackageDocument,
    changesData: true,
    failureField: 'error',
    input: { from: 'nothing' },
    answers: z.union([
      z.object({ status: z.literal(true), data: z.object({ cert: z.boolean(), teenager: z.boolean() }) }),
      failureBody('error'),
    ]),
    respond: ({ giftPackage: { cert, teenager } }) => succeeded({ data: { cert, teenager } }),
  }),
];
