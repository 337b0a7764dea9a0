// Declarations the adapter's JavaScript is checked against beyond what
// Node's and upstream's own types say (jsconfig.json includes this file).

declare global {
  // The type check targets Node 20's language level (`lib: es2023` in
  // jsconfig.json). These later additions may be absent at run time, so
  // they are optional here and every use tests for them first (adapter.mjs
  // polyfills `Promise.withResolvers`, world.mjs falls back for
  // `toWellFormed`).

  interface PromiseConstructor {
    /** ES2024; Node 22 and later. */
    withResolvers?<T>(): {
      promise: Promise<T>
      resolve: (value: T | PromiseLike<T>) => void
      reject: (reason?: unknown) => void
    }
  }

  interface String {
    /** ES2024; Node 20 has it, an older engine may not. */
    toWellFormed?(): string
  }
}

// A message source kind of the harness's own: the `compact` command's
// summary is a user message with source `{kind: 'compaction'}`
// (docs/adapter-protocol.md, "Commands"). Upstream's `MessageSourceMap` is
// merge-extensible for exactly this: plugins declare their own kinds.
declare module '@deepseek-ai/dsh-llm' {
  interface MessageSourceMap {
    compaction: { kind: 'compaction' }
  }
}

export {}
