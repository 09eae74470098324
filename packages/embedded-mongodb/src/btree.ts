import btreeModule from 'sorted-btree';

type BTreeClass = typeof btreeModule.default;

// sorted-btree is CommonJS with an `exports.default`; Node's ESM loader hands us the whole module object.
const module = btreeModule as unknown as { default?: BTreeClass };
export const BTree: BTreeClass = module.default ?? (btreeModule as unknown as BTreeClass);
export type BTree<K, V> = InstanceType<typeof btreeModule.default<K, V>>;
