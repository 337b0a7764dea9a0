// @ts-check
// The protocol channel: JSON lines on fd 0 and fd 1, read and written
// synchronously.
//
// Synchronous on purpose. A `virtual_time` case (docs/adapter-protocol.md)
// sends its provider requests to the harness in the middle of a run and must
// have the answer before any other code runs: the answer is what the
// provider did at a virtual instant, and letting the event loop turn while it
// is in flight would let the fake clock or other tasks move on. One reader
// serves the command loop and those mid-run answers, so no line is ever
// taken by the wrong consumer.

import { readSync, writeSync } from 'node:fs'

const IN = 0
const OUT = 1
const CHUNK_BYTES = 1 << 16

/** A pause for a descriptor that is not ready (EAGAIN on a non-blocking pipe). */
const pause = new Int32Array(new SharedArrayBuffer(4))
function waitBriefly() {
  Atomics.wait(pause, 0, 0, 1)
}

let pending = Buffer.alloc(0)
let ended = false

/** The `code` of a failed system call (`EAGAIN`, `EOF`, ...), if it has one. */
function errorCode(error) {
  return /** @type {NodeJS.ErrnoException} */ (error)?.code
}

/** The next line from the harness without its newline, or `null` at end of input.
 * @returns {string | null} */
export function readLine() {
  const chunk = Buffer.alloc(CHUNK_BYTES)
  for (;;) {
    const newline = pending.indexOf(10)
    if (newline >= 0) {
      const line = pending.subarray(0, newline).toString('utf8')
      pending = pending.subarray(newline + 1)
      return line
    }
    if (ended) {
      if (pending.length === 0) return null
      const line = pending.toString('utf8')
      pending = Buffer.alloc(0)
      return line
    }
    let read
    try {
      read = readSync(IN, chunk, 0, chunk.length, null)
    } catch (error) {
      if (errorCode(error) === 'EAGAIN') {
        waitBriefly()
        continue
      }
      if (errorCode(error) === 'EOF') read = 0
      else throw error
    }
    if (read === 0) ended = true
    else pending = Buffer.concat([pending, chunk.subarray(0, read)])
  }
}

/** Write one JSON line to the harness, all of it.
 * @param {unknown} value */
export function writeLine(value) {
  let bytes = Buffer.from(`${JSON.stringify(value)}\n`, 'utf8')
  while (bytes.length > 0) {
    try {
      const written = writeSync(OUT, bytes)
      bytes = bytes.subarray(written)
    } catch (error) {
      if (errorCode(error) !== 'EAGAIN') throw error
      waitBriefly()
    }
  }
}
