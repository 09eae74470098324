'use strict';
/**
 * Loaded into the MongoDB driver's own mocha run by driver-spec.ts, which
 * talks to it over the IPC channel:
 * - as a root hook plugin (`--require`), it asks for a fresh engine before the
 *   first test of each spec file (a spec file is one mocha suite) and waits
 *   until the engine listens again;
 * - as the reporter (`--reporter`), it sends each test's outcome as it ends, so
 *   that a run stopped for hanging still reports every test it finished.
 */
// Mocha's runner events (Mocha.Runner.constants), by name: this file is loaded from the
// driver's checkout, whose mocha it cannot require by path.
const EVENT_TEST_PASS = 'pass';
const EVENT_TEST_FAIL = 'fail';
const EVENT_TEST_PENDING = 'pending';
const EVENT_RUN_END = 'end';

let currentSuite;

/** Sends a message to driver-spec.ts and resolves with its answer to that message. */
function ask(message) {
  return new Promise((resolve) => {
    const onAnswer = (answer) => {
      if (answer && answer.answers === message.id) {
        process.off('message', onAnswer);
        resolve(answer);
      }
    };
    process.on('message', onAnswer);
    process.send(message);
  });
}

function errorOf(error) {
  if (!error) return undefined;
  const response = error.errorResponse;
  return {
    message: String(error.message ?? error),
    code: typeof error.code === 'number' ? error.code : undefined,
    errmsg: response && typeof response.errmsg === 'string' ? response.errmsg : undefined,
  };
}

class DriverSpecReporter {
  constructor(runner) {
    // A failed hook is reported under the test it ran for (an "after each" hook after the test).
    const titleOf = (test) => (test.type === 'hook' && test.ctx && test.ctx.currentTest ? test.ctx.currentTest : test).fullTitle();
    const send = (outcome, test, error) => process.send({ result: { outcome, title: titleOf(test), error: errorOf(error) } });
    runner.on(EVENT_TEST_PASS, (test) => send('passed', test));
    runner.on(EVENT_TEST_PENDING, (test) => send('skipped', test));
    runner.on(EVENT_TEST_FAIL, (test, error) => send(test.type === 'hook' ? 'hook failed' : 'failed', test, error));
    runner.once(EVENT_RUN_END, () => process.send({ done: true }));
  }
}

module.exports = DriverSpecReporter;
module.exports.mochaHooks = {
  async beforeEach() {
    const suite = this.currentTest.parent.fullTitle();
    if (suite === currentSuite) return;
    currentSuite = suite;
    await ask({ id: suite, fresh: suite });
  },
};
