/**
 * The result of an iterator that has ended. The live-update streams hand it out wherever they
 * end rather than making one each time: nothing reads more of it than `done`.
 */
export const ENDED: IteratorReturnResult<undefined> = Object.freeze({ value: undefined, done: true });
