// @ts-check
// The adapter process itself, spoken to as dshc does: JSON lines on stdin,
// replies on stdout (docs/adapter-protocol.md, "Messages").

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

const ADAPTER = join(dirname(fileURLToPath(import.meta.url)), '..', 'adapter.mjs')

/**
 * Start the adapter, write `requests` (one JSON line each), close its
 * stdin, and collect its replies and exit status.
 * @param {(object | string)[]} requests objects are written as JSON, strings as they are
 * @returns {Promise<{replies: any[], code: number | null, stderr: string}>}
 */
function converse(requests) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [ADAPTER], { stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      stdout += chunk
    })
    child.stderr.setEncoding('utf8').on('data', (chunk) => {
      stderr += chunk
    })
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(killer)
      const replies = stdout
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line))
      resolve({ replies, code, stderr })
    })
    // The adapter may exit before reading everything: that is not an error here.
    child.stdin.on('error', () => {})
    for (const request of requests) child.stdin.write(`${typeof request === 'string' ? request : JSON.stringify(request)}\n`)
    child.stdin.end()
  })
}

describe('the adapter process', () => {
  test('start with version 1 is answered started with version 1; stop with stopped, then exit 0', async () => {
    const { replies, code } = await converse([
      { seq: 0, cmd: 'start', version: 1 },
      { seq: 1, cmd: 'stop' },
    ])
    assert.equal(replies.length, 2)
    const [started, stopped] = replies
    assert.equal(started.seq, 0)
    assert.equal(started.started.version, 1)
    assert.equal(started.started.implementation.name, '@deepseek-ai/dsh-system-prompt')
    assert.ok(started.started.capabilities.levels.includes('assembly'))
    assert.deepEqual(stopped, { seq: 1, stopped: {} })
    assert.equal(code, 0)
  })

  test('start with another version is answered errored, and the adapter exits without serving more', async () => {
    const { replies, code, stderr } = await converse([
      { seq: 0, cmd: 'start', version: 2 },
      { seq: 1, cmd: 'stop' },
    ])
    assert.equal(replies.length, 1, 'nothing after the errored reply')
    const [reply] = replies
    assert.deepEqual(Object.keys(reply), ['seq', 'errored'])
    assert.equal(reply.seq, 0)
    assert.match(reply.errored.context, /protocol version 2.*version 1/)
    assert.notEqual(code, 0)
    assert.match(stderr, /protocol version 2/)
  })

  test('a line that is not JSON is answered errored under the seq it names, and serving goes on', async () => {
    const { replies, code } = await converse([
      { seq: 0, cmd: 'start', version: 1 },
      '{"seq": 1, "cmd": "run", "case": {',
      { seq: 2, cmd: 'stop' },
    ])
    assert.equal(replies.length, 3)
    assert.equal(replies[1].seq, 1)
    assert.match(replies[1].errored.context, /^bad request: not JSON/)
    assert.deepEqual(replies[2], { seq: 2, stopped: {} })
    assert.equal(code, 0)
  })
})
