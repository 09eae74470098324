import type { GraphQLResolveInfo } from 'graphql';
import type { ConversationRecord } from '../../conversations/conversation.model.js';
import type { ConversationPage, DeleteOutcome, RenameOutcome } from '../../conversations/conversation.service.js';
import type { BuyOutcome } from '../../billing/billing.service.js';
import type { ConversationChange } from '../../subscriptions/conversation-events.js';
import type { RequestContext } from '../../context.js';
export type Maybe<T> = T | null;
export type InputMaybe<T> = Maybe<T>;
export type Omit<T, K extends keyof T> = Pick<T, Exclude<keyof T, K>>;
export type RequireFields<T, K extends keyof T> = Omit<T, K> & { [P in K]-?: NonNullable<T[P]> };
/** All built-in and custom scalars, mapped to their actual values */
export type Scalars = {
  ID: { input: string; output: string; }
  String: { input: string; output: string; }
  Boolean: { input: boolean; output: boolean; }
  Int: { input: number; output: number; }
  Float: { input: number; output: number; }
};

/** Result of `buy`. */
export type BuyPayload = {
  __typename?: 'BuyPayload';
  /** Why nothing was bought, when `ok` is false. */
  error?: Maybe<UserError>;
  /** True when the points were paid for and credited. */
  ok: Scalars['Boolean']['output'];
  /** The caller's balance in points after the purchase. */
  quota?: Maybe<Scalars['Float']['output']>;
};

/** A stored chat conversation. */
export type Conversation = Node & {
  __typename?: 'Conversation';
  /** Whether web search was enabled most recently in this conversation. */
  enableWeb: Scalars['Boolean']['output'];
  /** Global identifier: opaque, stable, unique across types and users. Mutations take it. */
  id: Scalars['ID']['output'];
  /** Messages in conversation order: an optional system message, then alternating user and assistant messages. */
  messages: Array<Message>;
  /** The model used most recently in this conversation. */
  model: Scalars['String']['output'];
  /** Title of the conversation. */
  name: Scalars['String']['output'];
  /** Number of the conversation among its owner's conversations, never reused; the legacy REST endpoints call it `id`. */
  number: Scalars['Int']['output'];
  /** Identifier of the owner. */
  userId: Scalars['Int']['output'];
};

/** A page of conversations. */
export type ConversationConnection = {
  __typename?: 'ConversationConnection';
  /** The same conversations, each with its cursor. */
  edges: Array<ConversationEdge>;
  /** The conversations of this page, newest first. */
  nodes: Array<Conversation>;
  /** Where this page starts and ends, and whether others come before or after it. */
  pageInfo: PageInfo;
  /** How many conversations the caller has in all. */
  totalCount: Scalars['Int']['output'];
};

/** A conversation with its position in the connection. */
export type ConversationEdge = {
  __typename?: 'ConversationEdge';
  /** Opaque cursor of this conversation; pass it as `after` to continue after it, or `before` to go back from it. */
  cursor: Scalars['String']['output'];
  /** The conversation. */
  node: Conversation;
};

/** A change to one of the caller's conversations. */
export type ConversationEvent = {
  __typename?: 'ConversationEvent';
  /**
   * The conversation as it is now; null on `DELETED`, and on an `UPDATED` whose conversation has
   * been deleted since (its `DELETED` follows).
   */
  conversation?: Maybe<Conversation>;
  /** The conversation's global id. */
  conversationId: Scalars['ID']['output'];
  /**
   * The conversation's global id on `DELETED`, null otherwise: a client removes the conversation from
   * its cache or lists on this field alone (Relay's `@deleteRecord` or `@deleteEdge`), as it adds one
   * from `conversation` (`@prependNode`, which leaves a conversation already listed where it is).
   */
  deletedConversationId?: Maybe<Scalars['ID']['output']>;
  /** What happened to the conversation. */
  kind: ConversationEventKind;
  /** The conversation's number among the caller's conversations. */
  number: Scalars['Int']['output'];
};

/** Kinds of change to a conversation. */
export type ConversationEventKind =
  /** The conversation was created. */
  | 'CREATED'
  /** The conversation was deleted. */
  | 'DELETED'
  /** The conversation changed: renamed, a message appended, its model or web option changed. */
  | 'UPDATED';

/** Result of `deleteAllConversations`. */
export type DeleteAllConversationsPayload = {
  __typename?: 'DeleteAllConversationsPayload';
  /** How many conversations were deleted (0 when there were none). */
  deletedCount: Scalars['Int']['output'];
  /** Always true: having no conversations left is the outcome asked for. */
  ok: Scalars['Boolean']['output'];
};

/** Result of `deleteConversation` and `deleteConversationByNumber`. */
export type DeleteConversationPayload = {
  __typename?: 'DeleteConversationPayload';
  /** The global id of the conversation deleted, for removing it from a client's cache; null when `ok` is false. */
  deletedConversationId?: Maybe<Scalars['ID']['output']>;
  /** Why nothing was deleted, when `ok` is false. */
  error?: Maybe<UserError>;
  /** True when the conversation was deleted. */
  ok: Scalars['Boolean']['output'];
};

/** The caller's certification status at the SSO provider. */
export type GiftPackage = {
  __typename?: 'GiftPackage';
  /** Whether the caller has passed real-name certification. */
  cert: Scalars['Boolean']['output'];
  /** Whether the caller is a minor. */
  teenager: Scalars['Boolean']['output'];
};

/** One message of a conversation. */
export type Message = {
  __typename?: 'Message';
  /** Text of the message. */
  content: Scalars['String']['output'];
  /** Author role: `system`, `user` or `assistant`. */
  role: Scalars['String']['output'];
};

/**
 * What a caller can change: their conversations, and their balance by buying points. An expected
 * outcome that is not a success (not found, invalid input, wallet too low, not available) is data,
 * `ok: false` with a `UserError`, not an error.
 */
export type Mutation = {
  __typename?: 'Mutation';
  /**
   * Buys points, paid from the caller's wallet at the SSO provider (1 unit of money = 10 points).
   * Available on the official deployment only. Outcomes: `ok` with the new balance, the points
   * already credited; `INSUFFICIENT_FUNDS` (nothing charged); `INVALID_INPUT` (nothing charged);
   * `UNAVAILABLE` when the provider's answer did not come ("payment not confirmed yet"): the
   * purchase stays open, and its points are credited whenever the provider charges it, even hours later.
   */
  buy: BuyPayload;
  /** Deletes all of the caller's conversations. Their numbers are never given to another conversation. */
  deleteAllConversations: DeleteAllConversationsPayload;
  /**
   * Deletes one of the caller's conversations. Its number is never given to another conversation.
   * Answers `NOT_FOUND` when the id names no conversation of the caller.
   */
  deleteConversation: DeleteConversationPayload;
  /**
   * `deleteConversation` for clients that name conversations by their number, as the legacy REST
   * endpoints do. Answers `NOT_FOUND` when the caller has no conversation of this number.
   */
  deleteConversationByNumber: DeleteConversationPayload;
  /**
   * Renames one of the caller's conversations; the name is stored exactly as given.
   * Answers `INVALID_INPUT` ("invalid name") for a name that is empty, blank or longer than 256 characters,
   * and `NOT_FOUND` when the id names no conversation of the caller.
   */
  renameConversation: RenameConversationPayload;
  /**
   * `renameConversation` for clients that name conversations by their number, as the legacy REST
   * endpoints do; the same rules and outcomes.
   */
  renameConversationByNumber: RenameConversationPayload;
};


/**
 * What a caller can change: their conversations, and their balance by buying points. An expected
 * outcome that is not a success (not found, invalid input, wallet too low, not available) is data,
 * `ok: false` with a `UserError`, not an error.
 */
export type MutationBuyArgs = {
  idempotencyKey?: InputMaybe<Scalars['String']['input']>;
  quota: Scalars['Int']['input'];
};


/**
 * What a caller can change: their conversations, and their balance by buying points. An expected
 * outcome that is not a success (not found, invalid input, wallet too low, not available) is data,
 * `ok: false` with a `UserError`, not an error.
 */
export type MutationDeleteConversationArgs = {
  id: Scalars['ID']['input'];
};


/**
 * What a caller can change: their conversations, and their balance by buying points. An expected
 * outcome that is not a success (not found, invalid input, wallet too low, not available) is data,
 * `ok: false` with a `UserError`, not an error.
 */
export type MutationDeleteConversationByNumberArgs = {
  number: Scalars['Int']['input'];
};


/**
 * What a caller can change: their conversations, and their balance by buying points. An expected
 * outcome that is not a success (not found, invalid input, wallet too low, not available) is data,
 * `ok: false` with a `UserError`, not an error.
 */
export type MutationRenameConversationArgs = {
  id: Scalars['ID']['input'];
  name: Scalars['String']['input'];
};


/**
 * What a caller can change: their conversations, and their balance by buying points. An expected
 * outcome that is not a success (not found, invalid input, wallet too low, not available) is data,
 * `ok: false` with a `UserError`, not an error.
 */
export type MutationRenameConversationByNumberArgs = {
  name: Scalars['String']['input'];
  number: Scalars['Int']['input'];
};

/** An object that `Query.node` fetches again by its global id (Relay's Global Object Identification). */
export type Node = {
  /**
   * Global identifier: opaque, stable, and unique across types and users. `Query.node` fetches the
   * object again by it.
   */
  id: Scalars['ID']['output'];
};

/** Pagination state of a connection, following the Relay cursor connection convention. */
export type PageInfo = {
  __typename?: 'PageInfo';
  /** Cursor of the last item of this page; pass it as `after` to get the next page. Null on an empty page. */
  endCursor?: Maybe<Scalars['String']['output']>;
  /** Whether more items follow the last one of this page (within `before`, when given). */
  hasNextPage: Scalars['Boolean']['output'];
  /**
   * Whether more items come before the first one of this page (within `after`, when given). When
   * `first` and `last` are both given, whether the range holds more than `last`, as the Relay Cursor
   * Connections specification defines it.
   */
  hasPreviousPage: Scalars['Boolean']['output'];
  /** Cursor of the first item of this page; pass it as `before` to get the page before. Null on an empty page. */
  startCursor?: Maybe<Scalars['String']['output']>;
};

/**
 * What a caller can read: their conversations and balance, their gift package, and any object by
 * its global id. Every field answers for the caller the credentials name; another user's data looks
 * exactly like data that does not exist.
 */
export type Query = {
  __typename?: 'Query';
  /**
   * One of the caller's conversations by its number, as the legacy REST endpoints name it (`id`
   * there). Null when the caller has no conversation of this number.
   */
  conversation?: Maybe<Conversation>;
  /**
   * The caller's conversations, newest (highest number) first: a Relay cursor connection both ways.
   * Forward: `first` after the cursor `after` (the previous page's `pageInfo.endCursor`). Backward:
   * `last` before the cursor `before` (the next page's `pageInfo.startCursor`). `first` is 100 when
   * neither `first` nor `last` is given, and each is capped at 100. Given together, they follow the
   * Relay Cursor Connections specification: the range between the cursors, then its first `first`,
   * then the last `last` of those; `hasNextPage` then says whether the range holds more than `first`,
   * `hasPreviousPage` more than `last`. A cursor stays valid after the conversation it names is deleted.
   */
  conversations: ConversationConnection;
  /**
   * The caller's certification flags at the SSO provider. Reading it claims the gift package:
   * 50 points once certified, 150 more once as a minor, each at most once per user, ever.
   * Available on the official deployment only; elsewhere, and while the provider cannot be
   * reached (nothing is granted then), it fails with code `UNAVAILABLE`.
   */
  giftPackage: GiftPackage;
  /**
   * The object with this global id (Relay's Global Object Identification). Null when no object has
   * it, when it is not an id of this API, or when the object belongs to someone else.
   */
  node?: Maybe<Node>;
  /**
   * The objects with these global ids, in the same order; each is null where `node` would be.
   * At most 100 ids, each given once: a list that repeats an id is refused (`BAD_USER_INPUT`),
   * rather than answered with the same object again. The caller's conversations among them are
   * read in one database query.
   */
  nodes: Array<Maybe<Node>>;
  /**
   * The caller's balance in points. On the official deployment, purchases of the caller left
   * unfinished (the provider's answer lost or late) are settled first, so a charge shows here.
   */
  quota: Scalars['Float']['output'];
};


/**
 * What a caller can read: their conversations and balance, their gift package, and any object by
 * its global id. Every field answers for the caller the credentials name; another user's data looks
 * exactly like data that does not exist.
 */
export type QueryConversationArgs = {
  number: Scalars['Int']['input'];
};


/**
 * What a caller can read: their conversations and balance, their gift package, and any object by
 * its global id. Every field answers for the caller the credentials name; another user's data looks
 * exactly like data that does not exist.
 */
export type QueryConversationsArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  before?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  last?: InputMaybe<Scalars['Int']['input']>;
};


/**
 * What a caller can read: their conversations and balance, their gift package, and any object by
 * its global id. Every field answers for the caller the credentials name; another user's data looks
 * exactly like data that does not exist.
 */
export type QueryNodeArgs = {
  id: Scalars['ID']['input'];
};


/**
 * What a caller can read: their conversations and balance, their gift package, and any object by
 * its global id. Every field answers for the caller the credentials name; another user's data looks
 * exactly like data that does not exist.
 */
export type QueryNodesArgs = {
  ids: Array<Scalars['ID']['input']>;
};

/** Result of `renameConversation` and `renameConversationByNumber`. */
export type RenameConversationPayload = {
  __typename?: 'RenameConversationPayload';
  /** The conversation with its new name, when `ok` is true. */
  conversation?: Maybe<Conversation>;
  /** Why nothing was renamed, when `ok` is false. */
  error?: Maybe<UserError>;
  /** True when the conversation was renamed. */
  ok: Scalars['Boolean']['output'];
};

/**
 * Live updates, served over three transports with the same credentials, limits and rules: WebSocket
 * (the `graphql-transport-ws` protocol on `/graphql`), Server-Sent Events (the `graphql-sse` protocol
 * on `/graphql/stream`) and Apollo's multipart HTTP subscriptions (`POST /graphql` with
 * `Accept: multipart/mixed;subscriptionSpec="1.0"`). They come from the database's change streams,
 * so they include writes by every gateway instance and by any other writer of the same database.
 */
export type Subscription = {
  __typename?: 'Subscription';
  /** The caller's conversations as they are created, updated (renamed, a message appended) or deleted. */
  conversationEvents: ConversationEvent;
  /** The caller's balance in points: its current value first, then each new value as it changes. */
  quota: Scalars['Float']['output'];
};

/**
 * An expected outcome that is not a success: something the caller can act on.
 * Its `message` is the text the REST layer answers for the same case.
 */
export type UserError = {
  __typename?: 'UserError';
  /** Machine-readable kind of the outcome. */
  code: UserErrorCode;
  /** Human-readable English sentence, identical to the REST layer's text. */
  message: Scalars['String']['output'];
};

/** Kinds of expected, non-successful outcomes. */
export type UserErrorCode =
  /** The caller's wallet at the SSO provider cannot pay for this purchase. */
  | 'INSUFFICIENT_FUNDS'
  /** An argument is outside its allowed range. */
  | 'INVALID_INPUT'
  /** The conversation does not exist or belongs to someone else. */
  | 'NOT_FOUND'
  /** The feature is not offered on this deployment, or the SSO provider cannot be reached right now. */
  | 'UNAVAILABLE';



export type ResolverTypeWrapper<T> = Promise<T> | T;


export type ResolverWithResolve<TResult, TParent, TContext, TArgs> = {
  resolve: ResolverFn<TResult, TParent, TContext, TArgs>;
};
export type Resolver<TResult, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> = ResolverFn<TResult, TParent, TContext, TArgs> | ResolverWithResolve<TResult, TParent, TContext, TArgs>;

export type ResolverFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => Promise<TResult> | TResult;

export type SubscriptionSubscribeFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => AsyncIterable<TResult> | Promise<AsyncIterable<TResult>>;

export type SubscriptionResolveFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => TResult | Promise<TResult>;

export interface SubscriptionSubscriberObject<TResult, TKey extends string, TParent, TContext, TArgs> {
  subscribe: SubscriptionSubscribeFn<{ [key in TKey]: TResult }, TParent, TContext, TArgs>;
  resolve?: SubscriptionResolveFn<TResult, { [key in TKey]: TResult }, TContext, TArgs>;
}

export interface SubscriptionResolverObject<TResult, TParent, TContext, TArgs> {
  subscribe: SubscriptionSubscribeFn<any, TParent, TContext, TArgs>;
  resolve: SubscriptionResolveFn<TResult, any, TContext, TArgs>;
}

export type SubscriptionObject<TResult, TKey extends string, TParent, TContext, TArgs> =
  | SubscriptionSubscriberObject<TResult, TKey, TParent, TContext, TArgs>
  | SubscriptionResolverObject<TResult, TParent, TContext, TArgs>;

export type SubscriptionResolver<TResult, TKey extends string, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> =
  | ((...args: any[]) => SubscriptionObject<TResult, TKey, TParent, TContext, TArgs>)
  | SubscriptionObject<TResult, TKey, TParent, TContext, TArgs>;

export type TypeResolveFn<TTypes, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>> = (
  parent: TParent,
  context: TContext,
  info: GraphQLResolveInfo
) => Maybe<TTypes> | Promise<Maybe<TTypes>>;

export type IsTypeOfResolverFn<T = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>> = (obj: T, context: TContext, info: GraphQLResolveInfo) => boolean | Promise<boolean>;

export type NextResolverFn<T> = () => Promise<T>;

export type DirectiveResolverFn<TResult = Record<PropertyKey, never>, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> = (
  next: NextResolverFn<TResult>,
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => TResult | Promise<TResult>;




/** Mapping of interface types */
export type ResolversInterfaceTypes<_RefType extends Record<string, unknown>> = {
  Node: ( ConversationRecord );
};

/** Mapping between all available schema types and the resolvers types */
export type ResolversTypes = {
  Boolean: ResolverTypeWrapper<Scalars['Boolean']['output']>;
  BuyPayload: ResolverTypeWrapper<BuyOutcome>;
  Conversation: ResolverTypeWrapper<ConversationRecord>;
  ConversationConnection: ResolverTypeWrapper<ConversationPage>;
  ConversationEdge: ResolverTypeWrapper<Omit<ConversationEdge, 'node'> & { node: ResolversTypes['Conversation'] }>;
  ConversationEvent: ResolverTypeWrapper<ConversationChange>;
  ConversationEventKind: ConversationEventKind;
  DeleteAllConversationsPayload: ResolverTypeWrapper<DeleteAllConversationsPayload>;
  DeleteConversationPayload: ResolverTypeWrapper<DeleteOutcome>;
  Float: ResolverTypeWrapper<Scalars['Float']['output']>;
  GiftPackage: ResolverTypeWrapper<GiftPackage>;
  ID: ResolverTypeWrapper<Scalars['ID']['output']>;
  Int: ResolverTypeWrapper<Scalars['Int']['output']>;
  Message: ResolverTypeWrapper<Message>;
  Mutation: ResolverTypeWrapper<Record<PropertyKey, never>>;
  Node: ResolverTypeWrapper<ResolversInterfaceTypes<ResolversTypes>['Node']>;
  PageInfo: ResolverTypeWrapper<ConversationPage>;
  Query: ResolverTypeWrapper<Record<PropertyKey, never>>;
  RenameConversationPayload: ResolverTypeWrapper<RenameOutcome>;
  String: ResolverTypeWrapper<Scalars['String']['output']>;
  Subscription: ResolverTypeWrapper<Record<PropertyKey, never>>;
  UserError: ResolverTypeWrapper<UserError>;
  UserErrorCode: UserErrorCode;
};

/** Mapping between all available schema types and the resolvers parents */
export type ResolversParentTypes = {
  Boolean: Scalars['Boolean']['output'];
  BuyPayload: BuyOutcome;
  Conversation: ConversationRecord;
  ConversationConnection: ConversationPage;
  ConversationEdge: Omit<ConversationEdge, 'node'> & { node: ResolversParentTypes['Conversation'] };
  ConversationEvent: ConversationChange;
  DeleteAllConversationsPayload: DeleteAllConversationsPayload;
  DeleteConversationPayload: DeleteOutcome;
  Float: Scalars['Float']['output'];
  GiftPackage: GiftPackage;
  ID: Scalars['ID']['output'];
  Int: Scalars['Int']['output'];
  Message: Message;
  Mutation: Record<PropertyKey, never>;
  Node: ResolversInterfaceTypes<ResolversParentTypes>['Node'];
  PageInfo: ConversationPage;
  Query: Record<PropertyKey, never>;
  RenameConversationPayload: RenameOutcome;
  String: Scalars['String']['output'];
  Subscription: Record<PropertyKey, never>;
  UserError: UserError;
};

export type BuyPayloadResolvers<ContextType = RequestContext, ParentType extends ResolversParentTypes['BuyPayload'] = ResolversParentTypes['BuyPayload']> = {
  error?: Resolver<Maybe<ResolversTypes['UserError']>, ParentType, ContextType>;
  ok?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  quota?: Resolver<Maybe<ResolversTypes['Float']>, ParentType, ContextType>;
};

export type ConversationResolvers<ContextType = RequestContext, ParentType extends ResolversParentTypes['Conversation'] = ResolversParentTypes['Conversation']> = {
  enableWeb?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  id?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  messages?: Resolver<Array<ResolversTypes['Message']>, ParentType, ContextType>;
  model?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  name?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  number?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  userId?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type ConversationConnectionResolvers<ContextType = RequestContext, ParentType extends ResolversParentTypes['ConversationConnection'] = ResolversParentTypes['ConversationConnection']> = {
  edges?: Resolver<Array<ResolversTypes['ConversationEdge']>, ParentType, ContextType>;
  nodes?: Resolver<Array<ResolversTypes['Conversation']>, ParentType, ContextType>;
  pageInfo?: Resolver<ResolversTypes['PageInfo'], ParentType, ContextType>;
  totalCount?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
};

export type ConversationEdgeResolvers<ContextType = RequestContext, ParentType extends ResolversParentTypes['ConversationEdge'] = ResolversParentTypes['ConversationEdge']> = {
  cursor?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  node?: Resolver<ResolversTypes['Conversation'], ParentType, ContextType>;
};

export type ConversationEventResolvers<ContextType = RequestContext, ParentType extends ResolversParentTypes['ConversationEvent'] = ResolversParentTypes['ConversationEvent']> = {
  conversation?: Resolver<Maybe<ResolversTypes['Conversation']>, ParentType, ContextType>;
  conversationId?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  deletedConversationId?: Resolver<Maybe<ResolversTypes['ID']>, ParentType, ContextType>;
  kind?: Resolver<ResolversTypes['ConversationEventKind'], ParentType, ContextType>;
  number?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
};

export type DeleteAllConversationsPayloadResolvers<ContextType = RequestContext, ParentType extends ResolversParentTypes['DeleteAllConversationsPayload'] = ResolversParentTypes['DeleteAllConversationsPayload']> = {
  deletedCount?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  ok?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
};

export type DeleteConversationPayloadResolvers<ContextType = RequestContext, ParentType extends ResolversParentTypes['DeleteConversationPayload'] = ResolversParentTypes['DeleteConversationPayload']> = {
  deletedConversationId?: Resolver<Maybe<ResolversTypes['ID']>, ParentType, ContextType>;
  error?: Resolver<Maybe<ResolversTypes['UserError']>, ParentType, ContextType>;
  ok?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
};

export type GiftPackageResolvers<ContextType = RequestContext, ParentType extends ResolversParentTypes['GiftPackage'] = ResolversParentTypes['GiftPackage']> = {
  cert?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  teenager?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
};

export type MessageResolvers<ContextType = RequestContext, ParentType extends ResolversParentTypes['Message'] = ResolversParentTypes['Message']> = {
  content?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  role?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
};

export type MutationResolvers<ContextType = RequestContext, ParentType extends ResolversParentTypes['Mutation'] = ResolversParentTypes['Mutation']> = {
  buy?: Resolver<ResolversTypes['BuyPayload'], ParentType, ContextType, RequireFields<MutationBuyArgs, 'quota'>>;
  deleteAllConversations?: Resolver<ResolversTypes['DeleteAllConversationsPayload'], ParentType, ContextType>;
  deleteConversation?: Resolver<ResolversTypes['DeleteConversationPayload'], ParentType, ContextType, RequireFields<MutationDeleteConversationArgs, 'id'>>;
  deleteConversationByNumber?: Resolver<ResolversTypes['DeleteConversationPayload'], ParentType, ContextType, RequireFields<MutationDeleteConversationByNumberArgs, 'number'>>;
  renameConversation?: Resolver<ResolversTypes['RenameConversationPayload'], ParentType, ContextType, RequireFields<MutationRenameConversationArgs, 'id' | 'name'>>;
  renameConversationByNumber?: Resolver<ResolversTypes['RenameConversationPayload'], ParentType, ContextType, RequireFields<MutationRenameConversationByNumberArgs, 'name' | 'number'>>;
};

export type NodeResolvers<ContextType = RequestContext, ParentType extends ResolversParentTypes['Node'] = ResolversParentTypes['Node']> = {
  __resolveType: TypeResolveFn<'Conversation', ParentType, ContextType>;
};

export type PageInfoResolvers<ContextType = RequestContext, ParentType extends ResolversParentTypes['PageInfo'] = ResolversParentTypes['PageInfo']> = {
  endCursor?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  hasNextPage?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  hasPreviousPage?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  startCursor?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
};

export type QueryResolvers<ContextType = RequestContext, ParentType extends ResolversParentTypes['Query'] = ResolversParentTypes['Query']> = {
  conversation?: Resolver<Maybe<ResolversTypes['Conversation']>, ParentType, ContextType, RequireFields<QueryConversationArgs, 'number'>>;
  conversations?: Resolver<ResolversTypes['ConversationConnection'], ParentType, ContextType, Partial<QueryConversationsArgs>>;
  giftPackage?: Resolver<ResolversTypes['GiftPackage'], ParentType, ContextType>;
  node?: Resolver<Maybe<ResolversTypes['Node']>, ParentType, ContextType, RequireFields<QueryNodeArgs, 'id'>>;
  nodes?: Resolver<Array<Maybe<ResolversTypes['Node']>>, ParentType, ContextType, RequireFields<QueryNodesArgs, 'ids'>>;
  quota?: Resolver<ResolversTypes['Float'], ParentType, ContextType>;
};

export type RenameConversationPayloadResolvers<ContextType = RequestContext, ParentType extends ResolversParentTypes['RenameConversationPayload'] = ResolversParentTypes['RenameConversationPayload']> = {
  conversation?: Resolver<Maybe<ResolversTypes['Conversation']>, ParentType, ContextType>;
  error?: Resolver<Maybe<ResolversTypes['UserError']>, ParentType, ContextType>;
  ok?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
};

export type SubscriptionResolvers<ContextType = RequestContext, ParentType extends ResolversParentTypes['Subscription'] = ResolversParentTypes['Subscription']> = {
  conversationEvents?: SubscriptionResolver<ResolversTypes['ConversationEvent'], "conversationEvents", ParentType, ContextType>;
  quota?: SubscriptionResolver<ResolversTypes['Float'], "quota", ParentType, ContextType>;
};

export type UserErrorResolvers<ContextType = RequestContext, ParentType extends ResolversParentTypes['UserError'] = ResolversParentTypes['UserError']> = {
  code?: Resolver<ResolversTypes['UserErrorCode'], ParentType, ContextType>;
  message?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
};

export type Resolvers<ContextType = RequestContext> = {
  BuyPayload?: BuyPayloadResolvers<ContextType>;
  Conversation?: ConversationResolvers<ContextType>;
  ConversationConnection?: ConversationConnectionResolvers<ContextType>;
  ConversationEdge?: ConversationEdgeResolvers<ContextType>;
  ConversationEvent?: ConversationEventResolvers<ContextType>;
  DeleteAllConversationsPayload?: DeleteAllConversationsPayloadResolvers<ContextType>;
  DeleteConversationPayload?: DeleteConversationPayloadResolvers<ContextType>;
  GiftPackage?: GiftPackageResolvers<ContextType>;
  Message?: MessageResolvers<ContextType>;
  Mutation?: MutationResolvers<ContextType>;
  Node?: NodeResolvers<ContextType>;
  PageInfo?: PageInfoResolvers<ContextType>;
  Query?: QueryResolvers<ContextType>;
  RenameConversationPayload?: RenameConversationPayloadResolvers<ContextType>;
  Subscription?: SubscriptionResolvers<ContextType>;
  UserError?: UserErrorResolvers<ContextType>;
};

