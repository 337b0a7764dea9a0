// @ts-check
// Extension virtual_time/1 (docs/adapter-protocol.md, "Virtual time"): a
// loop case runs on a clock the harness drives, and its provider traffic
// goes over the protocol to the harness's mock provider.
//
// While a case runs:
// - `setTimeout`, `setInterval`, `Date` and `performance` are
//   @sinonjs/fake-timers, starting at the case's `simulation.start_ms`, so
//   every wait, listener sleep, retry backoff and idle watchdog of upstream
//   code is a virtual timer;
// - `fetch` is a bridge: the request goes to the harness as a
//   `provider_request` line and the answer (head, body frames, end, each at
//   a virtual offset) is replayed on the fake clock, so the DeepSeek adapter's
//   own request, SSE and error code runs unchanged on the bytes and chunk
//   boundaries the reference sees;
// - `crypto.randomUUID` mints `msg-1`, `msg-2`, ... (the reference's ids), so
//   logs compare with nothing redacted.
// The case is one promise; `drive` runs it, letting every pending callback
// settle before it moves the clock to the next timer, so time only passes
// when nothing else can happen, as in the reference's simulation.
//
// "Settled" is measured, not assumed (`settle`): one turn of the real event
// loop runs every microtask, however long its chain, and the adapter keeps
// turning while Node reports real work the case started that completes
// without the clock (a pending `setImmediate`, a file-system request).

import FakeTimers from '@sinonjs/fake-timers'

import { readLine, writeLine } from './channel.mjs'

/** @type {import('@sinonjs/fake-timers').FakeMethod[]} */
const FAKED = ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance']

/**
 * Kinds of pending real work (as `process.getActiveResourcesInfo()` names
 * them) that finish on their own without the fake clock moving, so the case
 * is not quiet while one is outstanding: a `setImmediate` (never faked: it
 * means "as soon as possible", i.e. at this instant) and a file-system
 * request in flight, a handle's close included (`fs/promises` closes its
 * file handle before the read it serves resolves). Long-lived handles in
 * that list (the protocol's pipes, a real timer some module might hold) are
 * not work that is due now. An unref'd immediate is not reported by Node,
 * and so not waited for.
 */
const INSTANT_WORK = new Set(['Immediate', 'FSReqCallback', 'FSReqPromise', 'CloseReq'])

/** The base URL the bridged DeepSeek adapter is pointed at: the
 * reference's simulated provider (host `provider`, port 443), so messages
 * that quote it agree; the harness gets the path below it. */
export const BRIDGE_BASE_URL = 'http://provider:443'

const realSetImmediate = globalThis.setImmediate

/** One turn of the real event loop: resolves from a real immediate. */
function turn() {
  return new Promise((resolve) => realSetImmediate(resolve))
}

/** Whether real work that completes without the clock is still pending. */
export function instantWorkPending() {
  return process.getActiveResourcesInfo().some((kind) => INSTANT_WORK.has(kind))
}

/**
 * Resolve once everything that can run at this instant has run, so the
 * clock may move.
 *
 * Why this is enough: Node runs an immediate's callback only once the
 * microtask and `process.nextTick` queues are empty, and drains both again
 * after it. So when the immediate of one `turn` fires, every microtask that
 * was queued before it has run, and so has every microtask those queued in
 * turn (a chain of any length runs in one drain). What a single turn can
 * miss is real macrotask work: an immediate the case queued during the turn
 * runs in the next one, and an I/O completion whenever it comes. Those are
 * what `instantWorkPending` reports, so the loop takes exactly as many
 * turns as the case needs, and stops at the first turn after which nothing
 * is left but timers (which only the clock brings).
 */
export async function settle() {
  do await turn()
  while (instantWorkPending())
}

/** What a fetch rejects with when its signal aborts.
 * @param {AbortSignal | null | undefined} signal */
function abortReason(signal) {
  return signal?.reason ?? new DOMException('This operation was aborted', 'AbortError')
}

/** What Node's own fetch (undici, Node 20) rejects with when its signal
 * aborts before the response head: the abort reason itself, given an own
 * `stack` by `Error.captureStackTrace` when it is an object. Upstream's
 * behaviour depends on it (adapters/node-dsh/README.md, "A finding"), so
 * the bridge does the same. An abort during the body errors the stream
 * with the reason untouched, as undici does.
 * @param {AbortSignal | null | undefined} signal */
function headAbortReason(signal) {
  const reason = abortReason(signal)
  if (typeof reason === 'object' && reason !== null && Object.isExtensible(reason)) Error.captureStackTrace(reason)
  return reason
}

/** A failed connection, as undici reports one.
 * @param {string} message */
function networkError(message) {
  return new TypeError('fetch failed', { cause: new Error(message) })
}

/** A case that cannot finish on the clock. Whatever it left running would
 * run on into the next case, so the adapter exits after reporting it (dshc
 * starts a fresh process). */
export class StuckCase extends Error {
  name = 'StuckCase'
}

export class VirtualTime {
  /**
   * @param {{start_ms: number, budget_ms: number}} simulation the case's `world.simulation`
   * @param {number} seq the `run` request's seq, which provider requests carry
   */
  constructor(simulation, seq) {
    this.startMs = simulation.start_ms
    this.budgetMs = simulation.budget_ms
    this.seq = seq
    /** The fake clock, from `install` to `uninstall`.
     * @type {import('@sinonjs/fake-timers').Clock | undefined} */
    this.installedClock = undefined
    /** What `install` replaced, for `uninstall`.
     * @type {{fetch: typeof fetch, randomUUID: typeof crypto.randomUUID} | undefined} */
    this.saved = undefined
    this.ids = 0
    /** Provider requests sent so far (each is numbered from 0). */
    this.requests = 0
    /** The wall clock's jumps so far (`clock_jump`), which the budget does not count. */
    this.jumpedMs = 0
    /** Callers of `quiet`, woken when nothing else is left at this instant.
     * @type {(() => void)[]} */
    this.quietWaiters = []
    /** Provider bytes that arrived at this instant, handed over once every
     * timer due at it has run (the reference's hosts see a frame after their
     * own timers of the same millisecond).
     * @type {(() => void)[]} */
    this.arrivals = []
  }

  /** The installed fake clock; using it before `install` is a bug. */
  get clock() {
    if (this.installedClock === undefined) throw new Error('the virtual clock is not installed')
    return this.installedClock
  }

  /** Move the wall clock (`Date`) by `ms` without running any timer or
   * changing how long a pending one has left (the reference's `clock_jump`). */
  jump(ms) {
    this.clock.setSystemTime(this.clock.now + ms)
    this.jumpedMs += ms
  }

  install() {
    this.saved = { fetch: globalThis.fetch, randomUUID: globalThis.crypto.randomUUID }
    this.installedClock = FakeTimers.withGlobal(globalThis).install({ now: this.startMs, toFake: FAKED })
    globalThis.fetch = (url, init) => this.fetch(url, init)
    globalThis.crypto.randomUUID = () => this.mintId()
  }

  /** The next message id: `msg-1`, `msg-2`, ... (the reference's). These are
   * not UUIDs, whatever `randomUUID`'s type promises: upstream only needs
   * them unique, and the reference's logs hold exactly these. */
  mintId() {
    this.ids += 1
    return /** @type {ReturnType<typeof crypto.randomUUID>} */ (`msg-${this.ids}`)
  }

  /** Whether a timer is due at the current instant. */
  timerDueNow() {
    const timers = this.clock.timers
    const pending = timers instanceof Map ? timers.values() : Object.values(timers ?? {})
    for (const timer of pending) if (timer.callAt !== undefined && timer.callAt <= this.clock.now) return true
    return false
  }

  /** Resolves once everything else due at this instant has run: the clock
   * does not move until it has. */
  quiet() {
    return new Promise((/** @type {(value?: undefined) => void} */ resolve) => this.quietWaiters.push(resolve))
  }

  uninstall() {
    this.clock.uninstall()
    this.installedClock = undefined
    if (this.saved !== undefined) {
      globalThis.fetch = this.saved.fetch
      globalThis.crypto.randomUUID = this.saved.randomUUID
    }
  }

  /** Run `promise` to its end on the fake clock. Throws when it can never
   * end (nothing is scheduled) or the case's virtual budget runs out, as
   * the reference's simulation does.
   * @template T
   * @param {Promise<T>} promise
   * @returns {Promise<T>} */
  async drive(promise) {
    let done = false
    const watched = promise.then(
      () => {
        done = true
      },
      () => {
        done = true
      },
    )
    for (;;) {
      await settle()
      if (done) break
      if (this.quietWaiters.length > 0) {
        for (const wake of this.quietWaiters.splice(0)) wake()
        continue
      }
      if (this.arrivals.length > 0 && !this.timerDueNow()) {
        for (const arrive of this.arrivals.splice(0)) arrive()
        continue
      }
      if (this.clock.countTimers() === 0) {
        throw new StuckCase('the case waits on something no timer will bring: nothing is scheduled')
      }
      this.clock.next()
      if (this.clock.now - this.jumpedMs - this.startMs > this.budgetMs) {
        throw new StuckCase(`the case did not finish within its virtual budget of ${this.budgetMs} ms`)
      }
    }
    await watched
    return promise
  }

  /** The bridged `fetch`: ask the harness, then replay its answer. */
  fetch(url, init = {}) {
    const signal = init.signal
    if (signal?.aborted) return Promise.reject(headAbortReason(signal))
    const target = String(url)
    const path = target.startsWith(BRIDGE_BASE_URL) ? target.slice(BRIDGE_BASE_URL.length) : target
    const headers = Object.entries(init.headers ?? {}).map(([name, value]) => [name.toLowerCase(), String(value)])
    headers.push(['host', 'provider'])
    writeLine({
      seq: this.seq,
      provider_request: {
        method: init.method ?? 'GET',
        path,
        headers,
        body: typeof init.body === 'string' ? init.body : '',
      },
    })
    const line = readLine()
    if (line === null) return Promise.reject(networkError('the harness closed the protocol channel'))
    const answer = JSON.parse(line)
    if (answer.cmd !== 'provider_response' || answer.seq !== this.seq) {
      return Promise.reject(networkError(`expected a provider_response, got ${line.slice(0, 200)}`))
    }
    const number = this.requests
    this.requests += 1
    return this.replay(answer.response, signal, number)
  }

  /** A Response whose head and body arrive at the answer's virtual times
   * (offsets from now). Whatever is due at the current instant happens at
   * once: a zero-delay timer would fire a millisecond late (Node, and so the
   * fake clock, makes every timeout at least 1 ms). */
  replay(answer, signal, number) {
    const time = this
    const sentAt = this.clock.now
    const timers = []
    const at = (offset, action) => {
      const delay = sentAt + offset - this.clock.now
      if (delay <= 0) action()
      else timers.push(setTimeout(action, delay))
    }
    return new Promise((resolve, reject) => {
      let controller
      /** The consumer's pending read, woken when the next item arrives. */
      let wake
      let finished = false
      const finish = () => {
        finished = true
        for (const timer of timers) clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
      }
      const onAbort = () => {
        if (finished) return
        finish()
        // The harness decides whether the request had reached the provider.
        writeLine({ seq: this.seq, provider_abort: { request: number, at_ms: this.clock.now - sentAt } })
        if (controller === undefined) reject(headAbortReason(signal))
        else controller.error(abortReason(signal))
        wake = undefined
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      const end = answer.end
      if (answer.head_at_ms === undefined || answer.head_at_ms === null) {
        // No head ever came: the fetch fails when the connection does, or
        // waits (for an abort) when it never ends.
        if (end.kind !== 'open') {
          at(end.at_ms, () =>
            time.arrivals.push(() => {
              if (finished) return
              finish()
              reject(networkError(end.error ?? 'the connection failed'))
            }),
          )
        }
        return
      }
      // The head is handed over like every other arrival: after the timers
      // due at its instant (a 204's head alone ends the call).
      at(answer.head_at_ms, () => time.arrivals.push(() => {
        if (finished) return
        // Frames arrive on the clock; the consumer takes them in order, and
        // the end (a close, or a dropped connection's error) only after
        // every frame before it, as from a socket.
        const arrived = []
        const arrive = (item) => {
          arrived.push(item)
          const waiting = wake
          wake = undefined
          waiting?.()
        }
        const body = new ReadableStream(
          {
            start(streamController) {
              controller = streamController
              const land = (item) => () => time.arrivals.push(() => arrive(item))
              for (const frame of answer.frames) at(frame.at_ms, land({ data: frame.data }))
              if (end.kind !== 'open') at(end.at_ms, land({ end: end.kind }))
            },
            pull(streamController) {
              const take = () => {
                const item = arrived.shift()
                if (item.data !== undefined) return streamController.enqueue(new TextEncoder().encode(item.data))
                finish()
                if (item.end === 'complete') streamController.close()
                else streamController.error(new TypeError('terminated', { cause: new Error(end.error ?? 'connection dropped') }))
              }
              if (arrived.length > 0) return take()
              return new Promise((resolve) => {
                wake = () => {
                  take()
                  resolve()
                }
              })
            },
            cancel() {
              finish()
            },
          },
          { highWaterMark: 0 },
        )
        const status = answer.status
        const nullBody = status === 204 || status === 205 || status === 304
        resolve(new Response(nullBody ? null : body, { status, headers: answer.headers }))
      }))
    })
  }
}
