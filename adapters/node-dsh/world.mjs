// @ts-check
// Shared by both levels of the node-dsh adapter: output hygiene, observation
// of thrown values and assemblies, and `CaseWorld`, which performs a case's
// registration and assembly commands (scopes, scripted providers, scripted
// `system-prompt/assemble` listeners, disposal) through the real upstream
// `SystemPrompt` registry. See README.md and docs/adapter-protocol.md.
//
// Loaded by adapter.mjs after its runtime preparation (the Node 20
// `Promise.withResolvers` polyfill), so upstream modules may be imported here.

import { Context } from '@deepseek-ai/cordis'
import { createScope, bindScopeParent } from '@deepseek-ai/dsh-scope'
import { canonicalHeader, foldRequestHeader, headerEquals } from '@deepseek-ai/dsh-session'
import {
  SystemPrompt,
  renderPrompt,
  renderContextSections,
  renderContextSnapshot,
} from '@deepseek-ai/dsh-system-prompt'

import { safeString, stackOf } from './protocol.mjs'

// ---------------------------------------------------------------------------
// Output hygiene.

const nativeToWellFormed = String.prototype.toWellFormed

/** `text` with every lone UTF-16 surrogate replaced by U+FFFD.
 * @type {(text: string) => string} */
const toWellFormed =
  nativeToWellFormed !== undefined
    ? (text) => nativeToWellFormed.call(text)
    : (text) =>
        text.replace(
          /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g,
          '\uFFFD',
        )

function setOwn(target, key, value) {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  })
}

/**
 * Copy a value for output: every string (keys included) well-formed, objects
 * keep their own enumerable key order. `undefined` values inside objects are
 * dropped and inside arrays become null, as JSON.stringify would.
 */
export function clean(value) {
  if (typeof value === 'string') return toWellFormed(value)
  if (Array.isArray(value)) return value.map((item) => (item === undefined ? null : clean(item)))
  if (value !== null && typeof value === 'object') {
    const out = {}
    for (const key of Object.keys(value)) {
      const item = value[key]
      if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue
      setOwn(out, toWellFormed(key), clean(item))
    }
    return out
  }
  return value
}

// ---------------------------------------------------------------------------
// Small helpers.

/** An error in this adapter (or in the case it was sent), not in upstream. */
export class AdapterFault extends Error {
  name = 'AdapterFault'
}

/** `{name, message}` of a thrown value, as the protocol observes it. */
export function observed(error) {
  if (error !== null && (typeof error === 'object' || typeof error === 'function')) {
    let name = error.name
    if (name === undefined || name === null) name = error.constructor?.name ?? 'Error'
    let message = error.message
    if (message === undefined || message === null) message = safeString(error)
    const seen = { name: safeString(name), message: safeString(message) }
    let code
    try {
      code = error.code
    } catch {
      code = undefined
    }
    if (typeof code === 'string') seen.code = code
    return seen
  }
  return { name: typeof error, message: safeString(error) }
}

export { safeString, stackOf }

export function present(value) {
  return value !== undefined && value !== null
}

/** `order` arrives as a JSON number or one of three strings. */
function toOrder(order) {
  if (typeof order === 'number') return order
  switch (order) {
    case 'NaN':
      return Number.NaN
    case 'Infinity':
      return Number.POSITIVE_INFINITY
    case '-Infinity':
      return Number.NEGATIVE_INFINITY
    default:
      throw new AdapterFault(`unsupported order value ${JSON.stringify(order)}`)
  }
}

/** The delay Node's `setTimeout` waits for `ms` (`lib/internal/timers.js`):
 * below 1 or above 2^31 - 1 it is 1, so a zero-delay timer is never due at
 * the instant it is set. Stated here because the fake clock schedules a
 * zero delay outside a tick at the current instant; a scenario's
 * `sleep_ms` is a timer of dsh's runtime, Node's. */
export function timerDelayMs(ms) {
  return ms >= 1 && ms <= 2147483647 ? ms : 1
}

/** A detached copy of JSON data from the case. */
/** Decode a JavaScript value from its JSON encoding (`{"$js": "undefined"}`,
 * `"null"`, `"NaN"`, `"Infinity"`, `"-Infinity"`, `"-0"`; docs/adapter-protocol.md). */
export function fromJs(value) {
  if (Array.isArray(value)) return value.map(fromJs)
  if (value === null || typeof value !== 'object') return value
  const keys = Object.keys(value)
  if (keys.length === 1 && keys[0] === '$js') {
    switch (value.$js) {
      case 'undefined':
        return undefined
      case 'null':
        return null
      case 'NaN':
        return Number.NaN
      case 'Infinity':
        return Number.POSITIVE_INFINITY
      case '-Infinity':
        return Number.NEGATIVE_INFINITY
      case '-0':
        return -0
    }
  }
  return Object.fromEntries(keys.map((key) => [key, fromJs(value[key])]))
}

export function copyJson(value) {
  return value === undefined ? undefined : structuredClone(value)
}

const CONFIG_KEYS = {
  include_harness_identity: 'includeHarnessIdentity',
  include_runtime_context: 'includeRuntimeContext',
  persona: 'persona',
  tool_order: 'toolOrder',
}

/** Case config (snake_case) to the plugin config (upstream camelCase). */
export function upstreamConfig(spec) {
  const config = {}
  for (const [key, value] of Object.entries(spec ?? {})) {
    const upstream = CONFIG_KEYS[key]
    if (upstream === undefined) throw new AdapterFault(`unknown config key ${JSON.stringify(key)}`)
    if (present(value)) config[upstream] = copyJson(value)
  }
  return config
}

// ---------------------------------------------------------------------------
// Observation of results.

const ASSEMBLY_FIELDS = new Set(['sections', 'contexts', 'tools', 'variables'])

function entryData(entry) {
  const data = { name: entry.name }
  if (entry.text !== undefined) data.text = entry.text
  return data
}

function toolData(tool) {
  const data = { name: tool.name }
  if (tool.description !== undefined) data.description = tool.description
  if (tool.parameters !== undefined) data.parameters = tool.parameters
  return data
}

function variablesData(variables) {
  const data = {}
  for (const key of Object.keys(variables)) {
    const value = variables[key]
    setOwn(data, key, value === undefined ? { undefined: true } : value)
  }
  return data
}

function assemblyData(assembly) {
  const data = {
    sections: assembly.sections.map(entryData),
    contexts: assembly.contexts.map(entryData),
    tools: assembly.tools.map(toolData),
    variables: variablesData(assembly.variables),
  }
  const extra = {}
  let hasExtra = false
  for (const key of Object.keys(assembly)) {
    if (ASSEMBLY_FIELDS.has(key)) continue
    setOwn(extra, key, assembly[key])
    hasExtra = true
  }
  if (hasExtra) data.extra = extra
  return data
}

/** One field of the assembly a listener holds, as its `record` op writes it:
 * in the observation's shape, copied, so later edits in place do not reach it. */
function recordedField(assembly, field) {
  switch (field) {
    case 'sections':
      return assembly.sections.map(entryData)
    case 'contexts':
      return assembly.contexts.map(entryData)
    case 'tools':
      return assembly.tools.map((tool) => copyJson(toolData(tool)))
    case 'tool_names':
      return assembly.tools.map((tool) => tool.name)
    case 'variables':
      return variablesData(assembly.variables)
    case 'extra':
      return copyJson(assemblyData(assembly).extra ?? {})
    default:
      return undefined
  }
}

/** Render a successful assembly the three ways the protocol observes. */
function observeRenders(assembly, observation) {
  try {
    observation.prompt = { text: renderPrompt(assembly) }
  } catch (error) {
    observation.prompt = { error: observed(error) }
  }
  // The snapshot through upstream's own one-call renderer, and its sections
  // apart: each public function is what a caller of the package would use.
  try {
    observation.snapshot_sections = { sections: renderContextSections(assembly).map(entryData) }
  } catch (error) {
    observation.snapshot_sections = { error: observed(error) }
  }
  try {
    observation.snapshot = { text: renderContextSnapshot(assembly) }
  } catch (error) {
    observation.snapshot = { error: observed(error) }
  }
}

// ---------------------------------------------------------------------------
// One case.

/** A cordis plugin that only hands out its context: it injects
 * `systemPrompt`, so scopes minted under it resolve the service. */
export function hostPlugin(onContext) {
  return {
    name: 'dshc-node-dsh-host',
    inject: ['systemPrompt'],
    apply(ctx) {
      onContext(ctx)
    },
  }
}

/**
 * Boot one case: a fresh root context counting `system-prompt/change`, the
 * real `SystemPrompt` loaded with the case config, and the host context
 * scopes are minted under. A config the plugin rejects is an observation,
 * returned as `{configError}`.
 */
export async function bootCase(config) {
  const root = new Context()
  const counter = { changes: 0 }
  root.on('system-prompt/change', () => {
    counter.changes += 1
  })
  const fibers = []
  try {
    await loadPlugin(root, fibers, SystemPrompt, upstreamConfig(config))
  } catch (error) {
    if (error instanceof AdapterFault) throw error
    await disposeCase({ fibers })
    return { configError: observed(error) }
  }
  let host
  await loadPlugin(root, fibers, hostPlugin((ctx) => {
    host = ctx
  }))
  if (host === undefined) throw new AdapterFault('the host plugin did not start')
  return { root, host, counter, fibers }
}

/** `root.plugin(plugin, config)`, remembering its fiber in `fibers` so the
 * case can unload it ({@link disposeCase}). */
export async function loadPlugin(root, fibers, plugin, config) {
  const fiber = root.plugin(plugin, config)
  fibers.push(fiber)
  await fiber
  return fiber
}

/** Unload every plugin a case loaded, newest first. Nothing of a case may
 * outlive it: upstream services hold process-wide resources until their
 * fiber is disposed (dsh-agent's `AgentRegistry` keeps two
 * `AsyncLocalStorage`s enabled, and every enabled one taxes each promise the
 * process creates afterwards). */
export async function disposeCase({ fibers }) {
  for (const fiber of fibers.splice(0).reverse()) {
    try {
      await fiber.dispose()
    } catch (error) {
      console.error('[node-dsh] unloading a plugin failed:', stackOf(error))
    }
  }
}

/** Resolve never; reject with the reference's abort error once `signal`
 * aborts (`aborted: <reason as JSON>`). */
export function abortOf(signal) {
  return new Promise((_, reject) => {
    const fail = () => reject(new Error(`aborted: ${JSON.stringify(signal.reason)}`))
    if (signal.aborted) fail()
    else signal.addEventListener('abort', fail, { once: true })
  })
}

/** What a command that reads a value returns from `execute` (synchronously). */
export class Returned {
  constructor(value) {
    this.value = value
  }
}

export class CaseWorld {
  constructor(root, host, counter) {
    this.root = root
    this.host = host
    this.counter = counter
    this.keys = new Map()
    this.scopes = new Map()
    this.disposers = new Map()
    this.journal = []
    /** What listeners' `record` ops wrote, `{listener, call, <field>...}`. */
    this.records = []
    this.fault = undefined
    /** Scope names bound to contexts made elsewhere (the loop level maps the
     * agent's scope name to the live agent): name -> {context(), key()}. */
    this.boundScopes = new Map()
  }

  /** Record an adapter fault (reported as `errored`) and return it to throw. */
  faulted(error) {
    this.fault ??= error
    return error
  }

  /** The opaque key object of a scope name, created on first use. */
  keyOf(name) {
    const bound = this.boundScopes.get(name)
    if (bound !== undefined) return bound.key()
    let key = this.keys.get(name)
    if (key === undefined) {
      key = { scope: name }
      this.keys.set(name, key)
    }
    return key
  }

  /** The context registrations of `scope` go through: a dsh-scope scoped
   * context, minted on first use, or the root context when unscoped. */
  contextOf(scope) {
    if (!present(scope)) return this.ownerContext ?? this.root
    const bound = this.boundScopes.get(scope)
    if (bound !== undefined) return bound.context()
    let minted = this.scopes.get(scope)
    if (minted === undefined) {
      minted = createScope(this.host, this.keyOf(scope))
      this.scopes.set(scope, minted)
    }
    return minted.ctx
  }

  registryOf(scope) {
    return this.contextOf(scope).systemPrompt
  }

  /** `read_registry`: the service's global layer and each scoped layer,
   * in scope-name order (code points, as the reference orders them). The
   * layers are the service's own (dsh-system-prompt keeps them in
   * `layers`: `global` and the `scoped` map by scope key). */
  /** The scenario's name of a scope key (`undefined` for none). */
  scopeNameOf(key) {
    if (key === undefined) return undefined
    for (const [name, known] of this.keys) if (known === key) return name
    for (const [name, bound] of this.boundScopes) if (bound.key() === key) return name
    return String(key)
  }

  registryContents() {
    const { layers } = this.registryOf(undefined)
    const entries = (table) =>
      [...table.data.values()].map((entry) => ({
        name: entry.name,
        order: entry.order,
        ...(entry.complete === true ? { complete: true } : {}),
        ...(typeof entry.text === 'string' ? { text: entry.text } : {}),
      }))
    const layer = (held) => ({
      sections: entries(held.sections),
      contexts: entries(held.contexts),
      variables: [...held.variables.data.keys()],
      tool_providers: held.toolProviders.data.size,
      suppressors: held.runtimeContextSuppressors.data.size,
    })
    const byCodePoint = (a, b) => Buffer.compare(Buffer.from(a.scope), Buffer.from(b.scope))
    const scopes = [...layers.scoped]
      .map(([key, held]) => ({ scope: this.scopeNameOf(key), ...layer(held) }))
      .sort(byCodePoint)
    return { global: layer(layers.global), scopes }
  }

  // --- scripted providers -------------------------------------------------

  /** Build the call-time behaviour of a provider table. `make` turns one
   * returned value of the spec into the JavaScript value, once, here. */
  outcomeOf(spec, make) {
    if (present(spec.throws)) {
      const { throws: message, cause } = spec
      return () => {
        throw present(cause) ? new Error(message, { cause: new Error(cause) }) : new Error(message)
      }
    }
    if (spec.returns_undefined === true) return () => undefined
    if (present(spec.returns)) {
      const value = make(spec.returns)
      return () => value
    }
    if (Array.isArray(spec.sequence) && spec.sequence.length > 0) {
      // An item `{"$js": "undefined"}` returns `undefined`.
      const values = spec.sequence.map((item) => (fromJs(item) === undefined ? undefined : make(item)))
      return (call) => values[Math.min(call, values.length) - 1]
    }
    if (present(spec.context_field)) {
      const field = spec.context_field
      return (_call, context) => (typeof context?.[field] === 'string' ? context[field] : undefined)
    }
    if (present(spec.computes)) {
      // Each `{call}` and `{scope}`, left to right, in one pass.
      const template = spec.computes
      return (call, context) =>
        template.replace(/\{(call|scope)\}/g, (_token, name) =>
          name === 'call' ? String(call) : String(this.scopeNameOf(context?.scope)),
        )
    }
    throw this.faulted(new AdapterFault('a provider sets none of returns, sequence, context_field, computes, returns_undefined, throws'))
  }

  /** A journaled provider function over a provider table. */
  provider(kind, id, spec, make) {
    const outcome = this.outcomeOf(spec, make)
    const effects = Array.isArray(spec.effects) ? spec.effects : []
    let calls = 0
    return (context) => {
      calls += 1
      const call = calls
      this.journal.push(`${kind} ${id}`)
      for (const effect of effects) {
        if (present(effect.on_call) && effect.on_call !== call) continue
        if (present(effect.register)) this.register(effect.register)
        if (present(effect.dispose)) this.dispose(effect.dispose)
      }
      return outcome(call, context)
    }
  }

  /** Section/context text: a string stays static; a table is a provider. */
  textOf(kind, id, text) {
    if (typeof text === 'string') return text
    if (text !== null && typeof text === 'object') return this.provider(kind, id, text, (value) => value)
    throw this.faulted(new AdapterFault(`unsupported ${kind} text ${JSON.stringify(text)}`))
  }

  /** A schema object as a scripted tool provider returns it. */
  providedSchema(spec) {
    const schema = { name: spec.name }
    if (present(spec.description)) schema.description = spec.description
    if (present(spec.parameters)) schema.parameters = copyJson(spec.parameters)
    if (present(spec.extra)) {
      for (const [key, value] of Object.entries(spec.extra)) {
        if (key === 'name' || key === 'description' || key === 'parameters') continue
        setOwn(schema, key, copyJson(value))
      }
    }
    if (present(spec.unclonable_symbol)) {
      const symbol = Symbol(spec.unclonable_symbol)
      if (schema.parameters !== null && typeof schema.parameters === 'object') {
        schema.parameters.unclonable = symbol
      } else {
        schema.parameters = { unclonable: symbol }
      }
    }
    return schema
  }

  /** `{schemas, knownNames?}` as a scripted tool provider returns it. */
  toolsResult(spec) {
    const result = { schemas: (spec.schemas ?? []).map((schema) => this.providedSchema(schema)) }
    if (present(spec.known_names)) result.knownNames = [...spec.known_names]
    return result
  }

  // --- registrations ------------------------------------------------------

  /** Perform a registration step; remember its disposer under its id. */
  register(step) {
    const id = step.id ?? ''
    let disposer
    switch (step.do) {
      case 'section': {
        const section = {
          name: step.name,
          order: this.order(step.order),
          text: this.textOf('section', id, step.text),
        }
        if (present(step.complete)) section.complete = step.complete
        disposer = this.registryOf(step.scope).section(section)
        break
      }
      case 'context': {
        const context = {
          name: step.name,
          order: this.order(step.order),
          text: this.textOf('context', id, step.text),
        }
        disposer = this.registryOf(step.scope).context(context)
        break
      }
      case 'variable': {
        const spec = typeof step.value === 'string' ? { returns: step.value } : step.value
        if (spec === null || typeof spec !== 'object') {
          throw this.faulted(new AdapterFault(`unsupported variable value ${JSON.stringify(step.value)}`))
        }
        const provider = this.provider('variable', id, spec, (value) => value)
        disposer = this.registryOf(step.scope).variable(step.name, provider)
        break
      }
      case 'suppress':
        disposer = this.registryOf(step.scope).suppressRuntimeContext()
        break
      case 'tools': {
        const provider = this.provider('tools', id, step.provider ?? {}, (value) => this.toolsResult(value))
        disposer = this.registryOf(step.scope).tools(provider)
        break
      }
      case 'listen':
        disposer = this.listen(step)
        break
      default:
        throw this.faulted(new AdapterFault(`${JSON.stringify(step.do)} is not a registration`))
    }
    // Never let the disposer (a thenable cordis effect) be awaited or returned
    // from an async function: store it as is.
    this.disposers.set(id, disposer)
  }

  order(order) {
    try {
      return toOrder(order)
    } catch (error) {
      throw this.faulted(error)
    }
  }

  /** Call a remembered disposer; a no-op for an unknown id. Returns what the
   * disposer returned (cordis may return a promise for async teardown). */
  dispose(target) {
    const disposer = this.disposers.get(target)
    if (disposer === undefined) return undefined
    return disposer()
  }

  // --- scripted listeners -------------------------------------------------

  listen(step) {
    const id = step.id ?? ''
    const ops = Array.isArray(step.ops) ? step.ops : []
    const world = this
    let calls = 0
    const listener = async function scriptedListener(assembly, context, next) {
      calls += 1
      const call = calls
      world.journal.push(`listener ${id}`)
      let current = assembly
      for (const op of ops) {
        if (op === 'next') {
          current = await next()
          continue
        }
        if (op === 'wait_for_abort') {
          // Loop level: block until the assembly's signal aborts, then throw
          // the reference's abort error.
          const signal = context?.signal
          if (signal === undefined) throw new Error('wait_for_abort: this assembly has no signal')
          await abortOf(signal)
          continue
        }
        if (op !== null && typeof op === 'object' && 'sleep_ms' in op) {
          // Loop level: real time passes, the signal is ignored.
          await new Promise((resolve) => setTimeout(resolve, timerDelayMs(op.sleep_ms)))
          continue
        }
        if (op !== null && typeof op === 'object') {
          if ('throw' in op) throw new Error(op.throw)
          if ('record' in op) {
            world.record(id, call, op.record, current)
            continue
          }
          if ('replace' in op) {
            current = world.replacement(op.replace)
            continue
          }
          if ('register' in op) {
            world.register(op.register)
            continue
          }
          if ('dispose' in op) {
            const pending = world.dispose(op.dispose)
            if (isThenable(pending)) await pending
            continue
          }
        }
        world.edit(current, op)
      }
      return current
    }
    const options = { prepend: step.prepend === true, global: step.global === true }
    return this.contextOf(step.scope).on('system-prompt/assemble', listener, options)
  }

  /** A `record` op: `{listener, call}`, then each named field of `current`. */
  record(id, call, fields, current) {
    const entry = { listener: id, call }
    for (const field of fields) {
      const value = recordedField(current, field)
      if (value === undefined) throw this.faulted(new AdapterFault(`unsupported record field ${JSON.stringify(field)}`))
      entry[field] = value
    }
    this.records.push(entry)
  }

  /** A tool as a listener adds it: `{name, description, parameters}`. */
  listenerTool(spec) {
    return {
      name: spec.name,
      description: present(spec.description) ? spec.description : undefined,
      parameters: present(spec.parameters) ? copyJson(spec.parameters) : undefined,
    }
  }

  replacement(spec) {
    const entry = (data) => ({ name: data.name, text: present(data.text) ? data.text : undefined })
    const variables = {}
    for (const [name, value] of Object.entries(spec.variables ?? {})) {
      variables[name] = typeof value === 'string' ? value : undefined
    }
    return {
      sections: (spec.sections ?? []).map(entry),
      contexts: (spec.contexts ?? []).map(entry),
      tools: (spec.tools ?? []).map((tool) => this.listenerTool(tool)),
      variables,
    }
  }

  /** Apply one editing op to `current`, in place. */
  edit(current, op) {
    if (op === 'reverse_tools') {
      current.tools.reverse()
      return
    }
    if (op === null || typeof op !== 'object') {
      throw this.faulted(new AdapterFault(`unsupported listener op ${JSON.stringify(op)}`))
    }
    const [kind] = Object.keys(op)
    const arg = op[kind]
    switch (kind) {
      case 'add_section':
        insertAt(current.sections, arg.index, { name: arg.name, text: arg.text })
        return
      case 'remove_section':
        removeNamed(current.sections, arg)
        return
      case 'rename_section': {
        const section = current.sections.find((s) => s.name === arg.from)
        if (section !== undefined) section.name = arg.to
        return
      }
      case 'set_section_text': {
        const section = current.sections.find((s) => s.name === arg.name)
        if (section !== undefined) section.text = arg.text
        return
      }
      case 'reorder_sections': {
        const rank = (entry) => {
          const index = arg.indexOf(entry.name)
          return index < 0 ? arg.length : index
        }
        current.sections.sort((a, b) => rank(a) - rank(b))
        return
      }
      case 'add_context':
        insertAt(current.contexts, arg.index, { name: arg.name, text: arg.text })
        return
      case 'remove_context':
        removeNamed(current.contexts, arg)
        return
      case 'set_context_text': {
        const context = current.contexts.find((c) => c.name === arg.name)
        if (context !== undefined) context.text = arg.text
        return
      }
      case 'add_tool':
        current.tools.push(this.listenerTool(arg))
        return
      case 'remove_tool':
        removeNamed(current.tools, arg)
        return
      case 'set_tool_parameter': {
        const tool = current.tools.find((t) => t.name === arg.tool)
        if (tool !== undefined) setPath(tool.parameters, arg.path, copyJson(arg.value))
        return
      }
      case 'set_variable':
        current.variables[arg.name] = arg.value
        return
      case 'unset_variable':
        current.variables[arg] = undefined
        return
      case 'delete_variable':
        delete current.variables[arg]
        return
      case 'set_field':
        current[arg.name] = copyJson(arg.value)
        return
      default:
        throw this.faulted(new AdapterFault(`unsupported listener op ${JSON.stringify(kind)}`))
    }
  }

  // --- commands -----------------------------------------------------------

  /** Perform one command. Returns a promise when the command has to be
   * awaited (an `assemble`, an asynchronous teardown), `undefined` when it
   * finished synchronously. Subclasses add command kinds. */
  execute(command) {
    switch (command.do) {
      case 'bind':
        bindScopeParent(this.keyOf(command.scope), this.keyOf(command.parent))
        return undefined
      case 'dispose': {
        const pending = this.dispose(command.target)
        // Count the change event of an asynchronous teardown within this
        // command: wait for it before reading the counter.
        return isThenable(pending) ? Promise.resolve(pending).then(() => undefined) : undefined
      }
      case 'assemble': {
        const context = {
          ...copyJson(command.context ?? {}),
          ...(present(command.scope) ? { scope: this.keyOf(command.scope) } : {}),
        }
        return this.registryOf(undefined).assemble(context)
      }
      case 'canonical_header':
        return new Returned(JSON.parse(JSON.stringify(canonicalHeader(fromJs(command.header)))))
      case 'header_equals':
        return new Returned(headerEquals(fromJs(command.a), fromJs(command.b)))
      case 'fold_header': {
        // `undefined` (no header, no baseline) is no value.
        const folded = foldRequestHeader(fromJs(command.events), fromJs(command.baseline))
        return new Returned(folded === undefined ? undefined : JSON.parse(JSON.stringify(folded)))
      }
      case 'read_registry':
        return new Returned(this.registryContents())
      case 'dispose_scope': {
        // Its registrations and listeners go; a later use mints a new scope.
        const minted = this.scopes.get(command.scope)
        this.scopes.delete(command.scope)
        return minted === undefined ? undefined : Promise.resolve(minted.dispose()).then(() => undefined)
      }
      case 'owner': {
        // A plugin whose context makes the group's registrations; disposing
        // it tears all of them down.
        const fiber = this.root.plugin({
          name: `dshc-owner-${command.id}`,
          inject: ['systemPrompt'],
          apply: (ctx) => {
            this.ownerContext = ctx
            try {
              for (const registration of command.registrations) this.register(registration)
            } finally {
              this.ownerContext = undefined
            }
          },
        })
        this.disposers.set(command.id, () => fiber.dispose())
        // The plugin applies asynchronously: the command ends once it has.
        return (async () => {
          await fiber
        })()
      }
      case 'on_change': {
        let calls = 0
        const listener = () => {
          calls += 1
          this.journal.push(`change ${command.id}`)
          if ((command.throw_on ?? []).includes(calls)) throw new Error(command.throws)
        }
        this.disposers.set(command.id, this.root.on('system-prompt/change', listener))
        return undefined
      }
      default:
        this.register(command)
        return undefined
    }
  }

  /** Run one command and return its observation: directly when the command
   * finished synchronously, else a promise of it. A synchronous command never
   * yields to the event loop, so consecutive synchronous commands run in one
   * turn of it (what the loop level needs: a `followup` and a `steer` issued
   * back to back see no driver progress in between). */
  run(command) {
    // The journal is taken after each command (`observe`), so it holds every
    // evaluation since the previous command ended: at the loop level that
    // includes the agent's own assemblies in between, as in the reference.
    const changesBefore = this.counter.changes
    let pending
    try {
      pending = this.execute(command)
    } catch (thrown) {
      return this.observe(command, changesBefore, observed(thrown))
    }
    if (pending === undefined) return this.observe(command, changesBefore)
    if (pending instanceof Returned) return this.observe(command, changesBefore, undefined, pending.value)
    return pending.then(
      (value) => this.observe(command, changesBefore, undefined, value),
      (thrown) => this.observe(command, changesBefore, observed(thrown)),
    )
  }

  /** The observation of a finished command. `value` is what an `assemble`
   * resolved to. Observation is adapter code: a bug here (or a recorded
   * fault) surfaces as `errored`, not as an error of the implementation. */
  observe(command, changesBefore, error, value) {
    if (this.fault !== undefined) throw this.fault
    const result = {}
    if (error !== undefined) result.error = error
    result.changes = this.counter.changes - changesBefore
    if (this.journal.length > 0) result.journal = this.journal
    if (this.records.length > 0) result.records = this.records
    if (error === undefined && command.do === 'assemble') {
      result.assembly = assemblyData(value)
      observeRenders(value, result)
    } else if (error === undefined && value !== undefined) {
      result.value = value
    }
    this.journal = []
    this.records = []
    return result
  }

  /** Run every command in order; the observations. A step input taken
   * from an earlier observation (`step_refs/1`) is resolved first; one that
   * finds nothing there is the command's error. */
  async runAll(commands) {
    const observations = []
    for (const written of commands) {
      let command
      try {
        command = resolveStepRefs(written, observations)
      } catch (thrown) {
        observations.push(this.observe(written, this.counter.changes, observed(thrown)))
        continue
      }
      let observation = this.run(command)
      if (isThenable(observation)) observation = await observation
      observations.push(observation)
    }
    return observations
  }
}

/** `value` with every `{"$from": {step, path}}` replaced by what
 * `observations[step]` holds at `path` (keys and indexes).
 * @param {unknown} value @param {object[]} observations @returns {any} */
export function resolveStepRefs(value, observations) {
  if (Array.isArray(value)) return value.map((item) => resolveStepRefs(item, observations))
  if (value === null || typeof value !== 'object') return value
  if (!Object.hasOwn(value, '$from')) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, resolveStepRefs(item, observations)]))
  }
  const { step, path } = /** @type {{$from: {step: number, path: (string | number)[]}}} */ (value).$from
  let found = observations[step]
  for (const part of path) found = found === undefined || found === null ? undefined : found[part]
  if (found === undefined) {
    const text = path.map((part, index) => (typeof part === 'number' ? `[${part}]` : index === 0 ? part : `.${part}`)).join('')
    throw new Error(`a step input takes command ${step}'s ${text}, which its observation does not hold`)
  }
  return structuredClone(found)
}

export function isThenable(value) {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof value.then === 'function'
}

function insertAt(list, index, item) {
  const at = present(index) ? Math.min(Math.max(0, index), list.length) : list.length
  list.splice(at, 0, item)
}

function removeNamed(list, name) {
  for (let i = list.length - 1; i >= 0; i -= 1) {
    if (list[i]?.name === name) list.splice(i, 1)
  }
}

function isPlainObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

/** Walk `target` by object keys and set the last one; stop silently when a
 * key is missing or the walk reaches something that is not an object. */
function setPath(target, path, value) {
  if (!Array.isArray(path) || path.length === 0) return
  let cursor = target
  for (const key of path.slice(0, -1)) {
    if (!isPlainObject(cursor) || !Object.hasOwn(cursor, key)) return
    cursor = cursor[key]
  }
  if (isPlainObject(cursor)) setOwn(cursor, path[path.length - 1], value)
}
