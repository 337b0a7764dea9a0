// @ts-check
// dshc adapter for the published TypeScript implementation of DeepSeek
// Harness: the prompt-assembly contract (@deepseek-ai/dsh-system-prompt) and
// the agent loop around it (@deepseek-ai/dsh-agent-loop).
//
// Protocol: docs/adapter-protocol.md (version 1). One JSON request per line on
// stdin, one JSON reply per line on stdout. Nothing else is ever written to
// stdout; diagnostics go to stderr.
//
// Every case runs in a fresh cordis Context with the real `SystemPrompt`
// plugin loaded from the case config. Scopes are real dsh-scope scopes
// (`createScope`, `bindScopeParent`); registrations, listeners, disposal and
// `assemble()` are the upstream calls themselves (world.mjs). A loop case also
// gets a real upstream agent loop whose DeepSeek adapter talks to the mock
// provider the harness started for it (loop.mjs). This code only scripts the
// providers, listeners and tools a case describes and reports what happened.

import { answerStart, recoverSeq, stackFramesFrom, stackOf } from './protocol.mjs'
import { CaseRejections, caseReply } from './rejections.mjs'

// ---------------------------------------------------------------------------
// Runtime preparation (before any upstream module is loaded; the two
// modules above load none).

// Node 20 has no Promise.withResolvers (added in Node 22); the upstream
// packages target a runtime that has it.
if (typeof Promise.withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers() {
      let resolve
      let reject
      const promise = new this((res, rej) => {
        resolve = res
        reject = rej
      })
      return { promise, resolve, reject }
    },
  })
}

// cordis creates an Error at every service lookup through a context and
// around every dispatch (to splice call sites into async errors), and each
// creation walks the stack up to this limit. Capturing none makes the gate
// faster: the whole suite took 11% less CPU than with three frames (perf
// stat task-clock of `dshc check`, two adapters, three runs each in turns:
// 5.0 s against 5.6 s), and three took a tenth less than V8's default of
// ten. An error then reads as its name and message only. To see where an
// errored reply's error was thrown, set DSHC_NODE_STACK_FRAMES to the
// frames wanted (10, say).
// No upstream behaviour reads a stack's frames: the suite passes alike
// with any limit.
Error.stackTraceLimit = stackFramesFrom(process.env.DSHC_NODE_STACK_FRAMES)

// stdout is the protocol channel: route every console method to stderr so a
// stray log line from any module can never corrupt it.
for (const method of ['log', 'info', 'debug', 'warn', 'trace', 'dir']) {
  console[method] = (...args) => console.error(...args)
}

/** @param {...unknown} args */
function log(...args) {
  console.error('[node-dsh]', ...args)
}

// A rejection nobody handles fails the case it happened in (the case's
// reply is `errored`); outside any case it is only logged.
const caseRejections = new CaseRejections((message) => log(message))
process.on('unhandledRejection', (reason) => caseRejections.unhandled(reason))

process.stdout.on('error', (error) => {
  // The harness closed our stdout: nobody is listening any more.
  log('stdout error, exiting:', error.message)
  process.exit(0)
})

const { createRequire } = await import('node:module')
const { readLine, writeLine } = await import('./channel.mjs')

const require = createRequire(import.meta.url)
const PROMPT_PACKAGE = '@deepseek-ai/dsh-system-prompt'
const promptPackage = require(`${PROMPT_PACKAGE}/package.json`)

const { CaseWorld, bootCase, clean, disposeCase, present } = await import('./world.mjs')
const { joinContextSections, renderContextSections, renderPrompt } = await import(PROMPT_PACKAGE)
// The loop level needs packages a release may not have published (the
// DeepSeek adapter first appeared in rc.8): without them only the assembly
// level is offered.
/** @type {typeof import('./loop.mjs') | undefined} */
let loopLevel
try {
  loopLevel = await import('./loop.mjs')
} catch (error) {
  log(`the loop level is unavailable with these packages: ${stackOf(error)}`)
}

const IMPLEMENTATION = {
  name: PROMPT_PACKAGE,
  version: promptPackage.version,
  language: 'typescript',
  homepage: `https://www.npmjs.com/package/${PROMPT_PACKAGE}`,
}

/** @param {object} reply */
function send(reply) {
  writeLine(clean(reply))
}

const CAPABILITIES =
  loopLevel === undefined
    ? { levels: ['assembly'], bench: true, step_refs: true }
    : { levels: ['assembly', 'loop'], bench: true, virtual_time: true, step_refs: true }

/** Execute one assembly-level case; the `result` body of the reply. */
async function runAssemblyCase(caseData) {
  const booted = await bootCase(caseData.config)
  if (booted.configError !== undefined) return { config_error: booted.configError, observations: [] }
  const { root, host, counter } = booted
  const world = new CaseWorld(root, host, counter)
  try {
    return { observations: await world.runAll(caseData.commands) }
  } finally {
    await disposeCase(booted)
  }
}

/** One `run` request's reply body: `{result}`, or at the loop level
 * `{result}` or `{skipped}`. Throws what the adapter could not handle. */
async function runCase(request, level) {
  if (level === 'assembly') return { result: await runAssemblyCase(request.case) }
  // dshc sends no case of a level the adapter did not offer.
  if (loopLevel === undefined) throw new Error('the loop level is unavailable with these packages')
  const virtualSeq = request.virtual_time === true ? request.seq : undefined
  return loopLevel.runLoopCase(request.case, request.provider_url, virtualSeq)
}

/** Extension bench/1: build the fixture's registry once (every command but
 * the last), then time `batches` batches of `iterations` runs of the last
 * command, an `assemble`, each followed by rendering the system text and the
 * runtime-context snapshot with upstream's own renderers. */
async function benchCase(caseData, iterations, batches) {
  const booted = await bootCase(caseData.config)
  if (booted.configError !== undefined) throw new Error(`config error: ${JSON.stringify(booted.configError)}`)
  const { root, host, counter } = booted
  const world = new CaseWorld(root, host, counter)
  try {
    return await timeBatches(world, caseData, iterations, batches)
  } finally {
    await disposeCase(booted)
  }
}

async function timeBatches(world, caseData, iterations, batches) {
  const measured = caseData.commands.at(-1)
  if (measured?.do !== 'assemble') throw new Error('a bench case ends with the measured `assemble`')
  const observations = await world.runAll(caseData.commands.slice(0, -1))
  const failed = observations.findIndex((observation) => observation?.error !== undefined)
  if (failed >= 0) throw new Error(`command ${failed} failed: ${JSON.stringify(observations[failed].error)}`)
  const batchNs = []
  let outputBytes = 0
  for (let batch = 0; batch < batches; batch += 1) {
    const started = process.hrtime.bigint()
    for (let step = 0; step < iterations; step += 1) {
      const assembly = await world.execute(measured)
      const prompt = renderPrompt(assembly)
      const snapshot = joinContextSections(renderContextSections(assembly))
      outputBytes = Buffer.byteLength(prompt) + Buffer.byteLength(snapshot)
    }
    batchNs.push(Number(process.hrtime.bigint() - started))
  }
  return { batch_ns: batchNs, output_bytes: outputBytes }
}

// ---------------------------------------------------------------------------
// The request loop.

/** Handle one request line; `true` when the adapter should exit. */
async function handle(line) {
  let request
  try {
    request = JSON.parse(line)
  } catch (error) {
    return badRequest(line, `not JSON: ${safeMessage(error)}`)
  }
  if (request === null || typeof request !== 'object' || Array.isArray(request)) {
    return badRequest(line, 'not a JSON object')
  }
  const { seq } = request
  if (!Number.isSafeInteger(seq) || seq < 0) return badRequest(line, 'missing or invalid seq')

  switch (request.cmd) {
    case 'start': {
      const reply = answerStart(request, IMPLEMENTATION, CAPABILITIES)
      send(reply)
      // A dshc of another version has nothing to send that this adapter
      // could answer: say so (`errored`) and exit.
      if (reply.errored !== undefined) {
        log(reply.errored.context)
        process.exit(1)
      }
      return false
    }
    case 'run': {
      const caseData = request.case
      if (caseData === null || typeof caseData !== 'object' || !Array.isArray(caseData.commands)) {
        send({ seq, errored: { context: 'bad request: `run` needs a case with a commands array' } })
        return false
      }
      const level = present(caseData.level) ? caseData.level : 'assembly'
      if (level !== 'assembly' && level !== 'loop') {
        send({ seq, skipped: { reason: `level ${JSON.stringify(caseData.level)} is not implemented` } })
        return false
      }
      const outcome = await caseRejections.during(() => runCase(request, level))
      const reply = caseReply(`case ${JSON.stringify(caseData.id)}`, outcome, (body) => body)
      if ('errored' in reply) log(`case ${JSON.stringify(caseData.id)} errored:`, reply.errored.context)
      send({ seq, ...reply })
      // A case stuck on the harness's clock leaves its agents running: exit
      // rather than let them into the next case (dshc starts a fresh process).
      const { settled } = outcome
      if (settled.status === 'rejected' && settled.reason instanceof Error && settled.reason.name === 'StuckCase') {
        process.exit(0)
      }
      return false
    }
    case 'bench': {
      const caseData = request.case
      if (caseData === null || typeof caseData !== 'object' || !Array.isArray(caseData.commands)) {
        send({ seq, errored: { context: 'bad request: `bench` needs a case with a commands array' } })
        return false
      }
      const outcome = await caseRejections.during(() => benchCase(caseData, request.iterations, request.batches))
      send({ seq, ...caseReply(`bench of ${JSON.stringify(caseData.id)}`, outcome, (benched) => ({ benched })) })
      return false
    }
    case 'stop':
      send({ seq, stopped: {} })
      return true
    default:
      send({ seq, errored: { context: `bad request: unknown cmd ${JSON.stringify(request.cmd)}` } })
      return false
  }
}

/** The message of a thrown value, for a one-line explanation.
 * @param {unknown} error */
function safeMessage(error) {
  return error instanceof Error ? error.message : String(error)
}

/** Answer a request that cannot be handled (`errored`, when its seq can be
 * recovered); `false`: the adapter goes on serving.
 * @param {string} line
 * @param {string} why */
function badRequest(line, why) {
  const seq = recoverSeq(line)
  if (seq === undefined) {
    log(`ignoring a request without a usable seq (${why}): ${line.slice(0, 200)}`)
  } else {
    send({ seq, errored: { context: `bad request: ${why}` } })
  }
  return false
}

loopLevel?.prepareLoopEnvironment()

for (let line = readLine(); line !== null; line = readLine()) {
  if (line.trim() === '') continue
  let stop = false
  try {
    stop = await handle(line)
  } catch (error) {
    // A bug in the loop itself: report it and keep serving.
    log('request handling failed:', stackOf(error))
    const seq = recoverSeq(line)
    if (seq !== undefined) send({ seq, errored: { context: `adapter error: ${stackOf(error)}` } })
  }
  if (stop) process.exit(0)
}
process.exit(0)
