// dshc adapter for the published TypeScript implementation of the dsh
// prompt-assembly contract (@deepseek-ai/dsh-system-prompt).
//
// Protocol: docs/adapter-protocol.md (version 1). One JSON request per line on
// stdin, one JSON reply per line on stdout. Nothing else is ever written to
// stdout; diagnostics go to stderr.
//
// Every case runs in a fresh cordis Context with the real `SystemPrompt`
// plugin loaded from the case config. Scopes are real dsh-scope scopes
// (`createScope`, `bindScopeParent`); registrations, listeners, disposal and
// `assemble()` are the upstream calls themselves. This file only scripts the
// providers and listeners a case describes and reports what happened.

// ---------------------------------------------------------------------------
// Runtime preparation (before any upstream module is loaded).

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

// stdout is the protocol channel: route every console method to stderr so a
// stray log line from any module can never corrupt it.
for (const method of ['log', 'info', 'debug', 'warn', 'trace', 'dir']) {
  console[method] = (...args) => console.error(...args)
}

function log(...args) {
  console.error('[node-dsh]', ...args)
}

process.on('unhandledRejection', (reason) => {
  log('unhandled rejection (ignored):', reason?.stack ?? reason)
})

process.stdout.on('error', (error) => {
  // The harness closed our stdout: nobody is listening any more.
  log('stdout error, exiting:', error?.message ?? error)
  process.exit(0)
})

const { createRequire } = await import('node:module')
const { createInterface } = await import('node:readline')

const require = createRequire(import.meta.url)
const PROMPT_PACKAGE = '@deepseek-ai/dsh-system-prompt'
const promptPackage = require(`${PROMPT_PACKAGE}/package.json`)

const { Context } = await import('@deepseek-ai/cordis')
const { createScope, bindScopeParent } = await import('@deepseek-ai/dsh-scope')
const {
  SystemPrompt,
  renderPrompt,
  renderContextSections,
  joinContextSections,
} = await import(PROMPT_PACKAGE)

const PROTOCOL_VERSION = 1

const IMPLEMENTATION = {
  name: PROMPT_PACKAGE,
  version: promptPackage.version,
  language: 'typescript',
  homepage: `https://www.npmjs.com/package/${PROMPT_PACKAGE}`,
}

// ---------------------------------------------------------------------------
// Output hygiene.

const toWellFormed =
  typeof String.prototype.toWellFormed === 'function'
    ? (text) => text.toWellFormed()
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
function clean(value) {
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

function send(reply) {
  process.stdout.write(`${JSON.stringify(clean(reply))}\n`)
}

// ---------------------------------------------------------------------------
// Small helpers.

/** An error in this adapter (or in the case it was sent), not in upstream. */
class AdapterFault extends Error {
  name = 'AdapterFault'
}

/** `{name, message}` of a thrown value, as the protocol observes it. */
function observed(error) {
  if (error !== null && (typeof error === 'object' || typeof error === 'function')) {
    let name = error.name
    if (name === undefined || name === null) name = error.constructor?.name ?? 'Error'
    let message = error.message
    if (message === undefined || message === null) message = safeString(error)
    return { name: safeString(name), message: safeString(message) }
  }
  return { name: typeof error, message: safeString(error) }
}

function safeString(value) {
  try {
    return String(value)
  } catch {
    return Object.prototype.toString.call(value)
  }
}

function stackOf(error) {
  if (error && typeof error.stack === 'string') return error.stack
  return safeString(error)
}

function present(value) {
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

/** A detached copy of JSON data from the case. */
function copyJson(value) {
  return value === undefined ? undefined : structuredClone(value)
}

const CONFIG_KEYS = {
  include_harness_identity: 'includeHarnessIdentity',
  include_runtime_context: 'includeRuntimeContext',
  persona: 'persona',
  tool_order: 'toolOrder',
}

/** Case config (snake_case) to the plugin config (upstream camelCase). */
function upstreamConfig(spec) {
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

/** Render a successful assembly the three ways the protocol observes. */
function observeRenders(assembly, observation) {
  try {
    observation.prompt = { text: renderPrompt(assembly) }
  } catch (error) {
    observation.prompt = { error: observed(error) }
  }
  try {
    const sections = renderContextSections(assembly)
    observation.snapshot_sections = { sections: sections.map(entryData) }
    observation.snapshot = { text: joinContextSections(sections) }
  } catch (error) {
    observation.snapshot_sections = { error: observed(error) }
    observation.snapshot = { error: observed(error) }
  }
}

// ---------------------------------------------------------------------------
// One case.

/** A cordis plugin that only hands out its context: it injects
 * `systemPrompt`, so scopes minted under it resolve the service. */
function hostPlugin(onContext) {
  return {
    name: 'dshc-node-dsh-host',
    inject: ['systemPrompt'],
    apply(ctx) {
      onContext(ctx)
    },
  }
}

class CaseWorld {
  constructor(root, host, counter) {
    this.root = root
    this.host = host
    this.counter = counter
    this.keys = new Map()
    this.scopes = new Map()
    this.disposers = new Map()
    this.journal = []
    this.fault = undefined
  }

  /** Record an adapter fault (reported as `errored`) and return it to throw. */
  faulted(error) {
    this.fault ??= error
    return error
  }

  /** The opaque key object of a scope name, created on first use. */
  keyOf(name) {
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
    if (!present(scope)) return this.root
    let ctx = this.scopes.get(scope)
    if (ctx === undefined) {
      ctx = createScope(this.host, this.keyOf(scope)).ctx
      this.scopes.set(scope, ctx)
    }
    return ctx
  }

  registryOf(scope) {
    return this.contextOf(scope).systemPrompt
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
      const values = spec.sequence.map(make)
      return (call) => values[Math.min(call, values.length) - 1]
    }
    throw this.faulted(new AdapterFault('a provider sets none of returns, sequence, returns_undefined, throws'))
  }

  /** A journaled provider function over a provider table. */
  provider(kind, id, spec, make) {
    const outcome = this.outcomeOf(spec, make)
    const effects = Array.isArray(spec.effects) ? spec.effects : []
    let calls = 0
    return (_context) => {
      calls += 1
      const call = calls
      this.journal.push(`${kind} ${id}`)
      for (const effect of effects) {
        if (present(effect.on_call) && effect.on_call !== call) continue
        if (present(effect.register)) this.register(effect.register)
        if (present(effect.dispose)) this.dispose(effect.dispose)
      }
      return outcome(call)
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
    const listener = async function scriptedListener(assembly, _context, next) {
      world.journal.push(`listener ${id}`)
      let current = assembly
      for (const op of ops) {
        if (op === 'next') {
          current = await next()
          continue
        }
        if (op !== null && typeof op === 'object') {
          if ('throw' in op) throw new Error(op.throw)
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

  /** Run one command; return its observation. */
  async run(command) {
    const changesBefore = this.counter.changes
    this.journal = []
    let error
    let assembly
    try {
      switch (command.do) {
        case 'bind':
          bindScopeParent(this.keyOf(command.scope), this.keyOf(command.parent))
          break
        case 'dispose': {
          const pending = this.dispose(command.target)
          // Count the change event of an asynchronous teardown within this
          // command: wait for it before reading the counter.
          if (isThenable(pending)) await pending
          break
        }
        case 'assemble': {
          const context = present(command.scope) ? { scope: this.keyOf(command.scope) } : {}
          assembly = await this.registryOf(undefined).assemble(context)
          break
        }
        default:
          this.register(command)
      }
    } catch (thrown) {
      error = observed(thrown)
    }
    if (this.fault !== undefined) throw this.fault
    // Observation of the result is adapter code: a bug here must surface as
    // `errored`, not as an error of the implementation.
    const result = {}
    if (error !== undefined) result.error = error
    result.changes = this.counter.changes - changesBefore
    if (this.journal.length > 0) result.journal = this.journal
    if (error === undefined && command.do === 'assemble') {
      result.assembly = assemblyData(assembly)
      observeRenders(assembly, result)
    }
    this.journal = []
    return result
  }

}

function isThenable(value) {
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

/** Execute one case; the `result` body of the reply. */
async function runCase(caseData) {
  const root = new Context()
  const counter = { changes: 0 }
  root.on('system-prompt/change', () => {
    counter.changes += 1
  })

  try {
    await root.plugin(SystemPrompt, upstreamConfig(caseData.config))
  } catch (error) {
    if (error instanceof AdapterFault) throw error
    return { config_error: observed(error), observations: [] }
  }

  let host
  await root.plugin(hostPlugin((ctx) => {
    host = ctx
  }))
  if (host === undefined) throw new AdapterFault('the host plugin did not start')

  const world = new CaseWorld(root, host, counter)

  const observations = []
  for (const command of caseData.commands) {
    observations.push(await world.run(command))
  }
  return { observations }
}

// ---------------------------------------------------------------------------
// The request loop.

function recoverSeq(line) {
  try {
    const value = JSON.parse(line)
    if (Number.isSafeInteger(value?.seq) && value.seq >= 0) return value.seq
  } catch {
    const match = /"seq"\s*:\s*(\d+)/.exec(line)
    if (match) return Number(match[1])
  }
  return undefined
}

async function handle(line) {
  let request
  try {
    request = JSON.parse(line)
  } catch (error) {
    return badRequest(line, `not JSON: ${error.message}`)
  }
  if (request === null || typeof request !== 'object' || Array.isArray(request)) {
    return badRequest(line, 'not a JSON object')
  }
  const { seq } = request
  if (!Number.isSafeInteger(seq) || seq < 0) return badRequest(line, 'missing or invalid seq')

  switch (request.cmd) {
    case 'start':
      if (request.version !== PROTOCOL_VERSION) {
        log(`harness speaks protocol ${JSON.stringify(request.version)}; this adapter speaks ${PROTOCOL_VERSION}`)
      }
      send({
        seq,
        started: {
          version: PROTOCOL_VERSION,
          implementation: IMPLEMENTATION,
          capabilities: { levels: ['assembly'] },
        },
      })
      return false
    case 'run': {
      const caseData = request.case
      if (caseData === null || typeof caseData !== 'object' || !Array.isArray(caseData.commands)) {
        send({ seq, errored: { context: 'bad request: `run` needs a case with a commands array' } })
        return false
      }
      if (present(caseData.level) && caseData.level !== 'assembly') {
        send({ seq, skipped: { reason: `level ${JSON.stringify(caseData.level)} is not implemented` } })
        return false
      }
      try {
        const result = await runCase(caseData)
        send({ seq, result })
      } catch (error) {
        log(`case ${JSON.stringify(caseData.id)} errored:`, stackOf(error))
        send({ seq, errored: { context: `adapter error in case ${JSON.stringify(caseData.id)}: ${stackOf(error)}` } })
      }
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

function badRequest(line, why) {
  const seq = recoverSeq(line)
  if (seq === undefined) {
    log(`ignoring a request without a usable seq (${why}): ${line.slice(0, 200)}`)
  } else {
    send({ seq, errored: { context: `bad request: ${why}` } })
  }
  return false
}

const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY })
for await (const line of lines) {
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
  if (stop) {
    lines.close()
    process.exit(0)
  }
}
process.exit(0)
