// The pass/fail harness the TypeScript interop clients share: scenarios with a time
// limit, checks that fail a scenario with a message, and the closing "N passed, N failed".

import { McpError } from '@modelcontextprotocol/sdk/types.js';

const SCENARIO_TIMEOUT_MS = 30_000;

let passed = 0;
let failed = 0;

export class CheckFailure extends Error {}

export function check(cond, message) {
  if (!cond) throw new CheckFailure(message);
}

export function eq(actual, expected, what) {
  check(
    actual === expected,
    `${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`,
  );
}

// Runs one scenario: PASS (with the detail `fn` returns) or FAIL with the reason.
// Returns whether it passed.
export async function scenario(name, fn) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new CheckFailure(`timed out after ${SCENARIO_TIMEOUT_MS} ms`)),
      SCENARIO_TIMEOUT_MS,
    );
  });
  try {
    const detail = await Promise.race([fn(), timeout]);
    passed += 1;
    console.log(`PASS ${name}${detail ? ` (${detail})` : ''}`);
    return true;
  } catch (err) {
    failed += 1;
    const why = err instanceof CheckFailure ? err.message : `unexpected ${describeError(err)}`;
    console.log(`FAIL ${name}: ${why}`);
    return false;
  } finally {
    clearTimeout(timer);
  }
}

export function describeError(err) {
  let text;
  if (err instanceof McpError) text = `McpError code=${err.code} message=${JSON.stringify(err.message)}`;
  else if (err instanceof Error) text = `${err.name}: ${err.message}`;
  else text = String(err);
  text = text.replace(/\s+/g, ' ');
  return text.length <= 400 ? text : `${text.slice(0, 400)}...`;
}

// Awaits `promise` and requires it to reject with a JSON-RPC error `code`.
export async function expectError(promise, code, what) {
  let result;
  try {
    result = await promise;
  } catch (err) {
    check(err instanceof McpError, `${what}: expected McpError ${code}, got ${describeError(err)}`);
    eq(err.code, code, `${what}: error code`);
    return err;
  }
  throw new CheckFailure(`${what}: expected JSON-RPC error ${code}, got result ${JSON.stringify(result)}`);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function textOf(result) {
  const block = (result?.content ?? []).find((c) => c.type === 'text');
  return block?.text;
}

// Prints "N passed, N failed" (counting `extra` failures found outside a scenario) and
// exits: 1 if anything failed or `abort` is set, 0 otherwise.
export function finish({ extra = 0, abort = false } = {}) {
  console.log(`${passed} passed, ${failed + extra} failed`);
  process.exit(abort || failed + extra > 0 ? 1 : 0);
}
