// @ts-check
// rejections.mjs: a promise rejection nobody handles fails the case it
// happened in, whose reply is `errored` with the rejection's stack; one
// between cases is only logged (docs/adapter-protocol.md, "Messages").

import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { describe, test } from 'node:test'
import { promisify } from 'node:util'

import { CaseRejections, caseReply } from '../rejections.mjs'

/** @typedef {{settled: PromiseSettledResult<unknown>, rejections: unknown[]}} Outcome */

describe('CaseRejections (its bookkeeping)', () => {
  test('a rejection reported while a case runs is the case’s, not logged', async () => {
    /** @type {string[]} */
    const logged = []
    const rejections = new CaseRejections((message) => logged.push(message))
    const reason = new Error('lost')
    const outcome = await rejections.during(async () => {
      rejections.unhandled(reason)
      return 'value'
    })
    assert.deepEqual(outcome, { settled: { status: 'fulfilled', value: 'value' }, rejections: [reason] })
    assert.deepEqual(logged, [])
  })

  test('a rejection reported between cases is logged with its stack', async () => {
    /** @type {string[]} */
    const logged = []
    const rejections = new CaseRejections((message) => logged.push(message))
    await rejections.during(async () => undefined)
    rejections.unhandled(new Error('after the case'))
    assert.equal(logged.length, 1)
    assert.match(logged[0], /^unhandled rejection outside any case: Error: after the case\n/)
  })

  test('a case that throws settles rejected, with its rejections kept apart', async () => {
    const rejections = new CaseRejections(() => {})
    const thrown = new Error('thrown')
    const outcome = await rejections.during(async () => {
      throw thrown
    })
    assert.deepEqual(outcome, { settled: { status: 'rejected', reason: thrown }, rejections: [] })
  })

  test('cases do not overlap', async () => {
    const rejections = new CaseRejections(() => {})
    const first = rejections.during(() => new Promise((resolve) => setTimeout(resolve, 5)))
    await assert.rejects(rejections.during(async () => undefined), /do not overlap/)
    await first
  })
})

describe('caseReply', () => {
  /** @param {Outcome} outcome */
  const reply = (outcome) => caseReply('case "c"', outcome, (value) => ({ result: value }))

  test('a case that finished with nothing unhandled gets its own answer', () => {
    assert.deepEqual(reply({ settled: { status: 'fulfilled', value: { observations: [] } }, rejections: [] }), {
      result: { observations: [] },
    })
  })

  test('an unhandled rejection makes a finished case errored, with its stack', () => {
    const lost = new Error('lost')
    const answer = reply({ settled: { status: 'fulfilled', value: {} }, rejections: [lost] })
    assert.deepEqual(answer, { errored: { context: `unhandled rejection in case "c": ${lost.stack}` } })
  })

  test('several are counted; the first is shown', () => {
    const answer = reply({ settled: { status: 'fulfilled', value: {} }, rejections: ['first', 'second', 'third'] })
    assert.deepEqual(answer, { errored: { context: 'unhandled rejection in case "c" (and 2 more): first' } })
  })

  test('a case that threw is an adapter error, and a rejection besides is named too', () => {
    const thrown = new Error('thrown')
    assert.deepEqual(reply({ settled: { status: 'rejected', reason: thrown }, rejections: [] }), {
      errored: { context: `adapter error in case "c": ${thrown.stack}` },
    })
    const both = reply({ settled: { status: 'rejected', reason: 'thrown' }, rejections: ['lost'] })
    assert.deepEqual(both, { errored: { context: 'adapter error in case "c": thrown\nunhandled rejection in case "c": lost' } })
  })
})

// Node's own reporting, in a process of its own: the test runner treats an
// unhandled rejection in its process as a failure of the test.
const CHILD = `
import { CaseRejections, caseReply } from ${JSON.stringify(new URL('../rejections.mjs', import.meta.url).href)}
const print = (value) => process.stdout.write(JSON.stringify(value) + '\\n')
const rejections = new CaseRejections((message) => print({ logged: message.split('\\n')[0] }))
process.on('unhandledRejection', (reason) => rejections.unhandled(reason))
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const cases = {
  // Made in the case's last microtasks: reported only after the case's
  // promise has settled, and still the case's.
  lostAtTheEnd: async () => {
    Promise.reject(new Error('lost at the end'))
    return 'finished'
  },
  // Made by a timer while the case waits.
  lostInATimer: async () => {
    setTimeout(() => Promise.reject(new Error('lost in a timer')), 1)
    await sleep(20)
    return 'finished'
  },
  // Handled before Node looks: nothing to report.
  handled: async () => {
    const rejected = Promise.reject(new Error('handled'))
    rejected.catch(() => {})
    return 'finished'
  },
}
for (const [name, work] of Object.entries(cases)) {
  print({ [name]: caseReply(name, await rejections.during(work), (value) => ({ result: value })) })
}
Promise.reject(new Error('between cases'))
await sleep(20)
`

describe('CaseRejections (Node reporting)', () => {
  test('attributes what Node reports to the running case, and logs the rest', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', CHILD])
    const lines = stdout.trim().split('\n').map((line) => JSON.parse(line))
    assert.equal(lines.length, 4, stdout)
    const [lostAtTheEnd, lostInATimer, handled, outside] = lines
    assert.match(lostAtTheEnd.lostAtTheEnd.errored.context, /^unhandled rejection in lostAtTheEnd: Error: lost at the end\n/)
    assert.match(lostInATimer.lostInATimer.errored.context, /^unhandled rejection in lostInATimer: Error: lost in a timer\n/)
    assert.deepEqual(handled, { handled: { result: 'finished' } })
    assert.deepEqual(outside, { logged: 'unhandled rejection outside any case: Error: between cases' })
  })
})
