// Counts the checks of the conformance suite's server scenarios, one line per scenario and
// wire, from the checks.json files the suite wrote (`conformance server -o DIR/<wire>`):
// totals per wire and for the server, against the known failures of the baseline and the
// scenarios of not-applicable.txt.
//
//   node summarize.mjs SERVER RESULTS_DIR BASELINE|- NOT_APPLICABLE|- SCENARIO@WIRE...
//
// - A scenario with no checks.json (the suite crashed or timed out) counts as one failure.
// - A scenario that not-applicable.txt lists (by name, or by a `prefix-*` pattern) is run
//   and reported, and its checks are not counted. An entry that matches no scenario run, or
//   whose scenarios all pass on every wire, is stale: one failure (remove it).
// - A check the baseline lists (`scenario:check-id`, or a whole `scenario`) that fails is
//   "expected". Several checks of a scenario may share one id (one per case): a listed id
//   none of whose checks fails any more, or a listed scenario none of whose checks fails, is
//   stale and counts as one failure (the line should go); while one of them still fails,
//   the others that pass count as passed.
// - SKIPPED (the suite's own decision), WARNING and INFO checks are counted apart.
// The closing line is "N passed, N failed" (failed = unexpected failures + stale entries +
// scenarios without results); the exit status is 1 if that is not 0.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [server, resultsDir, baselinePath, notApplicablePath, ...items] = process.argv.slice(2);
if (!server || !resultsDir || !baselinePath || !notApplicablePath || items.length === 0) {
  console.error(
    'usage: node summarize.mjs SERVER RESULTS_DIR BASELINE|- NOT_APPLICABLE|- SCENARIO@WIRE...'
  );
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

/** The entries of not-applicable.txt: `scenario  # reason` or `prefix-*  # reason`. */
function readNotApplicable(path) {
  if (path === '-') return [];
  const entries = [];
  for (const raw of readFileSync(path, 'utf8').split('\n')) {
    if (/^\s*(#|$)/.test(raw)) continue;
    const entry = /^\s*(\S+)\s+#\s*(\S.*)$/.exec(raw);
    if (!entry) throw new Error(`${path}: each line is "scenario  # reason": ${JSON.stringify(raw)}`);
    const [, pattern, reason] = entry;
    const matches = pattern.endsWith('*')
      ? (name) => name.startsWith(pattern.slice(0, -1))
      : (name) => name === pattern;
    entries.push({ pattern, reason, matches, ran: 0, failing: 0 });
  }
  return entries;
}

/** The checks a scenario left at a wire, or null: the newest `server-<scenario>-<time>`. */
function checksOf(scenario, wire) {
  let dirs;
  try {
    dirs = readdirSync(join(resultsDir, wire));
  } catch {
    return null;
  }
  const escaped = scenario.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const named = new RegExp(`^server-${escaped}-\\d{4}-\\d\\d-\\d\\dT[\\d-]+Z$`);
  const dir = dirs.filter((d) => named.test(d)).sort().pop();
  if (!dir) return null;
  try {
    return JSON.parse(readFileSync(join(resultsDir, wire, dir, 'checks.json'), 'utf8'));
  } catch {
    return null;
  }
}

const baseline = readBaseline(baselinePath);
const notApplicable = readNotApplicable(notApplicablePath);
const zero = () => ({ passed: 0, failed: 0, stale: 0, expected: 0, skipped: 0, other: 0 });
const wires = [...new Set(items.map((item) => item.split('@')[1]))].sort();
const perWire = Object.fromEntries(wires.map((wire) => [wire, zero()]));
const total = zero();
const problems = [];
/** Checks the suite skipped, per `scenario@wire` and reason: how many. */
const skipped = new Map();
const notes = [];
const width = Math.max(...items.map((item) => item.split('@')[0].length));
// Baseline entries still failing somewhere, and those seen at all.
const baselineFailing = new Set();
const baselineSeen = new Set();

for (const wire of wires) {
  console.log(`\n-- ${server}, wire ${wire}`);
  for (const item of items.filter((i) => i.split('@')[1] === wire)) {
    const scenario = item.split('@')[0];
    const label = scenario.padEnd(width);
    const na = notApplicable.find((entry) => entry.matches(scenario));
    const checks = checksOf(scenario, wire);
    if (na) {
      na.ran += 1;
      const failing = checks ? checks.filter((c) => c.status === 'FAILURE').length : 1;
      if (failing > 0) na.failing += 1;
      const passing = checks ? checks.filter((c) => c.status === 'SUCCESS').length : 0;
      console.log(
        `${label}  not applicable (${na.pattern}): ${passing} passed, ${failing} failed, not counted`
      );
      continue;
    }
    if (!checks) {
      console.log(`${label}  no results (the suite did not finish this scenario)`);
      problems.push(`${scenario}@${wire}: no checks.json`);
      perWire[wire].failed += 1;
      continue;
    }
    const counts = zero();
    const failing = new Set(checks.filter((c) => c.status === 'FAILURE').map((c) => c.id));
    if (baseline.has(scenario)) {
      baselineSeen.add(scenario);
      if (failing.size > 0) baselineFailing.add(scenario);
    }
    for (const check of checks) {
      const key = `${scenario}:${check.id}`;
      const known = baseline.has(key) || baseline.has(scenario);
      if (baseline.has(key)) {
        baselineSeen.add(key);
        if (failing.has(check.id)) baselineFailing.add(key);
      }
      if (check.status === 'SUCCESS') {
        counts.passed += baseline.has(key) && !failing.has(check.id) ? 0 : 1;
      } else if (check.status === 'FAILURE') {
        if (known) {
          counts.expected += 1;
        } else {
          counts.failed += 1;
          problems.push(`${key}@${wire}: ${check.errorMessage ?? 'failed'}`);
        }
      } else if (check.status === 'SKIPPED') {
        counts.skipped += 1;
        const why = `${scenario}@${wire}: ${check.errorMessage ?? '(no reason given)'}`;
        skipped.set(why, (skipped.get(why) ?? 0) + 1);
      } else {
        counts.other += 1;
      }
    }
    const extra = [
      counts.expected ? `${counts.expected} expected failures` : null,
      counts.skipped ? `${counts.skipped} skipped` : null,
      counts.other ? `${counts.other} info/warning` : null
    ].filter(Boolean);
    console.log(
      `${label}  ${counts.passed} passed, ${counts.failed} failed` +
        (extra.length ? ` (${extra.join(', ')})` : '')
    );
    for (const k of Object.keys(counts)) perWire[wire][k] += counts[k];
  }
}

// Stale entries: each one failure.
for (const entry of baseline) {
  if (baselineSeen.has(entry) && !baselineFailing.has(entry)) {
    problems.push(`${entry}: passes now, remove it from the baseline (stale)`);
    total.stale += 1;
  }
}
for (const entry of notApplicable) {
  if (entry.ran === 0) {
    notes.push(`not-applicable.txt: ${entry.pattern} matches no scenario that ran`);
  } else if (entry.failing === 0) {
    problems.push(
      `not-applicable.txt: ${entry.pattern} passes on every wire now, remove it (stale)`
    );
    total.stale += 1;
  }
}

const line = (c) =>
  `${c.passed} passed, ${c.failed} failed, ${c.expected} expected failures, ` +
  `${c.skipped} skipped, ${c.other} info/warning`;
console.log('');
for (const wire of wires) {
  console.log(`${server} at ${wire}: ${line(perWire[wire])}`);
  for (const k of Object.keys(total)) total[k] += perWire[wire][k];
}
total.failed += total.stale;
const naRuns = notApplicable.reduce((sum, entry) => sum + entry.ran, 0);
console.log(
  `${server}: ${line(total)}` +
    (naRuns ? `; ${naRuns} runs of not-applicable scenarios not counted` : '')
);
if (notApplicable.some((entry) => entry.ran > 0)) {
  console.log('\nnot applicable (not-applicable.txt), run and not counted:');
  for (const entry of notApplicable.filter((e) => e.ran > 0)) {
    console.log(`  - ${entry.pattern} (${entry.ran} runs): ${entry.reason}`);
  }
}
if (skipped.size) {
  console.log('\nskipped by the suite:');
  for (const [why, count] of skipped) console.log(`  - ${count} x ${why}`);
}
if (notes.length || problems.length) {
  console.log('\nnotes:');
  for (const note of [...notes, ...problems]) console.log(`  - ${note}`);
}
console.log(`\n${total.passed} passed, ${total.failed} failed`);
process.exit(total.failed === 0 ? 0 : 1);
