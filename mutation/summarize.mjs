// Join the mutation reports (mutation/reports/) with the classification of
// every surviving mutant (mutation/survivors/) into mutation/REPORT.md: per
// package, the mutants generated, killed, survived and timed out, the score,
// and each survivor with its class and why. Two kinds of report are read:
// StrykerJS's JSON reports of upstream's packages (mutation/reports/upstream/,
// written by mutation/upstream) and cargo-mutants' outcomes of the model
// crate (mutation/reports/model/, written by mutation/model through
// --import-cargo-mutants, as one whole run or as shards). Exits 1 when a survivor is not
// classified, or when a classification names no surviving mutant (the report
// moved on). A survivor classified "missed" is a gap in the suite still to
// close: it is listed and counted, and fails the run under --strict.
//
//   node mutation/summarize.mjs [--check] [--strict]
//   node mutation/summarize.mjs --import-cargo-mutants OUTCOMES REPORT COMMIT [ONLY]
//   node mutation/summarize.mjs --model-commit
//   node mutation/summarize.mjs --import-model-diff OUTCOMES DIFF BASE COMMIT
//
// --check writes nothing and fails when REPORT.md is not what it would write.
// --import-cargo-mutants keeps, of cargo-mutants' outcomes.json, each
// mutant's name and outcome (no times, so a rerun that judges alike writes
// the same bytes) in REPORT, a file of mutation/reports/model/, with the
// COMMIT the run was made at: CI mutates the lines changed since then, and
// --model-commit prints it. With ONLY (a file of mutant names, a line each)
// it keeps those mutants alone: a rerun's, since cargo-mutants' --re lets
// its struct-field mutants through whatever the filter.
// --import-model-diff keeps a --in-diff run of the lines DIFF changes from
// BASE (the report's commit) to COMMIT as mutation/reports/model/diff-*.json
// (with the base-side lines DIFF removes or changes),
// which brings the report forward to COMMIT (see broughtForward).
//
// The search's reports (mutation/reports/search/, written by mutation/search)
// say which of the mutants the suite kills `dshc diff` finds too; REPORT.md
// gets their share per package, and the mutants the search missed.
import { readFileSync, readdirSync, writeFileSync, renameSync, existsSync } from 'node:fs';
import { join, basename, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const CLASSES = {
  equivalent: 'equivalent: no program can tell it from the original',
  'typescript-only': 'observable only from TypeScript: no scenario can reach it through the adapter protocol',
  'rust-only': 'observable only from Rust: a caller of the model crate\'s API sees it, but nothing the reference does for a scenario reaches it',
  missed: 'missed: observable, and no scenario kills it yet',
};

/** A mutant's stable name: file, position, mutator and replacement. */
export function mutantKey(file, mutant) {
  const { line, column } = mutant.location.start;
  const replacement = (mutant.replacement ?? '').replace(/\s+/g, ' ').trim();
  return `${file}:${line}:${column} ${mutant.mutatorName} -> ${replacement}`;
}

/** Counts of one Stryker report, and its surviving mutants' keys. */
export function tally(report) {
  const counts = { mutants: 0, killed: 0, survived: 0, timeout: 0, noCoverage: 0, errors: 0 };
  const survivors = [];
  for (const [file, { mutants }] of Object.entries(report.files).sort(([a], [b]) => (a < b ? -1 : 1))) {
    for (const mutant of mutants) {
      counts.mutants += 1;
      switch (mutant.status) {
        case 'Killed': counts.killed += 1; break;
        case 'Timeout': counts.timeout += 1; break;
        case 'Survived': counts.survived += 1; survivors.push(mutantKey(file, mutant)); break;
        case 'NoCoverage': counts.noCoverage += 1; survivors.push(mutantKey(file, mutant)); break;
        default: counts.errors += 1;
      }
    }
  }
  return { counts, survivors };
}

/** cargo-mutants' outcome summaries, as the compact reports name them. */
const CARGO_MUTANTS_OUTCOMES = {
  CaughtMutant: 'caught',
  MissedMutant: 'missed',
  Timeout: 'timeout',
  Unviable: 'unviable',
};

/** A cargo-mutants name's place and mutation: `[file, line, column, what]`. */
function placeOf(name) {
  const [, file = name, line = 0, column = 0, what = ''] = /^(.*?):(\d+):(\d+): (.*)$/.exec(name) ?? [];
  return [file, Number(line), Number(column), what];
}

/** Write `text` to `path` through a temporary file and a rename, so a failed write leaves the old file whole. */
export function replaceFile(path, text) {
  writeFileSync(`${path}.new`, text);
  renameSync(`${path}.new`, path);
}

/** cargo-mutants' names (`file:line:column: what`) by file, then line and column as numbers, then what. */
function byPosition(a, b) {
  const [x, y] = [placeOf(a), placeOf(b)];
  for (let i = 0; i < x.length; i++) {
    if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
  }
  return 0;
}

/**
 * The compact report of one cargo-mutants outcomes.json, run at `commit`:
 * each mutant's name and outcome, of the names in `only` when it is given.
 */
export function importCargoMutants(outcomes, commit, only = null) {
  const mutants = [];
  for (const { scenario, summary } of outcomes.outcomes) {
    if (scenario === 'Baseline' || !scenario.Mutant) continue;
    if (only && !only.has(scenario.Mutant.name)) continue;
    const outcome = CARGO_MUTANTS_OUTCOMES[summary];
    if (!outcome) throw new Error(`cargo-mutants outcome ${summary} of ${scenario.Mutant.name} is not one this script knows`);
    mutants.push({ mutant: scenario.Mutant.name, outcome });
  }
  mutants.sort((a, b) => byPosition(a.mutant, b.mutant));
  return { tool: 'cargo-mutants', commit, mutants };
}

/**
 * Counts of the model crate's compact reports, one whole run or the shards of
 * one; a mutant is killed when caught, and an unviable one (it does not
 * build) is an error, left out of the score as Stryker's compile errors are.
 */
export function tallyCargoMutants(reports) {
  const counts = { mutants: 0, killed: 0, survived: 0, timeout: 0, noCoverage: 0, errors: 0 };
  const survivors = [];
  for (const { mutant, outcome } of reports.flatMap((report) => report.mutants)) {
    counts.mutants += 1;
    switch (outcome) {
      case 'caught': counts.killed += 1; break;
      case 'timeout': counts.timeout += 1; break;
      case 'missed': counts.survived += 1; survivors.push(mutant); break;
      default: counts.errors += 1;
    }
  }
  survivors.sort(byPosition);
  return { counts, survivors };
}

/**
 * The model crate's reports: `outcomes.json` of a whole run, or every
 * `shard-K-of-N.json` of one N; when shards are missing, the package row
 * says which ran and which not yet.
 */
function modelReports(dir, problems) {
  if (!existsSync(dir)) return null;
  const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  const commitOf = (reports) => {
    const commits = [...new Set(reports.map((report) => report.commit))];
    if (commits.length !== 1 || !commits[0]) problems.push(`mutation/reports/model: the reports name more than one commit, or none (${commits.join(', ')})`);
    return commits[0];
  };
  if (files.includes('outcomes.json')) {
    const reports = [readJson(join(dir, 'outcomes.json'))];
    return broughtForward(dir, files, { reports, partial: '', commit: commitOf(reports) }, problems);
  }
  const shards = files.map((f) => /^shard-(\d+)-of-(\d+)\.json$/.exec(f)).filter(Boolean);
  if (!shards.length) return null;
  const of = new Set(shards.map((m) => m[2]));
  if (of.size > 1) problems.push(`mutation/reports/model: shards of more than one count (${[...of].join(', ')})`);
  const total = Number(shards[0][2]);
  const have = new Set(shards.map((m) => Number(m[1])));
  // A run too long for one sitting is committed shard by shard (mutation/README.md):
  // the shards not run yet are named in the report, not a failure.
  const absent = [...Array(total).keys()].filter((k) => !have.has(k));
  const reports = shards.map((m) => readJson(join(dir, m[0])));
  return broughtForward(dir, files, {
    reports,
    partial: absent.length ? ` (shards ${[...have].sort((a, b) => a - b).join(', ')} of ${total}; ${absent.join(', ')} not run yet)` : '',
    commit: commitOf(reports),
  }, problems);
}

/**
 * The run brought forward by its `diff-*.json` reports, with its
 * `rerun-*.json` reports applied. Each diff tests the mutants on the lines
 * of harness/model/src changed from its `base` (the run's commit, or the
 * diff before it) to its `commit`, as CI's --in-diff would, and was
 * committed so that CI need not. Its outcomes replace the run's mutants on
 * the base-side lines the diff removed or changed (`removed`, per file) and
 * those of the same name, and add the new ones; the last commit of the
 * chain is the report's. A rerun tests some mutants again (survivors, once
 * new scenarios were written) on the model source of one link of the
 * chain, and its outcomes replace theirs: it applies at the first link
 * that has every mutant it names, so a later diff that removes a line
 * removes the rerun's mutant on it too. A rerun naming a mutant no link
 * has is a problem: the source moved on.
 */
function broughtForward(dir, files, model, problems) {
  const diffs = files.filter((f) => /^diff-.*\.json$/.test(f)).map((f) => ({ file: f, ...readJson(join(dir, f)) }));
  let pending = files.filter((f) => /^rerun-.*\.json$/.test(f))
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
    .map((file) => ({ file, mutants: readJson(join(dir, file)).mutants }));
  let { commit } = model;
  let outcome = new Map(model.reports.flatMap((report) => report.mutants).map(({ mutant, outcome: o }) => [mutant, o]));
  const applyReruns = () => {
    pending = pending.filter((rerun) => {
      if (!rerun.mutants.every(({ mutant }) => outcome.has(mutant))) return true;
      rerun.mutants.forEach(({ mutant, outcome: again }) => outcome.set(mutant, again));
      return false;
    });
  };
  const chain = [];
  applyReruns();
  for (let next; (next = diffs.find((d) => d.base === commit)); ) {
    const renamed = new Set(next.mutants.map(({ mutant }) => mutant));
    const gone = (mutant) => {
      const [file, line] = placeOf(mutant);
      return renamed.has(mutant) || (next.removed[file] ?? []).includes(line);
    };
    outcome = new Map([
      ...[...outcome].filter(([mutant]) => !gone(mutant)),
      ...next.mutants.map(({ mutant, outcome: o }) => [mutant, o]),
    ]);
    chain.push(next.file);
    commit = next.commit;
    applyReruns();
  }
  for (const { file } of diffs) {
    if (!chain.includes(file)) problems.push(`mutation/reports/model/${file}: its base is not the run's commit or a diff's before it`);
  }
  for (const { file, mutants } of pending) {
    for (const { mutant } of mutants.filter(({ mutant }) => !outcome.has(mutant))) {
      problems.push(`mutation/reports/model/${file}: not a mutant of the run: ${mutant}`);
    }
  }
  return {
    ...model,
    reports: [{ mutants: [...outcome].map(([mutant, result]) => ({ mutant, outcome: result })) }],
    commit,
    partial: `${model.partial}${chain.length ? ` (brought forward by ${chain.join(', ')})` : ''}`,
  };
}

/**
 * The base-side lines a unified diff removes or changes, per file, in
 * order: a mutant the run named on one of them is no longer in the source.
 */
function changedBaseLines(diff) {
  const lines = {};
  let file = null;
  let old = 0;
  for (const line of diff.split('\n')) {
    const header = /^--- (?:a\/)?(.*)$/.exec(line);
    if (header) { file = header[1]; continue; }
    if (line.startsWith('+++')) continue;
    const hunk = /^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@/.exec(line);
    if (hunk) { old = Number(hunk[1]); continue; }
    if (!file) continue;
    if (line.startsWith('-')) {
      (lines[file] ??= []).push(old);
      old += 1;
    } else if (line.startsWith(' ')) {
      old += 1;
    }
  }
  return lines;
}

/** The names of the model crate's mutants the suite caught (or timed out on), reruns applied. */
export function modelCaught(dir, problems) {
  const model = modelReports(dir, problems);
  if (!model) return [];
  return model.reports.flatMap((report) => report.mutants)
    .filter(({ outcome }) => outcome === 'caught' || outcome === 'timeout')
    .map(({ mutant }) => mutant)
    .sort(byPosition);
}

/**
 * The survivors a rerun retests: those classified missed whose why names
 * the scenario written to kill them (a path under scenarios/).
 */
export function rerunTargets(classified) {
  return new Set(classified
    .filter(({ class: kind, why }) => kind === 'missed' && /scenarios\/\S+\.toml/.test(why))
    .map(({ mutant }) => mutant));
}

/**
 * A Stryker report with its rerun (`PACKAGE.rerun.json`, `mutation/upstream
 * --rerun`) applied: each mutant the rerun ran takes the rerun's status. A
 * rerun mutant the report does not have is a problem: the package moved on.
 */
export function withStrykerRerun(report, rerun, name, problems) {
  if (!rerun) return report;
  // Mutants can share a key (one start, mutator and replacement, two
  // spans): each key's statuses are taken in report order.
  const again = new Map();
  for (const [file, { mutants }] of Object.entries(rerun.files)) {
    for (const mutant of mutants) {
      const key = mutantKey(file, mutant);
      again.set(key, [...(again.get(key) ?? []), mutant.status]);
    }
  }
  const files = {};
  for (const [file, entry] of Object.entries(report.files)) {
    files[file] = {
      ...entry,
      mutants: entry.mutants.map((mutant) => {
        const statuses = again.get(mutantKey(file, mutant));
        if (!statuses?.length) return mutant;
        return { ...mutant, status: statuses.shift() };
      }),
    };
  }
  for (const [key, left] of again) {
    if (left.length) problems.push(`${name}: the rerun has a mutant the report does not: ${key}`);
  }
  return { ...report, files };
}

/**
 * Two Stryker reports as one: `later`'s mutants replace `earlier`'s of the
 * same key (in order, for keys two mutants share), and are added otherwise.
 * `mutation/upstream --rerun` folds each new rerun into the one before.
 */
export function mergeStrykerReports(earlier, later) {
  const files = structuredClone(earlier.files);
  for (const [file, entry] of Object.entries(later.files)) {
    const into = (files[file] ??= { ...entry, mutants: [] });
    const slots = new Map();
    into.mutants.forEach((mutant, index) => {
      const key = mutantKey(file, mutant);
      slots.set(key, [...(slots.get(key) ?? []), index]);
    });
    for (const mutant of entry.mutants) {
      const index = slots.get(mutantKey(file, mutant))?.shift();
      if (index === undefined) into.mutants.push(mutant);
      else into.mutants[index] = mutant;
    }
  }
  return { ...later, files };
}

function readJson(path) {
  return JSON.parse(readFileSync(path, 'utf8'));
}

function packageSection(name, { counts, survivors }, classified, problems, missed) {
  const byKey = new Map(classified.map((entry) => [entry.mutant, entry]));
  const live = new Set(survivors);
  for (const entry of classified) {
    if (!live.has(entry.mutant)) problems.push(`${name}: classified but not a survivor: ${entry.mutant}`);
    if (!(entry.class in CLASSES)) problems.push(`${name}: unknown class "${entry.class}": ${entry.mutant}`);
  }
  const classes = { equivalent: 0, 'typescript-only': 0, 'rust-only': 0, missed: 0, unclassified: 0 };
  const rows = survivors.map((key) => {
    const entry = byKey.get(key);
    if (!entry) {
      classes.unclassified += 1;
      problems.push(`${name}: unclassified survivor: ${key}`);
      return `| \`${key}\` | **unclassified** | |`;
    }
    classes[entry.class] = (classes[entry.class] ?? 0) + 1;
    if (entry.class === 'missed') missed.push(`${name}: missed: ${key}`);
    return `| \`${key.replaceAll('|', '\\|')}\` | ${entry.class} | ${entry.why.replaceAll('|', '\\|')} |`;
  });
  const detected = counts.killed + counts.timeout;
  const valid = counts.mutants - counts.errors;
  const score = valid ? (100 * detected) / valid : 0;
  const scoreOfObservable = valid - classes.equivalent ? (100 * detected) / (valid - classes.equivalent) : 0;
  const line = `| ${name} | ${counts.mutants} | ${counts.killed} | ${counts.survived + counts.noCoverage} | ${counts.timeout} | ${counts.errors} | ${score.toFixed(1)}% | ${scoreOfObservable.toFixed(1)}% | ${classes.equivalent} | ${classes['typescript-only'] + classes['rust-only']} | ${classes.missed} | ${classes.unclassified} |`;
  const section = [`### ${name}`, '', '| survivor | class | why |', '|---|---|---|', ...rows, ''].join('\n');
  return { line, section: survivors.length ? section : `### ${name}\n\nNo survivors.\n` };
}

/** The suite-killed mutants' keys of a Stryker report (reruns applied). */
function suiteKilledKeys(report) {
  const keys = new Set();
  for (const [file, { mutants }] of Object.entries(report.files)) {
    for (const mutant of mutants) {
      if (mutant.status === 'Killed' || mutant.status === 'Timeout') keys.add(mutantKey(file, mutant));
    }
  }
  return keys;
}

/**
 * One search report's row and its list of the mutants it did not find. Every
 * mutant it hunted must be one the suite kills, else the report moved on.
 */
export function searchSection(search, killedKeys, problems) {
  const name = search.package;
  for (const { mutant } of search.mutants) {
    if (!killedKeys.has(mutant)) problems.push(`${name}: the search hunted a mutant the suite does not kill: ${mutant}`);
  }
  const found = search.mutants.filter(({ found: at }) => at);
  const cases = found.map(({ found: at }) => at.case).filter((c) => c !== null).sort((a, b) => a - b);
  const median = cases.length ? cases[Math.floor((cases.length - 1) / 2)] : '-';
  const share = search.mutants.length ? (100 * found.length) / search.mutants.length : 0;
  const hunted = search.sampled === null ? `${search.mutants.length} (all)` : `${search.mutants.length} (a seeded sample)`;
  const line = `| ${name} | ${search.levels.join(', ')} | ${search.seed} | ${search.cases} | ${search.suite_killed} | ${hunted} | ${found.length} | ${share.toFixed(1)}% | ${median} |`;
  const missed = search.mutants.filter(({ found: at }) => !at).map(({ mutant }) => `- \`${mutant}\``);
  const section = [`### ${name}`, '', ...(missed.length ? missed : ['The search found every mutant it hunted.']), ''].join('\n');
  return { line, section };
}

function main() {
  const check = process.argv.includes('--check');
  const strict = process.argv.includes('--strict');
  const problems = [];
  const missed = [];
  const lines = [];
  const sections = [];
  const at = process.argv.indexOf('--import-cargo-mutants');
  if (at !== -1) {
    const [from, to, commit, onlyFile] = process.argv.slice(at + 1, at + 5);
    if (!from || !to || !/^[0-9a-f]{40}$/.test(commit ?? '')) {
      throw new Error('usage: --import-cargo-mutants OUTCOMES REPORT COMMIT [ONLY] (a full commit hash)');
    }
    const only = onlyFile ? new Set(readFileSync(onlyFile, 'utf8').split('\n').filter(Boolean)) : null;
    replaceFile(to, `${JSON.stringify(importCargoMutants(readJson(from), commit, only), null, 2)}\n`);
    return;
  }
  const diffAt = process.argv.indexOf('--import-model-diff');
  if (diffAt !== -1) {
    const [from, diffFile, base, commit] = process.argv.slice(diffAt + 1, diffAt + 5);
    if (!from || !diffFile || ![base, commit].every((c) => /^[0-9a-f]{40}$/.test(c ?? ''))) {
      throw new Error('usage: --import-model-diff OUTCOMES DIFF BASE COMMIT (full commit hashes)');
    }
    const dir = join(here, 'reports', 'model');
    const model = modelReports(dir, problems);
    if (model?.commit !== base || problems.length) throw new Error(`the diff's base ${base} is not the report's commit ${model?.commit}: ${problems.join('; ')}`);
    const removed = changedBaseLines(readFileSync(diffFile, 'utf8'));
    const report = { ...importCargoMutants(readJson(from), commit), base, removed };
    replaceFile(join(dir, `diff-${commit.slice(0, 12)}.json`), `${JSON.stringify(report, null, 2)}\n`);
    return;
  }
  if (process.argv.includes('--model-commit')) {
    // The commit the model crate's report was run at, for CI's --in-diff.
    const model = modelReports(join(here, 'reports', 'model'), problems);
    if (!model?.commit || problems.length) throw new Error(`no single commit for the model crate's report: ${problems.join('; ')}`);
    console.log(model.commit);
    return;
  }
  const classifiedOf = (name) => {
    const survivorsFile = join(here, 'survivors', `${name}.json`);
    return existsSync(survivorsFile) ? readJson(survivorsFile) : [];
  };
  const reports = join(here, 'reports', 'upstream');
  const names = existsSync(reports)
    ? readdirSync(reports).filter((f) => f.endsWith('.json') && !f.endsWith('.rerun.json')).sort()
    : [];
  const killedByPackage = new Map();
  for (const file of names) {
    const name = basename(file, '.json');
    const rerun = join(reports, `${name}.rerun.json`);
    const report = withStrykerRerun(readJson(join(reports, file)), existsSync(rerun) ? readJson(rerun) : null, name, problems);
    killedByPackage.set(name, report);
    const { line, section } = packageSection(name, tally(report), classifiedOf(name), problems, missed);
    lines.push(line);
    sections.push(section);
  }
  const searchLines = [];
  const searchSections = [];
  const searches = join(here, 'reports', 'search');
  for (const file of existsSync(searches) ? readdirSync(searches).filter((f) => f.endsWith('.json')).sort() : []) {
    const search = readJson(join(searches, file));
    const report = killedByPackage.get(search.package);
    const killed = search.package === 'dshc-model'
      ? new Set(modelCaught(join(here, 'reports', 'model'), problems))
      : report && suiteKilledKeys(report);
    if (!killed) {
      problems.push(`${file}: no mutation report of ${search.package}`);
      continue;
    }
    const { line, section } = searchSection(search, killed, problems);
    searchLines.push(line);
    searchSections.push(section);
  }
  const model = modelReports(join(here, 'reports', 'model'), problems);
  if (model) {
    const name = 'dshc-model';
    const { line, section } = packageSection(name, tallyCargoMutants(model.reports), classifiedOf(name), problems, missed);
    lines.push(line.replace(`| ${name} |`, `| ${name} (Rust, cargo-mutants)${model.partial} |`));
    sections.push(section.replace(`### ${name}\n`, `### ${name}\n\nRun at commit \`${model.commit}\`; CI mutates the lines changed since.\n`));
  }
  const text = [
    '# Mutation testing: the gate\'s power',
    '',
    'Written by `node mutation/summarize.mjs` from the reports in `mutation/reports/` and the',
    'classification in `mutation/survivors/`; how to run it is in `mutation/README.md`. A mutant is',
    'killed when `dshc check` of its level fails on it (for the model crate: when the suite fails on',
    'the reference built with it); the score is the killed and timed-out share',
    'of the mutants that ran, and the observable score leaves the equivalent mutants out. A survivor',
    'not yet analysed one by one is classed missed, the conservative class, and its why says so.',
    '',
    '| package | mutants | killed | survived | timed out | errors | score | observable score | equivalent | TypeScript or Rust only | missed | unclassified |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...lines,
    '',
    'Classes:',
    '',
    ...Object.entries(CLASSES).map(([name, meaning]) => `- \`${name}\`: ${meaning.split(': ')[1]}.`),
    '',
    '## Survivors',
    '',
    ...sections,
    ...(searchLines.length ? [
      '## The search\'s share of the suite-killed mutants',
      '',
      'Written from `mutation/reports/search/` (`mutation/search PACKAGE`): each mutant the suite kills',
      'is switched on in the node-dsh adapter and hunted by `dshc diff` of its levels, with no',
      'scenario file; the search finds it when a case of the seed disagrees with the reference (or',
      'cannot run) within the cases given, at each level. Upstream\'s known disagreements are not',
      'counted as finding anything.',
      '',
      '| package | levels | seed | cases per level | suite-killed | hunted | found by the search | share | median case of those found |',
      '|---|---|---|---|---|---|---|---|---|',
      ...searchLines,
      '',
      'The mutants the suite kills and the search did not find, per package:',
      '',
      ...searchSections,
    ] : []),
  ].join('\n');
  const out = join(here, 'REPORT.md');
  if (check) {
    if (!existsSync(out) || readFileSync(out, 'utf8') !== text) problems.push('mutation/REPORT.md is stale: run node mutation/summarize.mjs');
  } else {
    // A temporary file renamed over the old report: a failed write never
    // leaves a truncated REPORT.md.
    replaceFile(out, text);
  }
  if (strict) problems.push(...missed);
  else if (missed.length) console.error(`${missed.length} survivor(s) classified missed: gaps still to close (--strict fails on them)`);
  for (const problem of problems) console.error(problem);
  process.exitCode = problems.length ? 1 : 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main();
