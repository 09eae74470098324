import { userErrors } from '../shared/user-error.js';
import {
  BuyDocument,
  DeleteConversationDocument,
  GiftPackageDocument,
  ListConversationsDocument,
  LoadConversationDocument,
  QuotaDocument,
} from './generated/operations.js';
import { arrayOf, boolean, constant, integer, number, object, string } from './json-schema.js';
import { idInput, noInput, quotaBodyInput } from './legacy-input.js';
import { defineRoute, type RestRoute } from './route.js';

const failure = (field: 'message' | 'error') => object({ status: constant(false), [field]: string });

const legacyConversation = (messages: Record<string, unknown>) =>
  object({ id: integer, user_id: integer, name: string, message: messages, model: string, enable_web: boolean });

/**
 * The legacy REST API: one entry per documented endpoint (spec §4). Bodies keep
 * the spec's key order: `status`, then `message` or `error`, then `data`.
 */
export const legacyRoutes: RestRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/conversation/list',
    summary: 'List the 100 most recent conversations of the caller, newest first',
    operation: ListConversationsDocument,
    failureField: 'message',
    input: noInput,
    respond: ({ conversations }) => ({
      status: true,
      message: '',
      data: conversations.nodes.map((conversation) => ({
        id: conversation.id,
        user_id: conversation.userId,
        name: conversation.name,
        message: null,
        model: conversation.model,
        enable_web: conversation.enableWeb,
      })),
    }),
    answers: {
      oneOf: [
        object({ status: constant(true), message: constant(''), data: { ...arrayOf(legacyConversation(constant(null))), maxItems: 100 } }),
        failure('message'),
      ],
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/conversation/load',
    summary: 'Load one conversation with its messages',
    operation: LoadConversationDocument,
    failureField: 'message',
    input: idInput,
    respond: ({ conversation }) =>
      conversation === null
        ? { status: false, message: userErrors.conversationNotFound.message }
        : {
            status: true,
            message: 'success',
            data: {
              id: conversation.id,
              user_id: conversation.userId,
              name: conversation.name,
              message: conversation.messages.map(({ role, content }) => ({ role, content })),
              model: conversation.model,
              enable_web: conversation.enableWeb,
            },
          },
    answers: {
      oneOf: [
        object({
          status: constant(true),
          message: constant('success'),
          data: legacyConversation(arrayOf(object({ role: string, content: string }))),
        }),
        failure('message'),
      ],
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/conversation/delete',
    summary: 'Delete one conversation',
    operation: DeleteConversationDocument,
    failureField: 'message',
    input: idInput,
    respond: ({ deleteConversation }) =>
      deleteConversation.ok ? { status: true } : { status: false, message: deleteConversation.error?.message },
    answers: { oneOf: [object({ status: constant(true) }), failure('message')] },
  }),
  defineRoute({
    method: 'GET',
    path: '/quota',
    summary: 'Query the balance in points',
    operation: QuotaDocument,
    failureField: 'error',
    input: noInput,
    respond: ({ quota }) => ({ status: true, quota }),
    answers: { oneOf: [object({ status: constant(true), quota: number }), failure('error')] },
  }),
  defineRoute({
    method: 'POST',
    path: '/buy',
    summary: 'Buy points, paid from the wallet at the SSO provider (official deployment only)',
    operation: BuyDocument,
    failureField: 'error',
    input: quotaBodyInput,
    respond: ({ buy }) => (buy.ok ? { status: true, error: 'success' } : { status: false, error: buy.error?.message }),
    answers: { oneOf: [object({ status: constant(true), error: constant('success') }), failure('error')] },
  }),
  defineRoute({
    method: 'GET',
    path: '/package',
    summary: 'Query the gift package status, claiming it when eligible (official deployment only)',
    operation: GiftPackageDocument,
    failureField: 'error',
    input: noInput,
    respond: ({ giftPackage }) => ({ status: true, data: { cert: giftPackage.cert, teenager: giftPackage.teenager } }),
    answers: {
      oneOf: [object({ status: constant(true), data: object({ cert: boolean, teenager: boolean }) }), failure('error')],
    },
  }),
];
