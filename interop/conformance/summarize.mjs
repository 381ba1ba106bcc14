// Counts the checks of the conformance suite's server scenarios, one line per scenario,
// from the checks.json files the suite wrote (`conformance server -o DIR`), against the
// known failures of expected-failures.yml.
//
//   node summarize.mjs RESULTS_DIR BASELINE|- SCENARIO...
//
// A scenario with no checks.json (the suite crashed or timed out) counts as one failure.
// A check listed in the baseline that fails is "expected". Several checks of a scenario
// may share one id (one per case): a listed id none of whose checks fails any more is
// "stale" and counts as one failure (the line should go); while one of them still fails,
// the others that pass count as passed. The closing line is "N passed, N failed"
// (failed = unexpected failures + stale entries + scenarios without results); the exit
// status is 1 if that is not 0.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [resultsDir, baselinePath, ...scenarios] = process.argv.slice(2);
if (!resultsDir || !baselinePath || scenarios.length === 0) {
  console.error('usage: node summarize.mjs RESULTS_DIR BASELINE|- SCENARIO...');
  process.exit(2);
}

/** The `server:` entries of a baseline, as "scenario:check-id" or "scenario". */
function readBaseline(path) {
  if (path === '-') return new Set();
  const entries = new Set();
  let section = null;
  for (const raw of readFileSync(path, 'utf8').split('\n')) {
    const line = raw.replace(/#.*/, '').trimEnd();
    if (!line.trim()) continue;
    const header = /^(\w+):\s*$/.exec(line);
    if (header) {
      section = header[1];
      continue;
    }
    const entry = /^\s+-\s+(\S+)$/.exec(line);
    if (!entry) throw new Error(`${path}: cannot read the line ${JSON.stringify(raw)}`);
    if (section === 'server') entries.add(entry[1]);
  }
  return entries;
}

const baseline = readBaseline(baselinePath);
const dirs = readdirSync(resultsDir);
const totals = { passed: 0, failed: 0, stale: 0, expected: 0, skipped: 0, other: 0 };
const problems = [];
const width = Math.max(...scenarios.map((s) => s.length));

for (const scenario of scenarios) {
  // The suite names each result folder server-<scenario>-<timestamp>.
  const dir = dirs.filter((d) => d.startsWith(`server-${scenario}-`)).sort().pop();
  let checks;
  try {
    checks = JSON.parse(readFileSync(join(resultsDir, dir ?? '?', 'checks.json'), 'utf8'));
  } catch {
    console.log(`${scenario.padEnd(width)}  no results (the suite did not finish this scenario)`);
    problems.push(`${scenario}: no checks.json`);
    totals.failed += 1;
    continue;
  }
  const counts = { passed: 0, failed: 0, stale: 0, expected: 0, skipped: 0, other: 0 };
  const failing = new Set(checks.filter((c) => c.status === 'FAILURE').map((c) => c.id));
  const stale = new Set();
  for (const check of checks) {
    const key = `${scenario}:${check.id}`;
    const known = baseline.has(key) || baseline.has(scenario);
    if (check.status === 'SUCCESS' && baseline.has(key) && !failing.has(check.id)) {
      // Passing is good news, but the baseline must say so: counted as a failure.
      if (!stale.has(key)) {
        stale.add(key);
        counts.stale += 1;
        problems.push(`${key}: passes now, remove it from the baseline (stale)`);
      }
    } else if (check.status === 'SUCCESS') {
      counts.passed += 1;
    } else if (check.status === 'FAILURE') {
      if (known) {
        counts.expected += 1;
      } else {
        counts.failed += 1;
        problems.push(`${key}: ${check.errorMessage ?? 'failed'}`);
      }
    } else if (check.status === 'SKIPPED') {
      counts.skipped += 1;
      problems.push(`${key}: skipped by the suite: ${check.errorMessage ?? ''}`);
    } else {
      counts.other += 1;
    }
  }
  counts.failed += counts.stale;
  const extra = [
    counts.stale ? `${counts.stale} stale baseline entries (counted as failed)` : null,
    counts.expected ? `${counts.expected} expected failures` : null,
    counts.skipped ? `${counts.skipped} skipped` : null,
    counts.other ? `${counts.other} info/warning` : null
  ].filter(Boolean);
  console.log(
    `${scenario.padEnd(width)}  ${counts.passed} passed, ${counts.failed} failed` +
      (extra.length ? ` (${extra.join(', ')})` : '')
  );
  for (const k of Object.keys(totals)) totals[k] += counts[k];
}

if (problems.length) {
  console.log('\nnotes:');
  for (const problem of problems) console.log(`  - ${problem}`);
}
console.log(
  `\ntotal: ${totals.passed} checks passed, ${totals.failed} failed, ` +
    `${totals.expected} expected failures, ${totals.skipped} skipped, ${totals.other} info/warning`
);
console.log(`${totals.passed} passed, ${totals.failed} failed`);
process.exit(totals.failed === 0 ? 0 : 1);
