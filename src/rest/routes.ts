import {
  BuyDocument,
  DeleteConversationDocument,
  GiftPackageDocument,
  ListConversationsDocument,
  LoadConversationDocument,
  QuotaDocument,
} from './generated/operations.js';
import { integerField, parseIdParameter, parseJsonBody } from './legacy-input.js';
import { defineRoute, type RestRoute } from './route.js';
import { userErrors } from '../shared/user-error.js';

const noVariables = () => ({ ok: true, value: {} }) as const;
const idVariable = ({ query }: { query: URLSearchParams }) => {
  const id = parseIdParameter(query);
  return id.ok ? ({ ok: true, value: { id: id.value } } as const) : id;
};

/**
 * The legacy REST API: one entry per documented endpoint (spec §4). Bodies keep
 * the spec's key order: `status`, then `message` or `error`, then `data`.
 */
export const legacyRoutes: RestRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/conversation/list',
    summary: 'List the 100 most recent conversations of the caller',
    operation: ListConversationsDocument,
    failureField: 'message',
    variables: noVariables,
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
  }),
  defineRoute({
    method: 'GET',
    path: '/conversation/load',
    summary: 'Load one conversation with its messages',
    operation: LoadConversationDocument,
    failureField: 'message',
    variables: idVariable,
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
  }),
  defineRoute({
    method: 'GET',
    path: '/conversation/delete',
    summary: 'Delete one conversation',
    operation: DeleteConversationDocument,
    failureField: 'message',
    variables: idVariable,
    respond: ({ deleteConversation }) =>
      deleteConversation.ok ? { status: true } : { status: false, message: deleteConversation.error?.message },
  }),
  defineRoute({
    method: 'GET',
    path: '/quota',
    summary: 'Query the balance in points',
    operation: QuotaDocument,
    failureField: 'error',
    variables: noVariables,
    respond: ({ quota }) => ({ status: true, quota }),
  }),
  defineRoute({
    method: 'POST',
    path: '/buy',
    summary: 'Buy points, paid from the wallet at the SSO provider (official deployment only)',
    operation: BuyDocument,
    failureField: 'error',
    variables: ({ body }) => {
      const json = parseJsonBody(body);
      if (!json.ok) return json;
      const quota = integerField(json.value, 'quota', userErrors.invalidQuota.message);
      return quota.ok ? { ok: true, value: { quota: quota.value } } : quota;
    },
    respond: ({ buy }) => (buy.ok ? { status: true, error: 'success' } : { status: false, error: buy.error?.message }),
  }),
  defineRoute({
    method: 'GET',
    path: '/package',
    summary: 'Query the gift package status, claiming it when eligible (official deployment only)',
    operation: GiftPackageDocument,
    failureField: 'error',
    variables: noVariables,
    respond: ({ giftPackage }) => ({ status: true, data: { cert: giftPackage.cert, teenager: giftPackage.teenager } }),
  }),
];
