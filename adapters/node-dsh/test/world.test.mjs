// @ts-check
// world.mjs `clean`: what every reply goes through before it is written
// (docs/adapter-protocol.md, "Transport": strings must be valid Unicode, a
// lone UTF-16 surrogate becomes U+FFFD; "Observations": objects keep their
// own key order). `resolveStepRefs`: step inputs taken from earlier
// observations ("step_refs/1").

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { clean, resolveStepRefs } from '../world.mjs'

describe('clean', () => {
  test('replaces each lone surrogate with U+FFFD and keeps valid pairs', () => {
    assert.equal(clean('a\uD800b'), 'a\uFFFDb')
    assert.equal(clean('\uDC00x\uD83D'), '\uFFFDx\uFFFD')
    assert.equal(clean('pair: \uD83D\uDE00'), 'pair: \uD83D\uDE00')
    // A low surrogate before a high one is two lone ones, not a pair.
    assert.equal(clean('\uDE00\uD83D'), '\uFFFD\uFFFD')
  })

  test('cleans keys as well as values, at any depth', () => {
    const cleaned = clean({ outer: [{ 'k\uD800': ['v\uDFFF'] }] })
    assert.deepEqual(cleaned, { outer: [{ 'k\uFFFD': ['v\uFFFD'] }] })
  })

  test('the result always serializes to well-formed JSON text', () => {
    const text = JSON.stringify(clean({ text: 'x\uD800', list: ['\uDC00'] }))
    assert.equal(text, '{"text":"x\uFFFD","list":["\uFFFD"]}')
  })

  test('keeps the own key order', () => {
    const value = { zeta: 1, alpha: 2, mid: 3 }
    assert.deepEqual(Object.keys(clean(value)), ['zeta', 'alpha', 'mid'])
  })

  test('keeps an own "__proto__" key as data (an assembly may hold one)', () => {
    const value = JSON.parse('{"__proto__":{"x":1},"after":2}')
    const cleaned = clean(value)
    assert.deepEqual(Object.keys(cleaned), ['__proto__', 'after'])
    assert.equal(Object.getPrototypeOf(cleaned), Object.prototype)
    assert.equal(JSON.stringify(cleaned), '{"__proto__":{"x":1},"after":2}')
  })

  test('drops what JSON cannot hold from objects and nulls it in arrays, as JSON.stringify does', () => {
    const value = { keep: 1, gone: undefined, fn: () => 1, sym: Symbol('s'), list: [1, undefined, 'x'] }
    const cleaned = clean(value)
    assert.deepEqual(cleaned, { keep: 1, list: [1, null, 'x'] })
    assert.equal(JSON.stringify(cleaned), JSON.stringify(value))
  })

  test('passes numbers, booleans and null through', () => {
    assert.deepEqual(clean([0, -1.5, true, false, null]), [0, -1.5, true, false, null])
  })

  test('copies: the cleaned value shares no object with the input', () => {
    const inner = { text: 'x' }
    const value = { inner, list: [inner] }
    const cleaned = clean(value)
    assert.notEqual(cleaned.inner, inner)
    assert.notEqual(cleaned.list, value.list)
  })
})

describe('resolveStepRefs', () => {
  const observations = [{ changes: 0, value: { seq: 4, surface: [2, 7] } }]

  test('replaces each reference with a copy of what the observation holds there', () => {
    const command = {
      do: 'append',
      surface_op: { op: 'replace', start: { $from: { step: 0, path: ['value', 'surface', 1] } } },
      source_event_seqs: [{ $from: { step: 0, path: ['value', 'seq'] } }],
    }
    assert.deepEqual(resolveStepRefs(command, observations), {
      do: 'append',
      surface_op: { op: 'replace', start: 7 },
      source_event_seqs: [4],
    })
    const whole = resolveStepRefs({ a: { $from: { step: 0, path: ['value'] } } }, observations)
    assert.notEqual(whole.a, observations[0].value)
  })

  test('a reference to nothing throws the error every implementation gives', () => {
    assert.throws(
      () => resolveStepRefs({ x: { $from: { step: 0, path: ['value', 'surface', 5] } } }, observations),
      { message: "a step input takes command 0's value.surface[5], which its observation does not hold" },
    )
    assert.throws(() => resolveStepRefs({ $from: { step: 3, path: ['value'] } }, observations))
  })
})
