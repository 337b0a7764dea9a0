// The driver of mutation/search (read that script first): hunts each
// suite-killed mutant of one upstream package with `dshc diff`, and writes
// the report mutation/reports/search/PACKAGE.json. No times are kept, so a
// run that finds alike writes the same bytes.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { modelCaught, mutantKey, replaceFile, withStrykerRerun } from './summarize.mjs';

const here = dirname(fileURLToPath(import.meta.url));

function options(argv) {
  const named = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || argv[i + 1] === undefined) throw new Error(`bad argument ${argv[i]}`);
    named[argv[i].slice(2)] = argv[i + 1];
  }
  for (const name of ['package', 'levels', 'dshc', 'work', 'seed', 'cases', 'sample', 'jobs', 'expected-failures', 'out']) {
    if (named[name] === undefined) throw new Error(`--${name} is required`);
  }
  return { ...named, levels: named.levels.split(','), cases: Number(named.cases), sample: Number(named.sample), jobs: Number(named.jobs) };
}

const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'));

/** The mutants the suite kills (killed or timed out, reruns applied), with the full report's ids, by id. */
export function suiteKilled(report) {
  const killed = [];
  for (const [file, { mutants }] of Object.entries(report.files)) {
    for (const mutant of mutants) {
      if (mutant.status === 'Killed' || mutant.status === 'Timeout') killed.push({ id: mutant.id, key: mutantKey(file, mutant) });
    }
  }
  return killed.sort((a, b) => Number(a.id) - Number(b.id));
}

/** `count` of `items`, drawn by a Fisher-Yates shuffle seeded with `seed` (mulberry32), in id order; all when count is 0 or more than there are. */
export function sample(items, count, seed) {
  if (count <= 0 || count >= items.length) return items;
  let state = Number(BigInt.asUintN(32, BigInt(seed)));
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const shuffled = [...items];
  for (let i = shuffled.length - 1; i > 0; i -= 1) {
    const j = Math.floor(next() * (i + 1));
    [shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]];
  }
  return shuffled.slice(0, count).sort((a, b) => Number(a.id) - Number(b.id));
}

/** Where one `dshc diff` run found its mutant: the first case that disagreed or did not run, or null when every case agreed. */
export function foundAt(stdout, exitCode) {
  const line = stdout.match(/^case (\d+) of seed \d+: the implementations disagree/m) ?? stdout.match(/^case (\d+): not run:/m);
  if (line) return { case: Number(line[1]) };
  if (exitCode === 0) return null;
  // dshc failed before any case decided (the adapter died at its handshake, say).
  return { case: null, exit: exitCode };
}

/** One `dshc diff` of `level`, with mutant `id` switched on (none: the baseline); resolves to its stdout and exit code. */
function diff(opts, level, id, cwd) {
  mkdirSync(cwd, { recursive: true });
  const args = ['diff', '--level', level, '--adapter', join(opts.work, 'run'), '--seed', String(opts.seed),
    '--cases', String(opts.cases), '--jobs', '1', '--shrink-attempts', '0',
    '--expected-failures', opts['expected-failures'], '--regressions-dir', join(cwd, 'regressions')];
  const env = { ...process.env };
  if (id === null) delete env.__STRYKER_ACTIVE_MUTANT__;
  else env.__STRYKER_ACTIVE_MUTANT__ = id;
  return new Promise((resolve) => {
    // Its own process group, so that a stop takes the adapter with it.
    const child = spawn(opts.dshc, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    // The first deciding line is enough: diff goes on past a case that
    // cannot run (a mutant that hangs would cost every case its timeout),
    // and what it shrinks and writes is not needed here.
    child.stdout.on('data', (data) => {
      stdout += data;
      if (foundAt(stdout, 0) && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
    });
    child.stderr.on('data', (data) => { stderr += data; });
    child.on('close', (code) => resolve({ stdout, stderr, code: code ?? 1 }));
  });
}

/** The levels in order, stopping at the first that finds the mutant. */
async function hunt(opts, id) {
  const cwd = join(opts.work, 'hunt', id ?? 'baseline');
  try {
    for (const level of opts.levels) {
      const run = await diff(opts, level, id, cwd);
      const found = foundAt(run.stdout, run.code);
      if (found) return { found: { level, ...found }, run };
    }
    return { found: null };
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

async function main() {
  const opts = options(process.argv.slice(2));
  const reports = join(here, 'reports', 'upstream');
  const problems = [];
  const rerunFile = join(reports, `${opts.package}.rerun.json`);
  const report = withStrykerRerun(readJson(join(reports, `${opts.package}.json`)),
    existsSync(rerunFile) ? readJson(rerunFile) : null, opts.package, problems);
  if (problems.length) throw new Error(problems.join('; '));

  // The instrumented module must hold exactly the report's mutants, or the ids mean something else.
  const instrumented = readFileSync(join(opts.work, 'under-test', 'lib', 'index.js'), 'utf8');
  const ids = new Set([...instrumented.matchAll(/stryMutAct_[0-9a-f]+\("(\d+)"\)/g)].map((m) => m[1]));
  const reported = Object.values(report.files).flatMap(({ mutants }) => mutants.map((m) => m.id));
  if (ids.size !== reported.length || !reported.every((id) => ids.has(id))) {
    throw new Error(`the instrumented module has ${ids.size} mutants, the report ${reported.length}: run mutation/upstream ${opts.package} again first`);
  }

  const baseline = await hunt(opts, null);
  if (baseline.found) {
    process.stderr.write(baseline.run.stdout + baseline.run.stderr);
    throw new Error(`the unmutated packages already disagree with the reference (${baseline.found.level} case ${baseline.found.case}): the seed measures nothing`);
  }

  const population = suiteKilled(report);
  const chosen = sample(population, opts.sample, opts.seed);
  const results = new Array(chosen.length);
  let nextIndex = 0;
  let done = 0;
  const worker = async () => {
    while (nextIndex < chosen.length) {
      const index = nextIndex++;
      const { id, key } = chosen[index];
      const { found } = await hunt(opts, id);
      results[index] = { mutant: key, found };
      done += 1;
      const where = found ? `found at ${found.level} case ${found.case ?? `? (exit ${found.exit})`}` : 'not found';
      process.stderr.write(`[${done}/${chosen.length}] ${key}: ${where}\n`);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.jobs) }, worker));

  const out = {
    tool: 'dshc diff',
    package: opts.package,
    levels: opts.levels,
    seed: String(opts.seed),
    cases: opts.cases,
    suite_killed: population.length,
    sampled: opts.sample > 0 && opts.sample < population.length ? opts.sample : null,
    mutants: results,
  };
  replaceFile(opts.out, `${JSON.stringify(out, null, 2)}\n`);
  const found = results.filter((r) => r.found).length;
  console.error(`mutation/search: ${found} of ${results.length} found (${((100 * found) / results.length).toFixed(1)}%); report in ${opts.out}`);
}

/**
 * `mutation/model --search`'s two ends: `--model-targets SAMPLE SEED` prints
 * the names of the model crate's caught mutants to hunt (a seeded sample, or
 * all when SAMPLE is 0), one a line; `--import-model-search OUTCOMES LOGS
 * TARGETS SEED CASES SAMPLE OUT` writes cargo-mutants' outcomes of the search
 * test as mutation/reports/search/dshc-model.json, each hunted mutant found
 * when the search test failed on it (or timed out), at the case its log
 * names.
 */
function modelSearch(argv) {
  const problems = [];
  const caught = modelCaught(join(here, 'reports', 'model'), problems);
  if (problems.length) throw new Error(problems.join('; '));
  const population = caught.map((name, index) => ({ id: String(index), key: name }));
  if (argv[0] === '--model-targets') {
    for (const { key } of sample(population, Number(argv[1]), argv[2])) console.log(key);
    return;
  }
  const [outcomesFile, logs, targetsFile, seed, cases, sampled, out] = argv.slice(1);
  const targets = readFileSync(targetsFile, 'utf8').split('\n').filter(Boolean);
  const outcomes = new Map();
  for (const { scenario, summary, log_path: logPath } of readJson(outcomesFile).outcomes) {
    if (scenario !== 'Baseline' && scenario.Mutant) outcomes.set(scenario.Mutant.name, { summary, logPath });
  }
  const mutants = targets.map((name) => {
    const outcome = outcomes.get(name);
    if (!outcome) throw new Error(`cargo-mutants did not test ${name}`);
    if (outcome.summary === 'MissedMutant') return { mutant: name, found: null };
    if (outcome.summary === 'Timeout') return { mutant: name, found: { level: null, case: null, timeout: true } };
    if (outcome.summary !== 'CaughtMutant') throw new Error(`${name}: cargo-mutants outcome ${outcome.summary}`);
    const log = outcome.logPath ? readFileSync(join(logs, outcome.logPath), 'utf8') : '';
    const at = log.match(/the search found the mutant at (\w+) case (\d+)/);
    return { mutant: name, found: at ? { level: at[1], case: Number(at[2]) } : { level: null, case: null } };
  });
  const report = {
    tool: 'cargo-mutants',
    package: 'dshc-model',
    levels: ['assembly', 'loop'],
    seed: String(seed),
    cases: Number(cases),
    suite_killed: population.length,
    sampled: Number(sampled) > 0 && Number(sampled) < population.length ? Number(sampled) : null,
    mutants,
  };
  replaceFile(out, `${JSON.stringify(report, null, 2)}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const argv = process.argv.slice(2);
  (argv[0] === '--model-targets' || argv[0] === '--import-model-search' ? Promise.resolve().then(() => modelSearch(argv)) : main()).catch((error) => {
    console.error(`mutation/search: ${error.message}`);
    process.exit(1);
  });
}
