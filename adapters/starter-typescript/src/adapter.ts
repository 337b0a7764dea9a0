// A starter dshc adapter in TypeScript: it speaks the whole adapter protocol
// (docs/adapter-protocol.md, version 1) and implements nothing, so every case
// is skipped with a reason. Copy this folder, then replace `runCase` with
// calls into your implementation, one observation per command of the case.
//
//     dshc check --adapter 'path/to/starter-typescript/run'
//
// stdout carries only protocol replies, one JSON object per line; log to
// stderr. `run` builds this file with tsc on first use.

import { createInterface } from 'node:readline';

const PROTOCOL_VERSION = 1;

/** The contract levels this adapter runs; dshc skips cases of other levels without sending them. */
type Level = 'assembly' | 'loop';
const LEVELS: Level[] = ['assembly'];

/** A case as dshc sends it (the full shape is `Case` in docs/adapter-protocol.v1.json). */
interface Case {
  id: string;
  level: Level;
  config: Record<string, unknown>;
  commands: Array<{ do: string } & Record<string, unknown>>;
  world?: Record<string, unknown>;
}

type Request =
  | { seq: number; cmd: 'start'; version: number }
  | { seq: number; cmd: 'run'; case: Case; provider_url?: string; virtual_time?: boolean }
  | { seq: number; cmd: 'stop' }
  | { seq: number; cmd: string };

type ReplyBody =
  | { started: { version: number; implementation: Record<string, string>; capabilities: { levels: Level[] } } }
  | { result: { observations: unknown[] } }
  | { skipped: { reason: string } }
  | { errored: { context: string } }
  | { stopped: Record<string, never> };

/**
 * Run one case in a fresh implementation. A real adapter runs each of
 * `testCase.commands` in order and returns `{ result: { observations } }`,
 * one observation per command (the protocol document's "Cases" and
 * "Observations" sections).
 */
function runCase(testCase: Case): ReplyBody {
  return { skipped: { reason: `starter-typescript implements nothing yet (${testCase.commands.length} commands not run)` } };
}

function replyTo(request: Request): ReplyBody {
  switch (request.cmd) {
    case 'start':
      if (!('version' in request) || request.version !== PROTOCOL_VERSION) {
        return { errored: { context: `dshc speaks protocol ${'version' in request ? request.version : '?'}, this adapter ${PROTOCOL_VERSION}` } };
      }
      return {
        started: {
          version: PROTOCOL_VERSION,
          implementation: { name: 'starter-typescript', version: '0.0.0', language: 'typescript' },
          capabilities: { levels: LEVELS },
        },
      };
    case 'run':
      try {
        return runCase((request as { case: Case }).case);
      } catch (error) {
        // A failure of the adapter itself, not of the implementation under test.
        return { errored: { context: error instanceof Error ? (error.stack ?? error.message) : String(error) } };
      }
    case 'stop':
      return { stopped: {} };
    default:
      return { errored: { context: `this adapter does not offer ${JSON.stringify(request.cmd)}` } };
  }
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const request = JSON.parse(line) as Request;
  const body = replyTo(request);
  process.stdout.write(`${JSON.stringify({ seq: request.seq, ...body })}\n`);
  if ('stopped' in body || (request.cmd === 'start' && 'errored' in body)) {
    break;
  }
}
