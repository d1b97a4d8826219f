// Runs one original evaluator over JSON Lines requests, one answer per line.
//
//   node parity/harness.mjs <original-script.mjs>  < requests > answers
//
// A request is {"id": ..., "input": ...}; it never carries `expected`, so the
// original cannot be helped by the answer it is checked against. Each request
// line gets exactly one answer line, in order, written as soon as it is ready,
// so one long-lived process can be driven request by request:
//
//   {"id": ..., "result": <what evaluate returned>}
//   {"id": ..., "threw": "TypeError: ..."}        evaluate threw: String(error)
//
// A line that is not a request (not JSON, no "input") is answered with a
// "threw" line too, its id null when none can be read, instead of ending the
// process, so the answers stay in step with the requests. The original's own
// self-check line goes to stderr.
//
// Node built-ins only: the parity check must not depend on an npm package.
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { loadEvaluate } from './load-original.mjs';

// String(error) can itself throw (an object without a prototype); the reply
// must still be written.
function describe(error) {
  try {
    return String(error);
  } catch {
    return Object.prototype.toString.call(error);
  }
}

function answer(evaluate, line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch (error) {
    return JSON.stringify({ id: null, threw: describe(error) });
  }
  if (request === null || typeof request !== 'object' || Array.isArray(request)) {
    const error = new TypeError('a request must be a JSON object {"id", "input"}');
    return JSON.stringify({ id: null, threw: describe(error) });
  }
  const id = request.id === undefined ? null : request.id;
  if (!Object.hasOwn(request, 'input')) {
    const error = new TypeError('a request must have an "input" member');
    return JSON.stringify({ id, threw: describe(error) });
  }
  try {
    // Stringify inside the try: a result JSON cannot hold is an answer too.
    return JSON.stringify({ id, result: evaluate(request.input) });
  } catch (error) {
    return JSON.stringify({ id, threw: describe(error) });
  }
}

async function main(argv) {
  if (argv.length !== 1) {
    process.stderr.write('usage: node parity/harness.mjs <original-script.mjs>\n');
    return 2;
  }
  const { evaluate, selfCheck } = await loadEvaluate(argv[0]);
  if (typeof evaluate !== 'function') {
    process.stderr.write(`${argv[0]} defines no function evaluate\n`);
    return 2;
  }
  process.stderr.write(selfCheck + '\n');

  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    // Wait out a full pipe rather than buffer a whole batch in memory.
    if (!process.stdout.write(answer(evaluate, line) + '\n')) {
      await once(process.stdout, 'drain');
    }
  }
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
