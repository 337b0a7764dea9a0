// @ts-check
// protocol.mjs: the `start` handshake, the seq a reply echoes and how
// errors are written into replies (docs/adapter-protocol.md, "Messages":
// `start`'s version; "Transport": every request has a `seq`, 0, 1, 2, ...,
// and the reply echoes it).

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { PROTOCOL_VERSION, answerStart, recoverSeq, safeString, stackFramesFrom, stackOf } from '../protocol.mjs'

describe('recoverSeq', () => {
  test('takes the seq of a JSON request, 0 included', () => {
    assert.equal(recoverSeq('{"seq":7,"cmd":"nonsense"}'), 7)
    assert.equal(recoverSeq('{"cmd":"run","seq":0}'), 0)
  })

  test('a JSON request whose seq is not a non-negative integer has none', () => {
    for (const seq of ['-1', '1.5', '"3"', 'null', 'true', '[1]', '9007199254740993']) {
      assert.equal(recoverSeq(`{"seq":${seq},"cmd":"run"}`), undefined, `seq ${seq}`)
    }
    assert.equal(recoverSeq('{"cmd":"run"}'), undefined)
  })

  test('in JSON only the top-level seq counts, not one nested in the case', () => {
    assert.equal(recoverSeq('{"cmd":"run","case":{"seq":3}}'), undefined)
  })

  test('JSON that is not an object has no seq', () => {
    assert.equal(recoverSeq('[{"seq":1}]'), undefined)
    assert.equal(recoverSeq('12'), undefined)
  })

  test('a line that is not JSON still gives up the seq it spells out', () => {
    assert.equal(recoverSeq('{"seq": 12, "cmd": "run", "case": {'), 12)
    assert.equal(recoverSeq('{"seq":4,"cmd":"run"} trailing'), 4)
  })

  test('a line that is not JSON and names no seq has none', () => {
    assert.equal(recoverSeq('not json at all'), undefined)
    assert.equal(recoverSeq('{"seq": -2,'), undefined)
  })
})

describe('stackOf and safeString', () => {
  test('an error is written with its stack, which starts with name and message', () => {
    const error = new TypeError('boom')
    assert.equal(stackOf(error), error.stack)
    assert.match(stackOf(error), /^TypeError: boom\n/)
  })

  test('a thrown value without a stack is written as its string', () => {
    assert.equal(stackOf('plain'), 'plain')
    assert.equal(stackOf(42), '42')
    assert.equal(stackOf(undefined), 'undefined')
    assert.equal(stackOf({ stack: 5 }), '[object Object]')
  })

  test('a value whose toString throws still becomes a string', () => {
    const hostile = {
      toString() {
        throw new Error('no')
      },
    }
    assert.equal(safeString(hostile), '[object Object]')
    assert.equal(stackOf(Object.create(null)), '[object Object]')
  })
})

describe('stackFramesFrom', () => {
  test('no frames unless DSHC_NODE_STACK_FRAMES asks for some', () => {
    assert.equal(stackFramesFrom(undefined), 0)
    assert.equal(stackFramesFrom(''), 0)
    assert.equal(stackFramesFrom('0'), 0)
    assert.equal(stackFramesFrom('10'), 10)
    assert.equal(stackFramesFrom('1000'), 1000)
  })

  test('anything but a whole number up to 1000 is refused, naming the value', () => {
    for (const text of ['-1', '1.5', ' 3', 'ten', '1001', '99999', '0x10']) {
      assert.throws(() => stackFramesFrom(text), { message: `DSHC_NODE_STACK_FRAMES must be a whole number from 0 to 1000, not ${JSON.stringify(text)}` })
    }
  })
})

describe('answerStart', () => {
  const implementation = { name: 'impl', version: '1.2.3', language: 'typescript' }
  const capabilities = { levels: ['assembly'], bench: true }

  test('version 1 is answered with started, echoing seq and the version', () => {
    assert.deepEqual(answerStart({ seq: 0, version: 1 }, implementation, capabilities), {
      seq: 0,
      started: { version: PROTOCOL_VERSION, implementation, capabilities },
    })
    assert.equal(PROTOCOL_VERSION, 1)
  })

  test('any other version is answered errored, naming both, and never started', () => {
    for (const version of [2, 0, '1', null, undefined]) {
      const reply = answerStart({ seq: 0, version }, implementation, capabilities)
      assert.equal('started' in reply, false, `version ${String(version)}`)
      assert.equal(reply.seq, 0)
      const context = reply.errored?.context ?? ''
      assert.ok(context.includes(`protocol version ${JSON.stringify(version ?? null)}`), context)
      assert.match(context, /speaks only version 1/)
    }
  })
})
