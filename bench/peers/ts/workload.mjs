// Peer workload: the official TypeScript MCP SDK's InMemoryTaskStore.
//
// Usage: node --expose-gc workload.mjs [--n N] [--runs R] [--list-max-pages K]
// (env N, RUNS and LIST_MAX_PAGES are read as defaults).
//
// Prints one JSON line per phase per run on stdout; everything else goes to stderr.
// See ../README.md for what is measured and the caveats.

import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { readFileSync } from 'node:fs';

// The package's exports map sends "./*" into dist/, so read its package.json by path.
const SDK_VERSION = JSON.parse(
  readFileSync(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url), 'utf8'),
).version;
const IMPL = `ts-sdk-${SDK_VERSION}`;

function parseArgs(argv) {
  const opts = {
    n: Number(process.env.N ?? 100000),
    runs: Number(process.env.RUNS ?? 3),
    listMaxPages: Number(process.env.LIST_MAX_PAGES ?? 100),
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => {
      const x = argv[++i];
      if (x === undefined) throw new Error(`missing value for ${a}`);
      return Number(x);
    };
    if (a === '--n') opts.n = v();
    else if (a === '--runs') opts.runs = v();
    else if (a === '--list-max-pages') opts.listMaxPages = v();
    else throw new Error(`unknown argument ${a}`);
  }
  for (const [k, x] of Object.entries(opts)) {
    if (!Number.isInteger(x) || x < 0) throw new Error(`bad ${k}: ${x}`);
  }
  if (opts.n < 1 || opts.runs < 1) throw new Error('n and runs must be >= 1');
  return opts;
}

function fail(msg) {
  throw new Error(`[${IMPL}] self-check failed: ${msg}`);
}

const now = () => process.hrtime.bigint();
const gc = typeof globalThis.gc === 'function' ? globalThis.gc : null;
function collect() {
  if (gc) {
    gc();
    gc();
  }
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

async function runOnce(n, run, listMaxPages) {
  const store = new InMemoryTaskStore();
  const ids = new Array(n);
  const line = (phase, nsPerOp, extra = {}) =>
    emit({ impl: IMPL, n, run, phase, ns_per_op: Math.round(nsPerOp * 10) / 10, ...extra });

  try {
    collect();
    const heapBefore = process.memoryUsage().heapUsed;

    // 1. create: fresh request object per task, as a server has a freshly parsed request per call.
    let t0 = now();
    for (let i = 0; i < n; i++) {
      const task = await store.createTask(
        { ttl: 60000 },
        i + 1,
        { method: 'tools/call', params: { name: 'sleep', arguments: {} } },
      );
      ids[i] = task.taskId;
    }
    let dt = Number(now() - t0);
    line('create', dt / n);
    if (new Set(ids).size !== n) fail('task ids not unique');
    // memory, without results: each task holds its request and a live ttl timer
    let heapCreated = null;
    if (gc) {
      collect();
      heapCreated = process.memoryUsage().heapUsed;
    }

    // 2. get
    collect();
    let ok = 0;
    t0 = now();
    for (let i = 0; i < n; i++) {
      const t = await store.getTask(ids[i]);
      if (t !== null && t.status === 'working') ok++;
    }
    dt = Number(now() - t0);
    line('get', dt / n);
    if (ok !== n) fail(`get: ${ok}/${n} tasks found in status working`);

    // 3. update: working -> input_required -> working (ns per single update)
    collect();
    t0 = now();
    for (let i = 0; i < n; i++) {
      await store.updateTaskStatus(ids[i], 'input_required');
      await store.updateTaskStatus(ids[i], 'working');
    }
    dt = Number(now() - t0);
    line('update', dt / (2 * n));

    // 4. store: the completed result (storeTaskResult also moves the task to 'completed')
    collect();
    t0 = now();
    for (let i = 0; i < n; i++) {
      await store.storeTaskResult(ids[i], 'completed', {
        content: [{ type: 'text', text: 'done' }],
        isError: false,
      });
    }
    dt = Number(now() - t0);
    line('store', dt / n);

    // memory: bytes_per_task right after create (no result yet, as the Rust example
    // counts it); with_result: after the store phase, with the result and re-armed timer.
    if (gc) {
      collect();
      const heapStored = process.memoryUsage().heapUsed;
      const per = (bytes) => Math.round((bytes / n) * 10) / 10;
      emit({
        impl: IMPL, n, run, phase: 'bytes_per_task',
        bytes_per_task: per(heapCreated - heapBefore),
        bytes_per_task_with_result: per(heapStored - heapBefore),
        method: 'V8 heapUsed growth after forced gc: tasks with ttl timer and request, no result',
      });
    } else if (run === 1) {
      process.stderr.write(`[${IMPL}] no global gc (run node with --expose-gc): skipping bytes_per_task\n`);
    }

    // 5. result
    collect();
    ok = 0;
    t0 = now();
    for (let i = 0; i < n; i++) {
      const r = await store.getTaskResult(ids[i]);
      if (r.content[0].text === 'done') ok++;
    }
    dt = Number(now() - t0);
    line('result', dt / n);
    if (ok !== n) fail(`result: ${ok}/${n} results present`);
    for (const i of [0, n >> 1, n - 1]) {
      const t = await store.getTask(ids[i]);
      if (t?.status !== 'completed') fail(`task ${i} is ${t?.status}, expected completed`);
    }

    // 6. list: follow nextCursor until absent, or stop after listMaxPages pages (0 = no cap).
    // The SDK store's listTasks copies and filters every key, then indexOf()s the cursor on
    // every page: O(N) per page, O(N^2/page_size) for the full walk.
    collect();
    let listed = 0;
    let pages = 0;
    let cursor;
    let partial = false;
    t0 = now();
    for (;;) {
      const page = await store.listTasks(cursor);
      pages++;
      listed += page.tasks.length;
      cursor = page.nextCursor;
      if (cursor === undefined) break;
      if (listMaxPages > 0 && pages >= listMaxPages) {
        partial = true;
        break;
      }
    }
    dt = Number(now() - t0);
    if (listed === 0) fail('list: no task listed');
    if (!partial && listed !== n) fail(`list: ${listed} tasks listed, expected ${n}`);
    if (partial && listed !== pages * 10) fail(`list: ${listed} tasks in ${pages} full pages`);
    const extra = { pages, listed };
    if (partial) {
      extra.partial = true;
      extra.pages_total = Math.ceil(n / 10);
    }
    line('list', dt / listed, extra);
    if (partial && run === 1) {
      process.stderr.write(
        `[${IMPL}] list phase partial: walked ${pages} of ${Math.ceil(n / 10)} pages ` +
          `(${listed} of ${n} tasks); the SDK's listTasks is O(N) per page. ` +
          `Set LIST_MAX_PAGES=0 for the full walk.\n`,
      );
    }
  } finally {
    // Clear the store's ttl timers (setTimeout per task) so nothing outlives the run.
    store.cleanup();
  }
}

async function main() {
  const { n, runs, listMaxPages } = parseArgs(process.argv.slice(2));
  process.stderr.write(
    `[${IMPL}] node ${process.version}, n=${n}, runs=${runs}, list_max_pages=${listMaxPages}\n`,
  );
  for (let run = 1; run <= runs; run++) {
    const t = Date.now();
    await runOnce(n, run, listMaxPages);
    process.stderr.write(`[${IMPL}] run ${run} done in ${((Date.now() - t) / 1000).toFixed(1)} s\n`);
  }
}

main().catch((e) => {
  process.stderr.write(`${e?.stack ?? e}\n`);
  process.exit(1);
});
