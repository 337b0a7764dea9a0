// @ts-check
// The parts of the protocol's request handling that need no upstream
// package (docs/adapter-protocol.md, "Transport" and "Messages"): the
// version this adapter speaks and the `start` handshake, the seq of a line
// that could not be read and how a thrown value is written into a reply. Kept apart from adapter.mjs, which serves stdin as
// soon as it is loaded, so that they can be tested on their own.

/** The protocol version this adapter speaks. */
export const PROTOCOL_VERSION = 1

/**
 * The `seq` of a request line that could not be handled, so the `errored`
 * reply can echo it: the line's own `seq` when it is JSON (a non-negative
 * safe integer, else none), or the first `"seq": <digits>` in it when it is
 * not JSON at all. `undefined` when there is none: such a line gets no reply.
 * @param {string} line
 * @returns {number | undefined}
 */
export function recoverSeq(line) {
  try {
    const value = JSON.parse(line)
    if (Number.isSafeInteger(value?.seq) && value.seq >= 0) return value.seq
  } catch {
    const match = /"seq"\s*:\s*(\d+)/.exec(line)
    if (match) return Number(match[1])
  }
  return undefined
}

/**
 * @typedef {{name: string, version: string, language: string, homepage?: string}} Implementation
 * @typedef {{levels: string[], bench?: boolean, virtual_time?: boolean}} Capabilities
 */

/**
 * The reply to `start`: `started` when dshc asks for the version this
 * adapter speaks, else `errored` naming both versions. An adapter never
 * answers `started` with a version other than the one asked for
 * (docs/adapter-protocol.md, "Messages").
 * @param {{seq: number, version?: unknown}} request
 * @param {Implementation} implementation
 * @param {Capabilities} capabilities
 */
export function answerStart(request, implementation, capabilities) {
  const { seq, version } = request
  if (version !== PROTOCOL_VERSION) {
    return {
      seq,
      errored: {
        context: `dshc asks for protocol version ${JSON.stringify(version ?? null)}; this adapter speaks only version ${PROTOCOL_VERSION}`,
      },
    }
  }
  return { seq, started: { version: PROTOCOL_VERSION, implementation, capabilities } }
}

/** `String(value)`, or its `Object.prototype.toString` tag when even that
 * throws (an object whose `toString` throws must not break a reply).
 * @param {unknown} value */
export function safeString(value) {
  try {
    return String(value)
  } catch {
    return Object.prototype.toString.call(value)
  }
}

/** A thrown value as a reply's `context` or a log line: its stack when it
 * has one, else its string form.
 * @param {unknown} error */
export function stackOf(error) {
  const stack = /** @type {{stack?: unknown} | null | undefined} */ (error)?.stack
  if (typeof stack === 'string') return stack
  return safeString(error)
}

/** The frames an Error captures, from `DSHC_NODE_STACK_FRAMES`: none when it
 * is unset or empty, else its value, a whole number of at most 1000.
 * @param {string | undefined} text */
export function stackFramesFrom(text) {
  if (text === undefined || text === '') return 0
  if (!/^[0-9]{1,4}$/.test(text) || Number(text) > 1000) {
    throw new Error(`DSHC_NODE_STACK_FRAMES must be a whole number from 0 to 1000, not ${JSON.stringify(text)}`)
  }
  return Number(text)
}
