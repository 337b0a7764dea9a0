// @ts-check
// loop.mjs: which loop cases the adapter declines, and why
// (docs/adapter-protocol.md, "What to observe": decline with `skipped` and a
// precise reason a case the implementation cannot run faithfully; "Virtual
// time": on the harness's clock timing races land exactly; "Commands":
// `clock_jump` is declined by an implementation on the real clock; README.md,
// "Skipped loop cases").

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { cancelsPacedRequest, loopSkipReason } from '../loop.mjs'

/** A loop case as dshc compiles it, reduced to what the skip rules read:
 * `commands`, the provider's `responses`, and other `world` fields as given.
 * @param {{commands?: object[], responses?: object[], [field: string]: unknown}} [spec] */
function loopCase({ commands = [], responses = [], ...world } = {}) {
  return {
    id: 'test/case',
    level: 'loop',
    world: {
      adapter: { provider: 'deepseek-official', registered: true },
      provider: { responses },
      ...world,
    },
    commands,
  }
}

const paced = [{ delay_ms: 40 }]

describe('cancelsPacedRequest', () => {
  test('a cancel after a wait, in a case whose provider paces a response, is a timing race', () => {
    const commands = [{ do: 'followup', text: 'hi' }, { do: 'wait', ms: 20 }, { do: 'cancel' }]
    assert.equal(cancelsPacedRequest(loopCase({ commands, responses: paced })), true)
  })

  test('so is disposing the agent after a wait', () => {
    const commands = [{ do: 'followup', text: 'hi' }, { do: 'wait', ms: 20 }, { do: 'dispose_agent' }]
    assert.equal(cancelsPacedRequest(loopCase({ commands, responses: paced })), true)
  })

  test('a wait_idle in between settles the race: the cancel lands on an idle agent', () => {
    const commands = [{ do: 'wait', ms: 20 }, { do: 'wait_idle' }, { do: 'cancel' }]
    assert.equal(cancelsPacedRequest(loopCase({ commands, responses: paced })), false)
  })

  test('a wait after a wait_idle opens the race again', () => {
    const commands = [{ do: 'wait_idle' }, { do: 'wait', ms: 5 }, { do: 'cancel' }]
    assert.equal(cancelsPacedRequest(loopCase({ commands, responses: paced })), true)
  })

  test('a cancel with no wait before it lands before the request: no race', () => {
    const commands = [{ do: 'followup', text: 'hi' }, { do: 'cancel' }, { do: 'wait', ms: 20 }]
    assert.equal(cancelsPacedRequest(loopCase({ commands, responses: paced })), false)
  })

  test('without a paced response there is no position to miss', () => {
    const commands = [{ do: 'wait', ms: 20 }, { do: 'cancel' }]
    assert.equal(cancelsPacedRequest(loopCase({ commands, responses: [{ delay_ms: 0 }, {}] })), false)
    assert.equal(cancelsPacedRequest(loopCase({ commands, provider: undefined })), false)
  })
})

describe('loopSkipReason', () => {
  test('a plain loop case runs in both modes', () => {
    const plain = loopCase({ commands: [{ do: 'followup', text: 'hi' }, { do: 'wait_idle' }] })
    assert.equal(loopSkipReason(plain, false), undefined)
    assert.equal(loopSkipReason(plain, true), undefined)
  })

  test('a clock_jump needs the harness clock', () => {
    const jumping = loopCase({ commands: [{ do: 'clock_jump', ms: 60000 }] })
    assert.match(loopSkipReason(jumping, false) ?? '', /wall-clock jump/)
    assert.equal(loopSkipReason(jumping, true), undefined)
  })

  test('context plugins are driven only on the harness clock', () => {
    const withPlugin = loopCase({ plugins: { time_context: {} } })
    assert.match(loopSkipReason(withPlugin, false) ?? '', /context plugins .*time_context/)
    assert.equal(loopSkipReason(withPlugin, true), undefined)
  })

  test('the plugin order alone configures no plugin', () => {
    const ordered = loopCase({ plugins: { order: ['time_context'] } })
    assert.equal(loopSkipReason(ordered, false), undefined)
  })

  test('a plugin action on the harness clock runs when the adapter drives its input', () => {
    const writes = loopCase({
      plugins: { agent_instructions: {} },
      commands: [{ do: 'plugin', write_file: { path: '/w/AGENTS.md', content: 'x' } }],
    })
    assert.equal(loopSkipReason(writes, true), undefined)
    const unknown = loopCase({ commands: [{ do: 'plugin', shout: 'x' }] })
    assert.match(loopSkipReason(unknown, true) ?? '', /plugin actions/)
  })

  test('a route other than the one upstream registers is declined in both modes', () => {
    const other = loopCase({ adapter: { provider: 'other-route', registered: true } })
    for (const virtual of [false, true]) {
      assert.match(loopSkipReason(other, virtual) ?? '', /"deepseek-official" route, not "other-route"/)
    }
  })

  test('a scripted error tool result is declined in both modes', () => {
    const failing = loopCase({ tool_results: [{ name: 't', text: 'bad', is_error: true }] })
    for (const virtual of [false, true]) assert.match(loopSkipReason(failing, virtual) ?? '', /is_error/)
  })

  test('in real time, up to 2 s of waits in total are spent; more are declined', () => {
    const waits = (/** @type {number[]} */ ...ms) => loopCase({ commands: ms.map((each) => ({ do: 'wait', ms: each })) })
    assert.equal(loopSkipReason(waits(1000, 1000), false), undefined)
    assert.match(loopSkipReason(waits(1000, 1001), false) ?? '', /waits 2001 ms/)
    assert.equal(loopSkipReason(waits(1000, 1001), true), undefined)
  })

  test('a timing race is declined in real time and runs on the harness clock', () => {
    const race = loopCase({ responses: paced, commands: [{ do: 'wait', ms: 10 }, { do: 'cancel' }] })
    assert.match(loopSkipReason(race, false) ?? '', /timing race/)
    assert.equal(loopSkipReason(race, true), undefined)
  })
})
