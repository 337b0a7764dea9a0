// @ts-check
// Promise rejections nobody handled, recorded against the case that was
// running when Node reported them (docs/adapter-protocol.md, "Messages":
// such a case is answered `errored`). Node on default settings exits on an
// unhandled rejection; the adapter keeps serving, but the case it happened
// in cannot be trusted: something it started failed and nothing saw it.
// A rejection reported between cases is only logged.

import { stackOf } from './protocol.mjs'

/** Captured before any case can install fake timers (virtual_time.mjs
 * never fakes `setImmediate`, but nothing here should depend on that). */
const realSetImmediate = globalThis.setImmediate

/** One turn of the real event loop. */
function turn() {
  return new Promise((resolve) => realSetImmediate(resolve))
}

export class CaseRejections {
  /** @param {(message: string) => void} log where a rejection outside any case goes */
  constructor(log) {
    this.log = log
    /** The running case's rejections; `undefined` between cases.
     * @type {unknown[] | undefined} */
    this.recording = undefined
  }

  /** The process's `unhandledRejection` listener.
   * @param {unknown} reason */
  unhandled(reason) {
    if (this.recording === undefined) this.log(`unhandled rejection outside any case: ${stackOf(reason)}`)
    else this.recording.push(reason)
  }

  /**
   * Run one case (`work`) and collect what Node reports unhandled while it
   * runs. Node reports a rejection once the microtasks of the turn that
   * made it have run, so one more real turn after the case has settled
   * brings in every rejection the case made before it ended.
   * @template T
   * @param {() => Promise<T>} work
   * @returns {Promise<{settled: PromiseSettledResult<T>, rejections: unknown[]}>}
   */
  async during(work) {
    if (this.recording !== undefined) throw new Error('cases do not overlap: one is already recording')
    /** @type {unknown[]} */
    const rejections = []
    this.recording = rejections
    /** @type {PromiseSettledResult<T>} */
    let settled
    try {
      settled = { status: 'fulfilled', value: await work() }
    } catch (reason) {
      settled = { status: 'rejected', reason }
    }
    await turn()
    this.recording = undefined
    return { settled, rejections }
  }
}

/**
 * The reply body for a case (`what`, e.g. `case "id"`) from how it
 * settled: what `answer` makes of its value, or `errored` when the work
 * threw (an adapter error) or Node reported a rejection nobody handled
 * while it ran (then the first one's stack, and how many more there were).
 * @template T, R
 * @param {string} what
 * @param {{settled: PromiseSettledResult<T>, rejections: unknown[]}} outcome
 * @param {(value: T) => R} answer
 * @returns {R | {errored: {context: string}}}
 */
export function caseReply(what, { settled, rejections }, answer) {
  /** @type {string[]} */
  const problems = []
  if (settled.status === 'rejected') problems.push(`adapter error in ${what}: ${stackOf(settled.reason)}`)
  if (rejections.length > 0) {
    const more = rejections.length > 1 ? ` (and ${rejections.length - 1} more)` : ''
    problems.push(`unhandled rejection in ${what}${more}: ${stackOf(rejections[0])}`)
  }
  if (problems.length > 0) return { errored: { context: problems.join('\n') } }
  return answer(/** @type {PromiseFulfilledResult<T>} */ (settled).value)
}
