// @ts-check
// What one panel tells another without importing it: the open knowledge base's panel (kb.js) asks for the
// lists again, or says a KB was opened or closed; the open team (team.js) asks for the teams again, or says
// a team was opened or closed; app.js wires the lists (lists.js) and the teams (teams.js) to hear it.

/** @typedef {"lists-stale" | "kb-shown" | "teams-stale" | "team-shown"} Topic */

const bus = new EventTarget();

/**
 * Tells the listeners of ``topic``, at once; the promise settles when the work they started is done.
 * @param {Topic} topic
 * @returns {Promise<void>}
 */
export function announce(topic) {
  /** @type {Promise<unknown>[]} */
  const work = [];
  bus.dispatchEvent(new CustomEvent(topic, { detail: work }));
  return Promise.all(work).then(() => undefined);
}

/**
 * ``listener`` run on each ``announce(topic)``; a promise it returns is waited for by the announcer.
 * @param {Topic} topic
 * @param {() => unknown} listener
 */
export function listen(topic, listener) {
  bus.addEventListener(topic, (event) => {
    const done = listener();
    if (done instanceof Promise) /** @type {CustomEvent<Promise<unknown>[]>} */ (event).detail.push(done);
  });
}
