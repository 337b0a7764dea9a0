// @ts-check
// virtual_time.mjs: the harness's clock (docs/adapter-protocol.md, "Virtual
// time"): timers and `Date` start at `simulation.start_ms` and move only
// when nothing else can run; a case that waits on something no timer brings,
// or outlives its budget, fails; bytes arriving at an instant are handed
// over only after every timer due at that instant has run; ids are `msg-1`,
// `msg-2`, ...

import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { StuckCase, VirtualTime, instantWorkPending, settle } from '../virtual_time.mjs'

const START_MS = 1_700_000_000_000

/** Run `body` as a case on a freshly installed clock; uninstall after.
 * @template T
 * @param {(time: VirtualTime) => Promise<T>} body
 * @param {{budget_ms?: number}} [simulation] */
async function onTheClock(body, { budget_ms = 60_000 } = {}) {
  const time = new VirtualTime({ start_ms: START_MS, budget_ms }, 1)
  time.install()
  try {
    return await time.drive(body(time))
  } finally {
    time.uninstall()
  }
}

/** A promise of `ms` on whatever `setTimeout` is installed.
 * @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** A chain of `length` immediates, each queued by the one before.
 * @param {number} length
 * @param {() => void} done */
function immediateChain(length, done) {
  if (length === 0) done()
  else setImmediate(() => immediateChain(length - 1, done))
}

describe('settle', () => {
  test('waits out a chain of immediates of any length', async () => {
    let done = false
    immediateChain(25, () => {
      done = true
    })
    assert.equal(instantWorkPending(), true)
    await settle()
    assert.equal(done, true)
    assert.equal(instantWorkPending(), false)
  })

  test('waits out a long chain of microtasks', async () => {
    let done = false
    ;(async () => {
      for (let step = 0; step < 10_000; step += 1) await null
      done = true
    })()
    await settle()
    assert.equal(done, true)
  })

  test('waits for a file-system request in flight', async () => {
    let text
    readFile(fileURLToPath(import.meta.url), 'utf8').then((read) => {
      text = read
    })
    await settle()
    assert.match(text ?? '', /waits for a file-system request in flight/)
  })

  test('does not wait for real timers, which only real time brings', async () => {
    let fired = false
    const timer = setTimeout(() => {
      fired = true
    }, 60_000)
    await settle()
    clearTimeout(timer)
    assert.equal(fired, false)
  })
})

describe('VirtualTime', () => {
  test('time starts at start_ms and moves only to the next timer', async () => {
    const realStart = performance.now()
    const seen = await onTheClock(async () => {
      const times = [Date.now()]
      await sleep(500)
      times.push(Date.now())
      await sleep(2_000)
      times.push(Date.now())
      return times
    })
    assert.deepEqual(seen, [START_MS, START_MS + 500, START_MS + 2_500])
    // The 2.5 s passed on the fake clock, not the real one.
    assert.ok(performance.now() - realStart < 2_000)
  })

  test('the clock does not move while other work of the instant is pending', async () => {
    const seen = await onTheClock(async () => {
      /** @type {number[]} */
      const chainEndedAt = []
      immediateChain(10, () => chainEndedAt.push(Date.now()))
      await sleep(1)
      return { chainEndedAt, timerAt: Date.now() }
    })
    assert.deepEqual(seen, { chainEndedAt: [START_MS], timerAt: START_MS + 1 })
  })

  test('timers due at one instant run in the order they were set', async () => {
    const order = await onTheClock(async () => {
      /** @type {string[]} */
      const ran = []
      setTimeout(() => ran.push('b'), 20)
      setTimeout(() => ran.push('a'), 10)
      setTimeout(() => ran.push('c'), 20)
      await sleep(30)
      return ran
    })
    assert.deepEqual(order, ['a', 'b', 'c'])
  })

  test('quiet() resolves once the rest of the instant has run, without moving the clock', async () => {
    const seen = await onTheClock(async (time) => {
      let chainDone = false
      immediateChain(10, () => {
        chainDone = true
      })
      await time.quiet()
      return { chainDone, now: Date.now() }
    })
    assert.deepEqual(seen, { chainDone: true, now: START_MS })
  })

  test('a case that waits on something no timer brings is stuck', async () => {
    await assert.rejects(
      onTheClock(() => new Promise(() => {})),
      (error) => error instanceof StuckCase && /nothing is scheduled/.test(error.message),
    )
  })

  test('a case that outlives its virtual budget is stuck', async () => {
    await assert.rejects(
      onTheClock(() => sleep(101), { budget_ms: 100 }),
      (error) => error instanceof StuckCase && /virtual budget of 100 ms/.test(error.message),
    )
    // Exactly the budget is still within it.
    await onTheClock(() => sleep(100), { budget_ms: 100 })
  })

  test('a clock jump moves Date without firing timers, and the budget does not count it', async () => {
    const seen = await onTheClock(
      async (time) => {
        let fired = false
        setTimeout(() => {
          fired = true
        }, 50)
        time.jump(1_000)
        const afterJump = { now: Date.now(), fired }
        await sleep(60)
        return { afterJump, end: Date.now(), fired }
      },
      { budget_ms: 100 },
    )
    // The pending timer keeps the 50 ms it had left.
    assert.deepEqual(seen, { afterJump: { now: START_MS + 1_000, fired: false }, end: START_MS + 1_060, fired: true })
  })

  test('message ids are msg-1, msg-2, ... while installed, and randomUUID is restored after', async () => {
    const original = crypto.randomUUID
    const ids = await onTheClock(async () => [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()])
    assert.deepEqual(ids, ['msg-1', 'msg-2', 'msg-3'])
    assert.equal(crypto.randomUUID, original)
    assert.match(crypto.randomUUID(), /^[0-9a-f]{8}-/)
  })

  test('uninstall puts the real timers and Date back', async () => {
    const realSetTimeout = globalThis.setTimeout
    await onTheClock(async () => {
      assert.notEqual(globalThis.setTimeout, realSetTimeout)
      assert.equal(Date.now(), START_MS)
    })
    assert.equal(globalThis.setTimeout, realSetTimeout)
    assert.ok(Math.abs(Date.now() - START_MS) > 1_000)
  })
})

describe('VirtualTime.replay (the provider bridge answer)', () => {
  /**
   * A provider answer (docs/adapter-protocol.md, "Virtual time"): the head at
   * `head_at_ms` (`null`: none came), then `frames`, then `end`.
   * @param {{
   *   head_at_ms?: number | null,
   *   frames?: {at_ms: number, data: string}[],
   *   end?: {at_ms: number, kind: 'complete' | 'dropped' | 'open', error?: string},
   *   status?: number,
   * }} [parts]
   */
  function answer({ head_at_ms = 0, frames = [{ at_ms: 5, data: 'data: one\n\n' }], end = { at_ms: 5, kind: 'complete' }, status = 200 } = {}) {
    return { received_at_ms: 0, head_at_ms, status, headers: [['content-type', 'text/event-stream']], frames, end }
  }

  test('the head and body arrive at their virtual offsets', async () => {
    const seen = await onTheClock(async (time) => {
      const response = await time.replay(answer({ head_at_ms: 3, end: { at_ms: 9, kind: 'complete' } }), undefined, 0)
      const headAt = Date.now()
      const text = await response.text()
      return { headAt, status: response.status, text, endAt: Date.now() }
    })
    assert.deepEqual(seen, { headAt: START_MS + 3, status: 200, text: 'data: one\n\n', endAt: START_MS + 9 })
  })

  test('a frame landing at an instant is handed over after the timers due then', async () => {
    const order = await onTheClock(async (time) => {
      /** @type {string[]} */
      const seen = []
      const response = await time.replay(answer(), undefined, 0)
      // Set after the frame's own arrival timer, for the same instant.
      setTimeout(() => seen.push('timer at 5'), 5)
      const reader = response.body?.getReader()
      const chunk = await reader?.read()
      seen.push(`frame at ${Date.now() - START_MS}: ${new TextDecoder().decode(chunk?.value)}`)
      return seen
    })
    assert.deepEqual(order, ['timer at 5', 'frame at 5: data: one\n\n'])
  })

  test('a connection that drops before the head rejects the fetch as a network error', async () => {
    const failure = await onTheClock(async (time) => {
      const dropped = answer({ head_at_ms: null, frames: [], end: { at_ms: 7, kind: 'dropped', error: 'reset' } })
      return time.replay(dropped, undefined, 0).then(
        () => undefined,
        (/** @type {TypeError} */ error) => ({ error, at: Date.now() - START_MS }),
      )
    })
    assert.ok(failure?.error instanceof TypeError)
    assert.equal(failure.error.message, 'fetch failed')
    assert.ok(failure.error.cause instanceof Error)
    assert.equal(failure.error.cause.message, 'reset')
    assert.equal(failure.at, 7)
  })

  test('a body that drops errors the stream after the frames before it', async () => {
    const seen = await onTheClock(async (time) => {
      const response = await time.replay(answer({ end: { at_ms: 8, kind: 'dropped', error: 'gone' } }), undefined, 0)
      const reader = response.body?.getReader()
      const first = await reader?.read()
      /** @type {Error | undefined} */
      const failure = await reader?.read().then(
        () => undefined,
        (error) => error,
      )
      return { first: new TextDecoder().decode(first?.value), failure: failure?.message, at: Date.now() - START_MS }
    })
    assert.deepEqual(seen, { first: 'data: one\n\n', failure: 'terminated', at: 8 })
  })

  test('a 204 answer has no body', async () => {
    const body = await onTheClock(async (time) => (await time.replay(answer({ status: 204, frames: [] }), undefined, 0)).body)
    assert.equal(body, null)
  })
})
