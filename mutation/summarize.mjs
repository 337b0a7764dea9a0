// Join the mutation reports (mutation/reports/) with the classification of
// every surviving mutant (mutation/survivors/) into mutation/REPORT.md: per
// package, the mutants generated, killed, survived and timed out, the score,
// and each survivor with its class and why. Exits 1 when a survivor is not
// classified, or when a classification names no surviving mutant (the report
// moved on). A survivor classified "missed" is a gap in the suite still to
// close: it is listed and counted, and fails the run under --strict.
//
//   node mutation/summarize.mjs [--check] [--strict]
//
// --check writes nothing and fails when REPORT.md is not what it would write.
import { readFileSync, readdirSync, writeFileSync, renameSync, existsSync } from 'node:fs';
import { join, basename, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const CLASSES = {
  equivalent: 'equivalent: no program can tell it from the original',
  'typescript-only': 'observable only from TypeScript: no scenario can reach it through the adapter protocol',
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

function readJson(path) {
  return JSON.parse(readFileSync(path, 'utf8'));
}

function packageSection(name, report, classified, problems, missed) {
  const { counts, survivors } = tally(report);
  const byKey = new Map(classified.map((entry) => [entry.mutant, entry]));
  const live = new Set(survivors);
  for (const entry of classified) {
    if (!live.has(entry.mutant)) problems.push(`${name}: classified but not a survivor: ${entry.mutant}`);
    if (!(entry.class in CLASSES)) problems.push(`${name}: unknown class "${entry.class}": ${entry.mutant}`);
  }
  const classes = { equivalent: 0, 'typescript-only': 0, missed: 0, unclassified: 0 };
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
  const line = `| ${name} | ${counts.mutants} | ${counts.killed} | ${counts.survived + counts.noCoverage} | ${counts.timeout} | ${counts.errors} | ${score.toFixed(1)}% | ${scoreOfObservable.toFixed(1)}% | ${classes.equivalent} | ${classes['typescript-only']} | ${classes.missed} | ${classes.unclassified} |`;
  const section = [`### ${name}`, '', '| survivor | class | why |', '|---|---|---|', ...rows, ''].join('\n');
  return { line, section: survivors.length ? section : `### ${name}\n\nNo survivors.\n` };
}

function main() {
  const check = process.argv.includes('--check');
  const strict = process.argv.includes('--strict');
  const problems = [];
  const missed = [];
  const lines = [];
  const sections = [];
  const reports = join(here, 'reports', 'upstream');
  const names = existsSync(reports) ? readdirSync(reports).filter((f) => f.endsWith('.json')).sort() : [];
  for (const file of names) {
    const name = basename(file, '.json');
    const survivorsFile = join(here, 'survivors', `${name}.json`);
    const classified = existsSync(survivorsFile) ? readJson(survivorsFile) : [];
    const { line, section } = packageSection(name, readJson(join(reports, file)), classified, problems, missed);
    lines.push(line);
    sections.push(section);
  }
  const text = [
    '# Mutation testing: the gate\'s power',
    '',
    'Written by `node mutation/summarize.mjs` from the reports in `mutation/reports/` and the',
    'classification in `mutation/survivors/`; how to run it is in `mutation/README.md`. A mutant is',
    'killed when `dshc check` of its level fails on it; the score is the killed and timed-out share',
    'of the mutants that ran, and the observable score leaves the equivalent mutants out. A survivor',
    'not yet analysed one by one is classed missed, the conservative class, and its why says so.',
    '',
    '| package | mutants | killed | survived | timed out | errors | score | observable score | equivalent | TypeScript only | missed | unclassified |',
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
  ].join('\n');
  const out = join(here, 'REPORT.md');
  if (check) {
    if (!existsSync(out) || readFileSync(out, 'utf8') !== text) problems.push('mutation/REPORT.md is stale: run node mutation/summarize.mjs');
  } else {
    // A temporary file renamed over the old report: a failed write never
    // leaves a truncated REPORT.md.
    writeFileSync(`${out}.new`, text);
    renameSync(`${out}.new`, out);
  }
  if (strict) problems.push(...missed);
  else if (missed.length) console.error(`${missed.length} survivor(s) classified missed: gaps still to close (--strict fails on them)`);
  for (const problem of problems) console.error(problem);
  process.exitCode = problems.length ? 1 : 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main();
