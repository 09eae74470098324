import { describe, expect, it } from 'vitest';

import { MostlyOne } from '../../../src/shared/mostly-one.js';

describe('a set that mostly holds one item', () => {
  it('holds one item, then several, in the order they came, each once', () => {
    const set = new MostlyOne<string>();
    expect([set.size, set.toArray()]).toEqual([0, []]);
    set.add('a');
    set.add('a');
    expect([set.size, set.toArray()]).toEqual([1, ['a']]);
    set.add('b');
    set.add('c');
    set.add('b');
    expect([set.size, set.toArray()]).toEqual([3, ['a', 'b', 'c']]);
  });

  it('lets go of what is deleted, and ignores what it does not hold', () => {
    const one = new MostlyOne<string>();
    one.add('a');
    one.delete('z');
    expect(one.toArray()).toEqual(['a']);
    one.delete('a');
    expect([one.size, one.toArray()]).toEqual([0, []]);
    one.add('b');
    expect(one.toArray()).toEqual(['b']);

    const several = new MostlyOne<string>();
    for (const item of ['a', 'b', 'c']) several.add(item);
    several.delete('a');
    several.delete('c');
    expect([several.size, several.toArray()]).toEqual([1, ['b']]);
    several.delete('b');
    several.add('d');
    expect([several.size, several.toArray()]).toEqual([1, ['d']]);
  });

  it('gives a copy, which the set changing does not change', () => {
    const set = new MostlyOne<number>();
    set.add(1);
    set.add(2);
    const items = set.toArray();
    for (const item of items) set.delete(item);
    expect([items, set.size]).toEqual([[1, 2], 0]);
  });
});
