/**
 * Something the user gave (arguments, configuration, a seed file) is wrong. Each problem is
 * one line they can act on; commands print them without a stack trace and exit with code 2.
 */
export class InvalidInput extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = new.target.name;
  }
}
