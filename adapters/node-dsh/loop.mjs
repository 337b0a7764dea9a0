// @ts-check
// The loop level of the node-dsh adapter (docs/adapter-protocol.md, "Loop
// cases"): a loop case's commands run against a real upstream agent loop
// built from the pinned packages, in a fresh cordis Context per case:
//
//   SystemPrompt (case config) · SessionStore · AgentRegistry · LlmRuntime ·
//   ToolRuntime · the DeepSeek adapter (baseURL = the case's provider_url) ·
//   AgentLoop, and one agent from `agentLoop.createAgent` (agent id = session
//   id = `world.agent.id`).
//
// Everything the agent does is upstream code: turns, steps, pre-step,
// request building, the DeepSeek wire format over real HTTP to the harness's
// mock provider, tool scheduling, cancellation, the session log. This file
// only scripts what the case describes (registrations, loop listeners, tool
// results) and reports the run. Time is real: `wait` sleeps, provider delays
// are real delays; the harness redacts message ids and event times before it
// compares (harness/src/oracle/normalize.rs).

import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { dirname, join, posix } from 'node:path'
import { fileURLToPath } from 'node:url'

import { SessionStore } from '@deepseek-ai/dsh-session'
import { AgentRegistry, agentEvents } from '@deepseek-ai/dsh-agent'
import { LlmAdapter, LlmError, LlmRuntime, createUserMessage } from '@deepseek-ai/dsh-llm'
import { ToolRuntime } from '@deepseek-ai/dsh-tools'
import { AgentLoop } from '@deepseek-ai/dsh-agent-loop'
import { AttachmentError } from '@deepseek-ai/dsh-attachment'
import * as deepseek from '@deepseek-ai/dsh-llm-deepseek'
import * as timeContext from '@deepseek-ai/dsh-time-context'
import * as tmuxContext from '@deepseek-ai/dsh-tmux-context'
import { SessionReferenceResolver } from '@deepseek-ai/dsh-session-reference'
import * as agentInstructions from '@deepseek-ai/dsh-agent-instructions'

import {
  AdapterFault,
  abortOf,
  CaseWorld,
  bootCase,
  disposeCase,
  loadPlugin,
  copyJson,
  fromJs,
  Returned,
  observed,
  present,
  timerDelayMs,
} from './world.mjs'
import { BRIDGE_BASE_URL, VirtualTime } from './virtual_time.mjs'

/** The key the reference's simulated provider connection uses, so the
 * `authorization` header is the same on both sides. */
const API_KEY = 'sk-dshc-simulated'

/** A fixed anonymous user id (upstream requires a UUID; the reference sends
 * `dshc-user`), written into a private DSH_HOME so nothing random is sent
 * and the user's own home is never touched. */
const ANONYMOUS_USER_ID = '00000000-0000-4000-8000-000000000000'

/** The private DSH_HOME: inside node_modules (ignored by git, made by
 * `./run`), shared by every adapter process, its content constant. */
const DSH_HOME = join(dirname(fileURLToPath(import.meta.url)), 'node_modules', '.dshc-home')

/** Description of the tools registered to execute scripted results; the
 * schemas are removed from every assembly (see `hideScriptedTools`). */
const SCRIPTED_TOOL_DESCRIPTION = 'dshc scripted tool result (hidden from the prompt)'

/** The longest total of `wait` steps a case may ask for: real time is spent
 * in full (the reference jumps its virtual clock while the agent is idle). */
const MAX_REAL_WAIT_MS = 2000

/** The source plugin of runtime-context snapshot messages (`drop_runtime_context`, `rewrite_runtime_context`). */
const RUNTIME_CONTEXT_SOURCE = '@deepseek-ai/dsh-system-prompt'

const LOOP_EVENTS = {
  on_pre_step: 'agent/pre-step',
  on_request: 'agent/request',
  on_request_error: 'agent/request-error',
  on_turn_stopping: 'agent/turn-stopping',
  on_status: 'agent/status',
  on_session_event: 'session/event',
  // dsh-session collects a live session's `session/event` observers inside
  // `append`, after validating the event and before logging it; cordis
  // announces that dispatch as `internal/dispatch`, synchronously, so a
  // listener there runs first and a throw aborts the append.
  on_session_append: 'internal/dispatch',
  on_llm_stream: 'llm/stream',
}

/** Context plugins run on upstream on the harness's clock. */
const DRIVEN_PLUGINS = new Set(['time_context', 'tmux_context', 'session_reference', 'agent_instructions'])

/** The default registration order of the context plugins (10 P1). */
const CONTEXT_PLUGIN_ORDER = ['agent_instructions', 'time_context', 'tmux_context', 'session_reference']

/** The configured plugins in registration order: `plugins.order` first,
 * then the configured ones it leaves out, in the default order. */
function contextPluginOrder(plugins) {
  const configured = CONTEXT_PLUGIN_ORDER.filter((name) => present(plugins?.[name]))
  const listed = (plugins?.order ?? []).filter((name) => configured.includes(name))
  return [...listed, ...configured.filter((name) => !listed.includes(name))]
}

/** The ops every listener kind runs (docs/adapter-protocol.md, "Acting listeners"). */
const ACT_OPS = new Set(['sleep_ms', 'clock_jump', 'cancel', 'followup', 'steer', 'inject', 'throw', 'record'])

function isActOp(op) {
  if (op === 'dispose_agent') return true
  if (op === null || typeof op !== 'object') return false
  const keys = Object.keys(op)
  return keys.length === 1 && ACT_OPS.has(keys[0])
}

/** `{text, source}` of each message, its text blocks joined. */
function messageFacts(messages) {
  return (messages ?? []).map((message) => ({
    text: (message.content ?? [])
      .filter((block) => block.type === 'text')
      .map((block) => block.text)
      .join(''),
    source: copyJson(message.source),
  }))
}

/** A message a listener sends: a string, or `{text | content, source}`. */
function messageOfArg(arg) {
  if (typeof arg === 'string') return userPrompt(arg)
  const source = present(arg.source) ? copyJson(arg.source) : { kind: 'user' }
  if (present(arg.content)) return createUserMessage({ content: copyJson(arg.content), source })
  return userPrompt(arg.text, source)
}

/** Whether any command or tool body moves the wall clock (`clock_jump`,
 * as a command or as an act op). */
function movesTheWallClock(caseData) {
  const opsMove = (ops) => (ops ?? []).some((op) => op !== null && typeof op === 'object' && 'clock_jump' in op)
  return (
    caseData.commands.some((command) => command.do === 'clock_jump' || opsMove(command.ops)) ||
    (caseData.world.tool_results ?? []).some((result) => opsMove(result.ops))
  )
}

/** One invocation of a scripted listener running its act ops. */
class Acting {
  constructor(world, position, agent, listener, call, facts) {
    this.world = world
    this.position = position
    this.agent = agent
    this.listener = listener
    this.call = call
    this.facts = facts
  }

  /** One op that does not wait. */
  act(op) {
    if (op === 'dispose_agent') {
      void this.world.handles[this.position].dispose()
      return
    }
    const [kind] = Object.keys(op)
    const arg = op[kind]
    switch (kind) {
      case 'clock_jump':
        // Only reachable on the harness's clock (real time skips the case).
        this.world.time.jump(arg)
        return
      case 'cancel':
        this.agent.cancel(present(arg.reason) ? copyJson(arg.reason) : { kind: 'user' }, { keepInbox: arg.keep_inbox === true })
        return
      case 'followup':
      case 'steer':
      case 'inject':
        this.agent[kind](messageOfArg(arg))
        return
      case 'throw':
        throw typeof arg === 'string' ? new Error(arg) : new LlmError(arg.message, arg.code)
      case 'record': {
        const facts = this.facts()
        const entry = { listener: this.listener, call: this.call }
        for (const field of arg) {
          entry[field] = field === 'last_event' ? (this.agent.session.events.at(-1)?.type ?? null) : facts[field]
        }
        this.world.recorded.push(entry)
        return
      }
    }
  }

  /** Run ops in order, awaiting each sleep. */
  async run(ops) {
    for (const op of ops) {
      if (op !== null && typeof op === 'object' && 'sleep_ms' in op) await sleep(op.sleep_ms)
      else this.act(op)
    }
  }

  /** Run ops synchronously up to the first sleep; the rest is the returned promise. */
  runContained(ops) {
    for (const [index, op] of ops.entries()) {
      if (op !== null && typeof op === 'object' && 'sleep_ms' in op) return this.run(ops.slice(index))
      this.act(op)
    }
    return undefined
  }
}

/**
 * Whether the case cancels an agent whose provider request may be in flight
 * at a real-time position: a `cancel` or `dispose_agent` after a `wait`
 * (with no `wait_idle` in between) in a case whose provider paces its
 * response (`delay_ms`). The reference lands such a cancel at an exact
 * virtual instant: before the request, while it awaits the response head,
 * or between two paced events. In real time the margins are a few
 * milliseconds, within the jitter of connection setup and scheduling, and
 * the three positions give different logs (upstream on Node 20 even fails
 * differently while `fetch()` awaits the head: its fetch stamps a `stack`
 * onto the abort reason, which dsh-session then refuses to log in
 * `turn/end`). Measured: these cases flake; other real-time cases, whose
 * margins are tens of milliseconds, do not (README.md).
 */
export function cancelsPacedRequest(caseData) {
  const paced = (caseData.world.provider?.responses ?? []).some((response) => response.delay_ms > 0)
  if (!paced) return false
  let waited = false
  for (const command of caseData.commands) {
    if (command.do === 'wait') waited = true
    else if (command.do === 'wait_idle') waited = false
    else if ((command.do === 'cancel' || command.do === 'dispose_agent') && waited) return true
  }
  return false
}

/** Prepare the process once: credentials and a private DSH_HOME holding
 * the fixed anonymous user id (written atomically, and only when missing or
 * different, so concurrent adapters never see a partial file). */
export function prepareLoopEnvironment() {
  process.env.DEEPSEEK_API_KEY = API_KEY
  const file = join(DSH_HOME, '.anonymous-user-id')
  const content = `${ANONYMOUS_USER_ID}\n`
  let current
  try {
    current = readFileSync(file, 'utf8')
  } catch {
    current = undefined
  }
  if (current !== content) {
    mkdirSync(DSH_HOME, { recursive: true })
    const partial = `${file}.${process.pid}`
    writeFileSync(partial, content)
    renameSync(partial, file)
  }
  process.env.DSH_HOME = DSH_HOME
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, timerDelayMs(ms)))

/** The simulated host's home and `$DSH_HOME` (the reference's). */
const SIMULATED_HOME = '/home/user'
const SIMULATED_DSH_HOME = `${SIMULATED_HOME}/.dsh`

/**
 * The `ctx.fs` provider agent-instructions reads through, over the case's
 * files: `resolve` normalizes an absolute path, `stat` reports a file (its
 * version, from 1, bumped by each write, and its UTF-8 size) or a directory
 * (listed, or a parent of a file), nothing otherwise; `streamText` yields a
 * file's text. It is never unavailable, as the reference's.
 */
class ScriptedFileSystem {
  constructor(spec) {
    this.files = new Map(Object.entries(spec.files ?? {}).map(([path, content]) => [path, { content, version: 1 }]))
    this.dirs = new Set(spec.dirs ?? [])
  }

  write(path, content) {
    const previous = this.files.get(path)
    this.files.set(path, { content, version: (previous?.version ?? 0) + 1 })
  }

  remove(path) {
    this.files.delete(path)
  }

  async resolve(path) {
    return posix.resolve(path)
  }

  async stat(target) {
    const file = this.files.get(target)
    if (file !== undefined) return { type: 'file', version: file.version, size: Buffer.byteLength(file.content, 'utf8') }
    const prefix = target.endsWith('/') ? target : `${target}/`
    if (target === '/' || this.dirs.has(target) || [...this.files.keys(), ...this.dirs].some((path) => path.startsWith(prefix))) {
      return { type: 'directory' }
    }
    return undefined
  }

  async streamText(target) {
    const file = this.files.get(target)
    if (file === undefined) throw Object.assign(new Error(`ENOENT: ${target}`), { code: 'ENOENT' })
    return (async function* () {
      yield file.content
    })()
  }
}

/**
 * The `sessionQuery` service session-reference reads other sessions through
 * (`readSurface`), answering from the case's scripted sessions: each one's
 * surface as the events `dsh-session` projects (`user/message` with its
 * source, `assistant/message`, `tool/result`), its `cwd` and
 * `capturedThroughSeq` (default: the last message's position, `null` with
 * none); an unknown id or a scripted `read_error` rejects.
 */
class ScriptedSessionQuery {
  constructor(current) {
    this.current = current
  }

  async readSurface(sessionId) {
    const session = this.current()[sessionId]
    if (session === undefined) throw new Error(`session ${JSON.stringify(sessionId)} not found`)
    if (present(session.read_error)) throw new Error(session.read_error)
    const messages = session.messages ?? []
    const content = (text) => [{ type: 'text', text }]
    const events = messages.map((message) => {
      switch (message.role) {
        case 'user':
          return { type: 'user/message', data: { role: 'user', source: message.source ?? { kind: 'user' }, content: content(message.text) } }
        case 'assistant':
          return { type: 'assistant/message', data: { message: { role: 'assistant', content: content(message.text) } } }
        default:
          return { type: 'tool/result', data: { role: 'tool', content: content(message.text) } }
      }
    })
    return {
      session: { id: sessionId, cwd: session.cwd ?? undefined },
      capturedThroughSeq: session.captured_through_seq ?? (messages.length > 0 ? messages.length - 1 : null),
      events,
    }
  }

  async listSessions() {
    return Object.entries(this.current()).map(([id, session]) => ({ header: { id, cwd: session.cwd } }))
  }

  async readTitleSnapshots(ids) {
    return ids.map(() => undefined)
  }
}

/**
 * The `ctx.shell` executor service tmux-context calls, answering its one
 * read-only query (the tty check and `tmux display-message`) from the
 * case's scripted tmux state: `{pane}` exits 0 with the fields (tab-separated,
 * as tmux prints them), `{exit}` exits with that code, `{rejected}` is the
 * executor refusing the command.
 */
class ScriptedShell {
  constructor(current) {
    this.current = current
  }

  resolve(request) {
    return { command: request.command, signal: request.signal }
  }

  async run() {
    const query = this.current()
    if (present(query.rejected)) throw new Error(query.rejected)
    if (present(query.pane)) {
      const pane = query.pane
      const fields = [pane.session, pane.window_index, pane.window_name, pane.pane_index, pane.pane_id, pane.window_active, pane.pane_active, pane.layout]
      return { exitCode: 0, stdout: { text: `${fields.join('\\t')}\n` }, stderr: { text: '' } }
    }
    return { exitCode: query.exit ?? 1, stdout: { text: '' }, stderr: { text: '' } }
  }
}

/**
 * @param {string} text
 * @param {import('@deepseek-ai/dsh-llm').MessageSource} [source]
 */
function userPrompt(text, source = { kind: 'user' }) {
  return createUserMessage({ content: [{ type: 'text', text }], source })
}

function isOwned(message) {
  return message?.source?.kind === 'plugin' && message.source.plugin === RUNTIME_CONTEXT_SOURCE
}

/** A scripted route's error: an `LlmError` when it has a code, else a plain `Error`. */
function scriptedError(spec) {
  if (!present(spec.code)) return new Error(spec.message)
  const options = {}
  if (present(spec.status)) options.status = spec.status
  if (present(spec.provider_retry_after_ms)) options.providerRetryAfterMs = spec.provider_retry_after_ms
  if (present(spec.request_id)) options.requestId = spec.request_id
  return new LlmError(spec.message, spec.code, options)
}

/** Settle when `signal` aborts, rejecting with its reason. */
function untilAborted(signal) {
  return new Promise((_, reject) => {
    const fail = () => reject(signal.reason)
    if (signal.aborted) fail()
    else signal.addEventListener('abort', fail, { once: true })
  })
}

/**
 * A scripted route (docs/adapter-protocol.md, "Scripted routes"): an
 * `LlmAdapter` whose `resolveModel` and `stream` answer from the case. The
 * compiled case carries every response as `parts` (dshc expands the
 * shorthands); `{sleep_ms}` entries pause in real time. Each `stream()` call
 * records the options it received (without the signal) in `calls`.
 */
class ScriptedRoute extends LlmAdapter {
  /**
   * @param {any} spec the route's spec
   * @param {any[]} calls where each `stream()` call's options go
   * @param {(sessionId: string, call: number) => Acting | undefined} acting an invocation on the agent of that session, for `{act}` parts
   */
  constructor(spec, calls, acting) {
    super()
    this.spec = spec
    this.calls = calls
    this.acting = acting
    this.count = 0
    /** What `settle` gave each pending model. @type {Map<string, any>} */
    this.settled = new Map()
    /** The lookups waiting on each pending model. @type {Map<string, (() => void)[]>} */
    this.waiting = new Map()
  }

  resolveModel(provider, model, signal) {
    const resolution = this.spec.models?.[model] ?? this.spec.model ?? { returns: {} }
    if (resolution !== 'pending') return this.answer(provider, model, resolution, signal)
    // A plain deferred: the signal does not end it, only `settle`.
    const settled = this.settled.has(model)
      ? Promise.resolve()
      : new Promise((resolve) => this.waiting.set(model, [...(this.waiting.get(model) ?? []), () => resolve(undefined)]))
    return settled.then(() => this.answer(provider, model, this.settled.get(model), signal))
  }

  /** What `resolveModel` answers for a settled `resolution`. */
  answer(provider, model, resolution, signal) {
    if (resolution === 'blocks') return untilAborted(signal)
    if (present(resolution.rejects)) return Promise.reject(scriptedError(resolution.rejects))
    return Promise.resolve({ provider, id: model, name: model, ...copyJson(resolution.returns) })
  }

  /** Settle `model`'s pending resolution for the lookups waiting on it and
   * every later one. */
  settle(model, resolution) {
    this.settled.set(model, resolution)
    const waiting = this.waiting.get(model) ?? []
    this.waiting.delete(model)
    for (const resolve of waiting) resolve()
  }

  async *stream(options) {
    const { signal, ...rest } = options
    this.calls.push(JSON.parse(JSON.stringify(rest)))
    this.count += 1
    const response = this.spec.responses?.[this.count - 1]
    if (response === undefined) {
      throw new Error(`scripted route "${this.spec.provider}" has no response for call ${this.count}`)
    }
    if (response.delay_ms > 0) await sleep(response.delay_ms)
    const call = this.count
    yield* streamParts(response.parts ?? [], (op) => this.acting(rest.sessionId, call)?.act(op))
    if (response.hangs === true) await untilAborted(signal)
    if (present(response.error)) throw scriptedError(response.error)
  }
}

/** A scripted stream's `parts`, a route response's or what an `llm/stream`
 * listener serves: each yielded as given, but `{sleep_ms}` pauses and
 * `{act}` runs `act(op)` right there in the generator. */
async function* streamParts(parts, act) {
  for (const part of parts) {
    const only = Object.keys(part).length === 1
    if (only && typeof part.sleep_ms === 'number') await sleep(part.sleep_ms)
    else if (only && present(part.act)) act(part.act)
    else yield copyJson(part)
  }
}

function messageOf(error) {
  return error instanceof Error ? error.message : String(error)
}

/** Why this adapter cannot run a loop case faithfully, or `undefined`;
 * `virtual`: on the harness's clock, where waits cost nothing and races
 * land exactly. */
export function loopSkipReason(caseData, virtual) {
  const world = caseData.world
  const plugins = Object.keys(world.plugins ?? {}).filter((key) => key !== 'order')
  // On the harness's clock each plugin reads its input through a seam the
  // adapter scripts (`loadContextPlugin`); in real time none can.
  const driven = virtual ? DRIVEN_PLUGINS : new Set()
  const undriven = plugins.filter((plugin) => !driven.has(plugin))
  const actions = caseData.commands.filter((command) => command.do === 'plugin')
  const drivenAction = (command) =>
    (driven.has('tmux_context') && present(command.tmux)) ||
    (driven.has('session_reference') && present(command.set_session)) ||
    (driven.has('agent_instructions') && (present(command.write_file) || present(command.remove_file))) ||
    (present(command.dispose) && driven.has(command.dispose))
  const undrivenAction = actions.some((command) => !drivenAction(command))
  if (undriven.length > 0 || undrivenAction) {
    return (
      `context plugins (spec 10: ${undriven.join(', ') || 'plugin actions'}) are not driven: ` +
      'the scenario feeds them simulated inputs (instruction files, tmux panes, stored sessions' +
      (virtual ? '' : ', the clock') +
      ') that the upstream plugins read from the real host'
    )
  }
  if (!virtual && movesTheWallClock(caseData)) {
    return 'a wall-clock jump needs a clock the harness drives; this adapter runs on the real clock'
  }
  if (world.adapter.provider !== 'deepseek-official') {
    return `the upstream DeepSeek plugin registers only the "deepseek-official" route, not ${JSON.stringify(world.adapter.provider)}`
  }
  if ((world.tool_results ?? []).some((result) => result.is_error === true)) {
    return 'a scripted error tool result (`is_error`) has no upstream equivalent: a failing tool body is rendered by the tool runtime, not given verbatim'
  }
  const waited = caseData.commands.filter((command) => command.do === 'wait').reduce((sum, command) => sum + command.ms, 0)
  if (!virtual && waited > MAX_REAL_WAIT_MS) {
    return `the case waits ${waited} ms; in real time that is spent in full (limit ${MAX_REAL_WAIT_MS} ms), where the reference jumps its virtual clock`
  }
  if (!virtual && cancelsPacedRequest(caseData)) {
    return (
      'timing race: a cancel after a real-time wait must land at an exact point of a paced provider ' +
      'response (before the request, while fetch() awaits the response head, or between two events ' +
      'a few ms apart); the reference places it in virtual time, real time cannot do so reliably'
    )
  }
  return undefined
}

/** Case adapter spec (snake_case) to the DeepSeek plugin config. */
function deepseekConfig(spec, baseURL) {
  const config = { baseURL }
  if (Array.isArray(spec.models) && spec.models.length > 0) {
    config.models = spec.models.map((model) => ({
      id: model.id,
      ...(present(model.context_window) ? { contextWindow: model.context_window } : {}),
      ...(present(model.max_tokens) ? { maxTokens: model.max_tokens } : {}),
      ...(present(model.input_modalities) ? { inputModalities: model.input_modalities } : {}),
    }))
  }
  if (present(spec.default_context_window)) config.defaultContextWindow = spec.default_context_window
  if (present(spec.max_tokens)) config.maxTokens = spec.max_tokens
  if (present(spec.reasoning_effort)) config.reasoningEffort = spec.reasoning_effort
  if (present(spec.thinking)) config.thinking = spec.thinking
  if (present(spec.stream_idle_timeout_ms)) config.streamIdleTimeoutMs = spec.stream_idle_timeout_ms
  if (present(spec.max_request_image_bytes)) config.maxRequestImageBytes = spec.max_request_image_bytes
  return config
}

/**
 * The deployment's attachment service (`ctx.attachments`) as the world
 * states it: each held image by `attachmentId`, read as its stored bytes
 * and media type, or failing with its `AttachmentError`
 * (docs/adapter-protocol.md, "The attachment service").
 */
class ScriptedAttachments {
  /** @param {any[]} held the world's `adapter.attachments` */
  constructor(held) {
    this.held = new Map(held.map((image) => [image.id, image]))
  }

  /** @param {any} ref an image block's `attachment` */
  async readImage(ref) {
    if (ref === null || typeof ref !== 'object' || typeof ref.attachmentId !== 'string') {
      throw new AttachmentError('Image attachment reference is invalid.', 'INVALID_ATTACHMENT_REF')
    }
    const image = this.held.get(ref.attachmentId)
    if (image === undefined) throw new AttachmentError('Image attachment not found.', 'ATTACHMENT_NOT_FOUND')
    if (present(image.error)) throw new AttachmentError(image.error.message, image.error.code)
    return { ref: { ...ref, mediaType: image.media_type }, data: new Uint8Array(Buffer.from(image.data, 'base64')) }
  }
}

/** A loop case's world: the registry commands of `CaseWorld` plus the agent. */
class LoopWorld extends CaseWorld {
  /**
   * @param {import('@deepseek-ai/cordis').Context} root
   * @param {import('@deepseek-ai/cordis').Context} host
   * @param {{changes: number}} counter
   * @param {any} world the case's `world` (JSON, docs/adapter-protocol.md "What to build")
   * @param {import('@deepseek-ai/cordis').Fiber[]} fibers the plugins `bootCase` loaded; `setup` adds the loop's
   * @param {VirtualTime | undefined} time the harness's clock, on a `virtual_time` case
   */
  constructor(root, host, counter, world, fibers, time) {
    super(root, host, counter)
    this.world = world
    this.fibers = fibers
    this.time = time
    // The driven context plugins' simulated inputs, set when the plugin
    // loads (`loadContextPlugin`); `plugin` commands change them.
    /** @type {ScriptedFileSystem | undefined} */
    this.files = undefined
    /** @type {Record<string, any> | undefined} */
    this.referencedSessions = undefined
    /** @type {any} */
    this.tmuxQuery = undefined
    /** Each context plugin's fiber by its table name, until a `plugin`
     * command disposes it. @type {Map<string, import('@deepseek-ai/cordis').Fiber>} */
    this.contextPlugins = new Map()
    /** The agents' specs: `world.agent` first, then `world.agents`. */
    this.specs = [world.agent, ...(world.agents ?? [])]
    /** `{agent, dispose}` of each live agent by position in `specs` (replaced by `resume`). */
    this.handles = []
    /** Live `agent/error` and `agent/status` events, in order. */
    this.live = []
    /** What scripted routes' `stream()` received, in call order. */
    this.llmCalls = []
    /** What acting listeners recorded, in order (the run's `journal`). */
    this.recorded = []
    /** The world's scripted routes in `routes` order, each with its own
     * script cursor, and the registration in force under each name. */
    this.routes = (world.routes ?? []).map((spec) => new ScriptedRoute(spec, this.llmCalls, (sessionId, call) => this.actingOnCaller(sessionId, 'route', call)))
    this.routeHandles = new Map()
    // Registrations and listeners scoped to an agent's name go through the
    // live agent's context; `assemble {scope}` uses the agent as the key.
    for (const spec of this.specs) {
      if (this.boundScopes.has(spec.id)) continue
      const position = this.position(spec.id)
      this.boundScopes.set(spec.id, {
        context: () => this.handles[position].agent.ctx,
        key: () => this.handles[position].agent,
      })
    }
  }

  /** The position of the agent `id` names (the first of that id; default the first agent). */
  /** An invocation acting on the agent whose session made a model call, if
   * one has it: a route's `{act}` parts (which record nothing), an
   * `llm/stream` middleware's ops. */
  actingOnCaller(sessionId, listener, call, facts = () => ({})) {
    const position = this.handles.findIndex((handle) => handle.agent.session.id === sessionId)
    if (position < 0) return undefined
    return new Acting(this, position, this.handles[position].agent, listener, call, facts)
  }

  position(id) {
    const position = present(id) ? this.specs.findIndex((spec) => spec.id === id) : 0
    return Math.max(0, position)
  }

  /** The live agent `id` names (default: the first). */
  agentFor(id) {
    return this.handles[this.position(id)].agent
  }

  /** The first agent. */
  get agent() {
    return this.agentFor(undefined)
  }

  /** Load the loop's plugins and create the agent. Throws what upstream
   * throws (reported as a run failure). */
  async setup(providerUrl) {
    const { root, world } = this
    await loadPlugin(root, this.fibers, SessionStore)
    await loadPlugin(root, this.fibers, AgentRegistry)
    await loadPlugin(root, this.fibers, LlmRuntime)
    await loadPlugin(root, this.fibers, ToolRuntime, {})
    if (Array.isArray(world.adapter.attachments)) {
      const attachments = new ScriptedAttachments(world.adapter.attachments)
      await loadPlugin(root, this.fibers, { name: 'dshc-scripted-attachments', apply: (ctx) => ctx.provide('attachments', attachments) })
    }
    if (world.adapter.registered) {
      if (!present(providerUrl)) throw new AdapterFault('a loop case with a registered adapter needs `provider_url`')
      await loadPlugin(root, this.fibers, deepseek, deepseekConfig(world.adapter, providerUrl))
    }
    // A second registered route of one name is refused as a duplicate.
    for (const route of this.routes) if (route.spec.registered !== false) this.registerRoute(route)
    await loadPlugin(root, this.fibers, AgentLoop, { agents: [] })
    for (const name of contextPluginOrder(world.plugins)) {
      this.contextPlugins.set(name, await this.loadContextPlugin(name, world.plugins[name]))
    }
    root.on('agent/error', ({ agent, turn, step, error }) => {
      this.live.push({ type: 'agent/error', agent: agent?.id, data: { turn, step, error: messageOf(error) } })
    })
    root.on('agent/status', ({ agent, status }) => {
      this.live.push({ type: 'agent/status', agent: agent?.id, data: { status } })
    })
    // Contained listener failures are `ctx.logger.warn` calls.
    root.logger.exporter({
      levels: { default: 3 },
      export: (message) => {
        if (message.type === 'warn') this.live.push({ type: 'logger/warn', data: { message: message.args.map(String).join(' ') } })
      },
    })
    this.registerScriptedTools()
    for (const spec of this.specs) this.handles.push(await this.createAgent(spec))
  }

  /** Load one context plugin over the seam it reads its input through,
   * scripted from the case (`plugin` commands change it later). */
  async loadContextPlugin(name, spec) {
    const { root } = this
    switch (name) {
      case 'time_context': {
        const config = {}
        if (present(spec.time_zone)) config.timeZone = spec.time_zone
        if (present(spec.refresh_interval_ms)) config.refreshIntervalMs = fromJs(spec.refresh_interval_ms)
        return loadPlugin(root, this.fibers, timeContext, config)
      }
      case 'tmux_context': {
        this.tmuxQuery = spec.query ?? { exit: 1 }
        if (spec.shell !== false) {
          const shell = new ScriptedShell(() => this.tmuxQuery)
          await loadPlugin(root, this.fibers, { name: 'dshc-scripted-shell', apply: (ctx) => ctx.provide('shell', shell) })
        }
        const config = {}
        if (present(spec.refresh_interval_ms)) config.refreshIntervalMs = fromJs(spec.refresh_interval_ms)
        return loadPlugin(root, this.fibers, tmuxContext, config)
      }
      case 'agent_instructions': {
        this.files = new ScriptedFileSystem(spec)
        if (spec.fs !== false) {
          const files = this.files
          await loadPlugin(root, this.fibers, { name: 'dshc-scripted-fs', apply: (ctx) => ctx.provide('fs', files) })
        }
        const config = { maxBytes: spec.max_bytes, dshHome: spec.dsh_home ?? SIMULATED_DSH_HOME }
        if (present(spec.max_source_bytes)) config.maxSourceBytes = spec.max_source_bytes
        if (present(spec.project_root_markers)) config.projectRootMarkers = spec.project_root_markers
        if (present(spec.instruction_file_candidates)) config.instructionFileCandidates = spec.instruction_file_candidates
        if (present(spec.local_instruction_file_candidates)) config.localInstructionFileCandidates = spec.local_instruction_file_candidates
        return loadPlugin(root, this.fibers, agentInstructions, config)
      }
      case 'session_reference': {
        this.referencedSessions = { ...(spec.sessions ?? {}) }
        const query = new ScriptedSessionQuery(() => this.referencedSessions)
        await loadPlugin(root, this.fibers, { name: 'dshc-scripted-session-query', apply: (ctx) => ctx.provide('sessionQuery', query) })
        const config = {}
        if (present(spec.max_references)) config.maxReferences = fromJs(spec.max_references)
        if (present(spec.max_reference_bytes)) config.maxReferenceBytes = fromJs(spec.max_reference_bytes)
        return loadPlugin(root, this.fibers, SessionReferenceResolver, config)
      }
      default:
        throw this.unsupported(name)
    }
  }

  /** `llm.registerAdapter([provider], route)` for one of the world's
   * routes, whose script goes on where it stopped. */
  registerRoute(route) {
    const provider = route.spec.provider
    this.routeHandles.set(provider, this.root.llm.registerAdapter([provider], route))
  }

  /** The world's `index`-th route named `provider`. */
  routeNamed(provider, index = 0) {
    return this.routes.filter((route) => route.spec.provider === provider)[index]
  }

  /** A fresh agent (and session) under the spec's id, from `seed` if given. */
  createAgent(spec, seed) {
    const defined = (entries) =>
      Object.fromEntries(entries.map(([key, value]) => [key, fromJs(value)]).filter(([, value]) => value !== undefined))
    const agentOptions = defined([
      ['provider', spec.provider],
      ['model', spec.model],
      ['maxTokens', spec.max_tokens],
    ])
    const meta = defined([
      ['cwd', spec.cwd],
      ['parentSession', spec.parent_session],
      ['seedLength', spec.seed_length],
      ['origin', spec.origin],
      ['delegationDepth', spec.delegation_depth],
      ['agentPreset', spec.agent_preset],
    ])
    const seeded = seed ?? (present(spec.seed) ? spec.seed.map(fromJs) : undefined)
    return this.root.agentLoop.createAgent(this.root, {
      sessionId: spec.id,
      agentOptions,
      meta,
      ...(seeded === undefined ? {} : { seed: seeded }),
    })
  }

  /**
   * Scripted tool results run through upstream's ToolRuntime: one registered
   * tool per scripted name, answering the name's results in order (the last
   * repeats), after its `delay_ms` (real time, ignoring the signal, as the
   * reference's scripted tool does). The reference's tool runner is not part
   * of the prompt, so these schemas are removed from every assembly by an
   * outermost global listener, registered before any case listener.
   */
  registerScriptedTools() {
    const results = this.world.tool_results ?? []
    const names = [...new Set(results.map((result) => result.name))]
    if (names.length === 0) return
    for (const name of names) {
      const scripted = results.filter((result) => result.name === name)
      let calls = 0
      // The result being rendered: calls of one tool run one at a time.
      let returning
      this.root.tools.register({
        name,
        description: SCRIPTED_TOOL_DESCRIPTION,
        parameters: { type: 'object', properties: {} },
        output: {
          schema: { type: 'string' },
          render: (_args, value) => (present(returning?.content) ? returning.content : [{ type: 'text', text: value }]),
        },
        execute: async (args, exec) => {
          const spec = scripted[Math.min(calls, scripted.length - 1)]
          calls += 1
          const call = calls
          if (spec.delay_ms > 0) await sleep(spec.delay_ms)
          await this.toolOps(spec, exec, args, call)
          for (const text of spec.additional_contexts ?? []) {
            exec.deferContext(userPrompt(text, { kind: 'tool', callId: exec.callId }))
          }
          if (spec.concludes_turn === true) exec.concludeTurn()
          returning = spec
          return spec.text ?? ''
        },
      })
    }
    const hidden = new Set(names)
    this.root.on(
      'system-prompt/assemble',
      async function hideScriptedTools(_assembly, _context, next) {
        const result = await next()
        for (let index = result.tools.length - 1; index >= 0; index -= 1) {
          const tool = result.tools[index]
          if (hidden.has(tool?.name) && tool.description === SCRIPTED_TOOL_DESCRIPTION) result.tools.splice(index, 1)
        }
        return result
      },
      { global: true },
    )
  }

  /** A scripted tool body's ops (docs/adapter-protocol.md, "What to build"). */
  async toolOps(spec, exec, args, call) {
    const position = this.handles.findIndex((handle) => handle.agent === exec.agent)
    const facts = () => ({ call_id: exec.callId, arguments: copyJson(args), aborted: exec.signal.aborted })
    const acting = new Acting(this, Math.max(0, position), exec.agent, spec.name, call, facts)
    for (const op of spec.ops ?? []) {
      if (op === 'wait_for_abort') {
        await new Promise((/** @type {(value?: undefined) => void} */ resolve) => {
          if (exec.signal.aborted) resolve()
          else exec.signal.addEventListener('abort', resolve, { once: true })
        })
      } else if (present(op?.register)) {
        this.register(op.register)
      } else if (present(op?.dispose)) {
        await this.dispose(op.dispose)
      } else if (isActOp(op)) {
        await acting.run([op])
      } else {
        throw this.unsupported(op)
      }
    }
  }

  // --- commands -----------------------------------------------------------

  execute(command) {
    switch (command.do) {
      case 'followup':
      case 'steer':
      case 'inject':
        this.agentFor(command.agent)[command.do](
          createUserMessage({
            content: present(command.content) ? copyJson(command.content) : [{ type: 'text', text: command.text }],
            source: present(command.source) ? copyJson(command.source) : { kind: 'user' },
          }),
        )
        return undefined
      case 'cancel':
        this.agentFor(command.agent).cancel(present(command.reason) ? copyJson(command.reason) : { kind: 'user' }, {
          keepInbox: command.keep_inbox === true,
        })
        return undefined
      case 'wait':
        // Exactly `ms`: a `wait` is the harness's own pause, not a listener's
        // `setTimeout`, so 0 is no time at all (Node would clamp it to 1 ms),
        // and no pause either: like back-to-back commands, the next one runs
        // in this turn of the event loop, before the agent's pending work
        // (as in the reference, whose zero sleep is ready when first polled).
        if (command.ms === 0) return undefined
        return new Promise((resolve) => setTimeout(resolve, command.ms))
      case 'plugin':
        return this.pluginAction(command)
      case 'clock_jump':
        // Only reachable on the harness's clock (real time skips the case).
        if (this.time === undefined) throw this.faulted(new AdapterFault("clock_jump needs the harness's clock"))
        this.time.jump(command.ms)
        return undefined
      case 'wait_idle': {
        const idle = present(command.agent) ? this.agentFor(command.agent).whenIdle() : this.allIdle()
        // On the harness's clock, idle also means quiet: whatever the agent
        // left running at this instant (a projection queued at the last
        // `step/end`) finishes before the next command, as in the reference.
        const time = this.time
        return time === undefined ? idle : idle.then(() => time.quiet())
      }
      case 'compact':
        this.compact(command)
        return undefined
      case 'resume':
        return this.resume(command)
      case 'dispose_agent':
        return this.handles[this.position(command.agent)].dispose()
      case 'on_pre_step':
      case 'on_request':
      case 'on_request_error':
      case 'on_turn_stopping':
      case 'on_status':
      case 'on_session_event':
      case 'on_session_append':
      case 'on_llm_stream':
        this.loopListener(command)
        return undefined
      case 'plugin':
        throw this.faulted(new AdapterFault('plugin actions are not supported (the case should have been skipped)'))
      case 'register_route':
        this.registerRoute(this.routeNamed(command.provider, command.route ?? 0))
        return undefined
      case 'append': {
        const opts = {}
        if (present(command.surface_op)) opts.surfaceOp = fromJs(command.surface_op)
        if (present(command.source_event_seqs)) opts.sourceEventSeqs = fromJs(command.source_event_seqs)
        // `append` returns the logged event, the command's value.
        return new Returned(copyJson(this.agentFor(command.agent).session.append(command.type, fromJs(command.data), opts)))
      }
      case 'fire_pre_step': {
        const agent = this.agentFor(command.agent)
        const messages = copyJson(command.messages ?? [])
        const payload = { messages, turn: command.turn, step: command.step, signal: new AbortController().signal }
        return agentEvents(this.root, agent)
          .waterfall('agent/pre-step', payload, () => Promise.resolve({ kind: 'enter', messages }))
          .then((decision) => JSON.parse(JSON.stringify(decision)))
      }
      case 'read_session': {
        const session = this.agentFor(command.agent).session
        const header = session.requestHeader()
        const context = session.requestContext()
        return new Returned(
          JSON.parse(
            JSON.stringify({
              ...(header === undefined ? {} : { request_header: header }),
              ...(context === undefined ? {} : { request_context: context }),
              surface: [...session.surface.nodes],
              messages: session.deriveMessages(),
            }),
          ),
        )
      }
      case 'settle_model': {
        const resolution = present(command.returns) ? { returns: command.returns } : { rejects: command.rejects }
        this.routeNamed(command.provider, command.route ?? 0).settle(command.model, resolution)
        return undefined
      }
      case 'unregister_route': {
        const handle = this.routeHandles.get(command.provider)
        this.routeHandles.delete(command.provider)
        handle?.()
        return undefined
      }
      default:
        return super.execute(command)
    }
  }

  /** A `plugin` command: change a context plugin's simulated input. */
  pluginAction(command) {
    if (present(command.tmux)) {
      this.tmuxQuery = command.tmux
      return undefined
    }
    if (present(command.write_file)) {
      this.scriptedFiles(command).write(command.write_file.path, command.write_file.content)
      return undefined
    }
    if (present(command.remove_file)) {
      this.scriptedFiles(command).remove(command.remove_file)
      return undefined
    }
    if (present(command.set_session)) {
      if (this.referencedSessions === undefined) throw this.unsupported(command)
      this.referencedSessions[command.set_session.id] = command.set_session.session
      return undefined
    }
    if (present(command.dispose)) {
      // The plugin's own fiber: its listeners go with it; the seams it read
      // through (the scripted shell, files, session query) stay loaded.
      const fiber = this.contextPlugins.get(command.dispose)
      if (fiber === undefined) throw this.unsupported(command)
      this.contextPlugins.delete(command.dispose)
      return fiber.dispose()
    }
    throw this.unsupported(command)
  }

  /** The agent-instructions plugin's files, which a `plugin` command edits;
   * a case that edits files without that plugin is not one this adapter runs. */
  scriptedFiles(command) {
    if (this.files === undefined) throw this.unsupported(command)
    return this.files
  }

  /** A compaction summary replacing a surface range (default: all of it). */
  compact(command) {
    const session = this.agentFor(command.agent).session
    const nodes = [...session.surface.nodes]
    const start = present(command.start) ? command.start : nodes[0]
    if (start === undefined) throw new Error('compact: the surface is empty')
    const end = present(command.end) ? command.end : (nodes.at(-1) ?? start)
    const from = Math.max(0, nodes.indexOf(start))
    const last = nodes.indexOf(end)
    const shadowed = nodes.slice(from, last < 0 ? nodes.length : last + 1)
    session.append('user/message', userPrompt(command.text, { kind: 'compaction' }), {
      surfaceOp: { op: 'replace', start, end },
      sourceEventSeqs: shadowed,
    })
  }

  /** A new agent over a session rebuilt from this log, as a new process
   * would build it: wait for idle, dispose the old agent (its scope takes
   * its scoped registrations and listeners along), seed the new one with
   * the log as JSON. Global registrations stay. */
  async resume(command) {
    const position = this.position(command.agent)
    const spec = { ...this.specs[position] }
    for (const key of ['provider', 'model', 'max_tokens']) {
      if (present(command[key])) spec[key] = command[key]
    }
    this.specs[position] = spec
    const agent = this.handles[position].agent
    await agent.whenIdle()
    const seed = JSON.parse(JSON.stringify(agent.session.events))
    await this.handles[position].dispose()
    this.handles[position] = await this.createAgent(spec, seed)
  }

  /** Wait until every agent is idle. */
  async allIdle() {
    for (const handle of this.handles) await handle.agent.whenIdle()
  }

  // --- scripted loop listeners --------------------------------------------

  loopListener(command) {
    const position = this.position(command.agent)
    const agent = this.agentFor(command.agent)
    const ops = Array.isArray(command.ops) ? command.ops : []
    let calls = 0
    /** An `Acting` for this invocation when `calls` selects it. */
    const invoked = (facts) => {
      calls += 1
      if (present(command.calls) && !command.calls.includes(calls)) return undefined
      return new Acting(this, position, agent, command.id, calls, facts)
    }
    const signalFacts = (payload) => ({ turn: payload.turn, step: payload.step, aborted: payload.signal?.aborted })
    let listener
    switch (command.do) {
      case 'on_pre_step':
        listener = (payload, next) => {
          const acting = invoked(() => ({ ...signalFacts(payload), messages: messageFacts(payload.messages) }))
          return acting ? this.preStep(ops, payload, next, acting) : next()
        }
        break
      case 'on_request':
        listener = (payload, next) => {
          const acting = invoked(() => signalFacts(payload))
          return acting ? this.request(ops, next, acting) : next()
        }
        break
      case 'on_request_error':
        listener = (payload, next) => {
          const acting = invoked(() => ({ ...signalFacts(payload), provider: payload.provider, failure: copyJson(payload.failure) }))
          return acting ? this.requestError(ops, next, acting) : next()
        }
        break
      case 'on_turn_stopping':
        listener = (payload) => invoked(() => signalFacts(payload))?.run(ops)
        break
      case 'on_status':
        // A contained event: synchronous up to the first sleep.
        listener = (payload) => invoked(() => ({ status: payload.status }))?.runContained(ops)
        break
      case 'on_session_event':
        listener = (session, event) => {
          if (session !== agent.session) return undefined
          if (present(command.event_types) && !command.event_types.includes(event.type)) return undefined
          return invoked(() => ({ event: { type: event.type, seq: event.seq } }))?.runContained(ops)
        }
        break
      case 'on_session_append':
        // Synchronous (the loader refuses a sleep): every op runs here,
        // and a throw propagates out of the append.
        listener = (_mode, name, args) => {
          if (name !== 'session/event' || args[0] !== agent.session) return
          const event = args[1]
          if (present(command.event_types) && !command.event_types.includes(event.type)) return
          const acting = invoked(() => ({ event: { type: event.type, seq: event.seq } }))
          if (acting !== undefined) for (const op of ops) acting.act(op)
        }
        break
      case 'on_llm_stream':
        // dsh-llm's waterfall is synchronous: the ops run at the call and
        // the listener returns the last stream `next` or `serve` gave.
        // The runtime's middleware acts on the agent making the call.
        listener = (options, next) => {
          calls += 1
          if (present(command.calls) && !command.calls.includes(calls)) return next()
          const acting = this.actingOnCaller(options.sessionId, command.id, calls, () => ({ provider: options.provider }))
          if (acting === undefined) return next()
          let stream
          let decided = false
          for (const op of ops) {
            if (op === 'next') [stream, decided] = [next(), true]
            else if (op !== null && typeof op === 'object' && 'serve' in op) {
              // Its acts land on the calling agent, as a route's do.
              stream = streamParts(op.serve, (act) => acting.act(act))
              decided = true
            }
            else acting.act(op)
          }
          return decided ? stream : next()
        }
        break
      default:
        throw this.unsupported(command.do)
    }
    // Session events and the LLM runtime's calls are not an agent's: their
    // listeners go on the root, which sees every one.
    const onRoot = ['on_session_event', 'on_session_append', 'on_llm_stream'].includes(command.do)
    const context = onRoot ? this.root : agent.ctx
    const disposer = context.on(LOOP_EVENTS[command.do], listener, { prepend: command.prepend === true })
    this.disposers.set(command.id, disposer)
  }

  unsupported(op) {
    return this.faulted(new AdapterFault(`unsupported loop listener op ${JSON.stringify(op)}`))
  }

  /** `agent/pre-step`: `current` starts as `enter` with the claimed messages. */
  async preStep(ops, payload, next, acting) {
    /** @type {import('@deepseek-ai/dsh-agent').PreStepDecision} */
    let current = { kind: 'enter', messages: payload.messages }
    const messages = (edit) => {
      if (current.kind === 'enter') current = { ...current, messages: edit([...current.messages]) }
    }
    for (const op of ops) {
      switch (op) {
        case 'next':
          current = await next()
          continue
        case 'reject':
          current = { kind: 'reject' }
          continue
        case 'enter_empty':
          current = { kind: 'enter', messages: [] }
          continue
        case 'drop_runtime_context':
          messages((list) => list.filter((message) => !isOwned(message)))
          continue
        case 'reverse':
          messages((list) => list.reverse())
          continue
        case 'wait_for_abort':
          await abortOf(payload.signal)
          continue
      }
      if (isActOp(op)) {
        await acting.run([op])
        continue
      }
      const [kind] = Object.keys(op ?? {})
      const arg = op?.[kind]
      switch (kind) {
        case 'rewrite_runtime_context':
          messages((list) => list.map((message) => (isOwned(message) ? { ...message, content: [{ type: 'text', text: arg }] } : message)))
          break
        case 'append_message':
          messages((list) => [...list, messageOfArg(arg)])
          break
        case 'prepend_message':
          messages((list) => [messageOfArg(arg), ...list])
          break
        default:
          throw this.unsupported(op)
      }
    }
    return current
  }

  /** `agent/request`: `current` starts as `{}`; `next` gives the seed config. */
  async request(ops, next, acting) {
    let current = {}
    for (const op of ops) {
      if (op === 'next') {
        current = await next()
        continue
      }
      if (isActOp(op)) {
        await acting.run([op])
        continue
      }
      const [kind] = Object.keys(op ?? {})
      const arg = op?.[kind]
      switch (kind) {
        case 'set':
          current = { ...current, ...copyJson(arg) }
          break
        case 'remove':
          current = { ...current }
          delete current[arg]
          break
        default:
          throw this.unsupported(op)
      }
    }
    return current
  }

  /** `agent/request-error`: `current` starts as `undefined` (give up). */
  async requestError(ops, next, acting) {
    let current
    for (const op of ops) {
      if (op === 'next') current = await next()
      else if (op === 'retry') current = { kind: 'retry' }
      else if (op === 'give_up') current = undefined
      else if (isActOp(op)) await acting.run([op])
      else throw this.unsupported(op)
    }
    return current
  }

  /** What the run produced, once every agent is idle: copies, since the
   * teardown that follows still appends (an agent's disposal discards its
   * inbox, which observers and status listeners record). */
  async finish() {
    await this.allIdle()
    if (this.fault !== undefined) throw this.fault
    const runs = this.handles.map(({ agent }, position) => ({
      id: this.specs[position].id,
      log: agent.session.events,
      status: agent.status,
      pending: [agent.inbox.nextTurn.length, agent.inbox.nextStep.length],
    }))
    const [main, ...agents] = runs
    return {
      log: main.log,
      requests: [],
      llm_requests: this.llmCalls,
      status: main.status,
      pending: main.pending,
      live_events: [...this.live],
      ...(this.recorded.length > 0 ? { journal: [...this.recorded] } : {}),
      ...(agents.length > 0 ? { agents } : {}),
    }
  }

  /** Tear every agent down (a no-op for one a command already disposed),
   * then unload the case's plugins. */
  async teardown() {
    for (const handle of this.handles) await handle.dispose()
    await disposeCase(this)
  }
}

/** Run one loop case: `{result}` or `{skipped}` (the reply body). With
 * `virtualSeq` (the `run` request's seq of a `virtual_time` case) it runs
 * on the harness's clock and provider bridge (virtual_time.mjs). */
export async function runLoopCase(caseData, providerUrl, virtualSeq) {
  if (caseData.world === null || typeof caseData.world !== 'object') {
    throw new AdapterFault('a loop case needs its `world`')
  }
  const virtual = virtualSeq !== undefined
  const reason = loopSkipReason(caseData, virtual)
  if (reason !== undefined) return { skipped: { reason } }
  if (!virtual) return runLoopWorld(caseData, providerUrl)
  const time = new VirtualTime(caseData.world.simulation, virtualSeq)
  const saved = { TZ: process.env.TZ, HOME: process.env.HOME }
  // The simulated host: its zone (time-context's fallback) and its home
  // (how agent-instructions displays `$DSH_HOME`), as the reference's.
  process.env.TZ = caseData.world.plugins?.time_context?.process_time_zone ?? 'UTC'
  process.env.HOME = SIMULATED_HOME
  time.install()
  try {
    return await time.drive(runLoopWorld(caseData, BRIDGE_BASE_URL, time))
  } finally {
    time.uninstall()
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key]
      else process.env[key] = value
    }
  }
}

async function runLoopWorld(caseData, providerUrl, time) {
  const booted = await bootCase(caseData.config)
  if (booted.configError !== undefined) {
    return { result: { config_error: booted.configError, observations: [] } }
  }
  const { root, host, counter } = booted
  const world = new LoopWorld(root, host, counter, caseData.world, booted.fibers, time)
  try {
    try {
      await world.setup(providerUrl)
    } catch (error) {
      if (error instanceof AdapterFault) throw error
      const { name, message } = observed(error)
      // No agent ran: nothing has a status (docs/adapter-protocol.md).
      const run = { log: [], requests: [], status: '', pending: [0, 0], live_events: [], failure: `setup failed: ${name}: ${message}` }
      return { result: { observations: [], run } }
    }
    const observations = await world.runAll(caseData.commands)
    const run = await world.finish()
    return { result: { observations, run } }
  } finally {
    // So nothing of this case runs on into the next one.
    await world.teardown()
  }
}
