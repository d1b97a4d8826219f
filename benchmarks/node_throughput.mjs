// Times passes of an original evaluator's `evaluate`, one per request, so
// throughput.py can alternate Node and Python passes under the same load.
//
//   node --expose-gc benchmarks/node_throughput.mjs <evaluator> <inputs.json>
//
// <evaluator> is stage_diagnosis or ordered_extraction; the inputs file is
// {"<size class>": [batch, ...], ...}, a batch being the JSON text of an array
// of records: the very text the Python side parses.
// Prints {"node": version} once ready; then each stdin line
// {"size_class": name, "outputs": bool} gets one line back, after one pass
// over that class: {"elapsed_ns": n, "outputs": [canonical JSON, ...] | null}.
//
// Each batch is parsed afresh, and the heap collected, just before its clock
// starts, so no string hash is left over from an earlier pass and no earlier
// garbage is collected on its clock. Only the `evaluate` calls are timed,
// exactly as on the Python side. The original runs unmodified, through
// parity/load-original.mjs.
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { loadEvaluate } from '../parity/load-original.mjs';

const EVALUATORS = ['stage_diagnosis', 'ordered_extraction'];

// Python's json.dumps(ensure_ascii=True) text: JSON.stringify already escapes
// lone surrogates, so escaping every remaining non-ASCII code unit gives the
// same text, and the two sides can be compared as strings, not as objects.
function canonicalJson(value) {
  return JSON.stringify(value).replace(
    /[\u0080-\uffff]/g,
    (unit) => '\\u' + unit.charCodeAt(0).toString(16).padStart(4, '0'),
  );
}

// Results are kept, as on the Python side, so the calls cannot be optimised
// away as dead code.
function timePass(evaluate, batchTexts) {
  let elapsed = 0n;
  const results = [];
  for (const text of batchTexts) {
    const records = JSON.parse(text);
    const batchResults = new Array(records.length);
    gc();
    const start = process.hrtime.bigint();
    for (let i = 0; i < records.length; i++) batchResults[i] = evaluate(records[i]);
    elapsed += process.hrtime.bigint() - start;
    for (const result of batchResults) results.push(result);
  }
  return { elapsed, results };
}

async function main() {
  const [evaluator, inputsPath] = process.argv.slice(2);
  if (!EVALUATORS.includes(evaluator) || !inputsPath) {
    console.error(`usage: node --expose-gc node_throughput.mjs <${EVALUATORS.join('|')}> <inputs.json>`);
    return 2;
  }
  if (typeof gc !== 'function') {
    console.error('run with node --expose-gc: each batch starts from a collected heap');
    return 2;
  }
  const script = fileURLToPath(new URL(`../parity/reference/${evaluator}.mjs`, import.meta.url));
  const { evaluate } = await loadEvaluate(script);
  const batchTexts = JSON.parse(await readFile(inputsPath, 'utf8'));

  process.stdout.write(JSON.stringify({ node: process.version }) + '\n');
  for await (const line of createInterface({ input: process.stdin })) {
    const request = JSON.parse(line);
    const texts = Object.hasOwn(batchTexts, request.size_class)
      ? batchTexts[request.size_class]
      : undefined;
    if (texts === undefined) {
      console.error(`no size class ${JSON.stringify(request.size_class)} in ${inputsPath}`);
      return 2;
    }
    const { elapsed, results } = timePass(evaluate, texts);
    const outputs = request.outputs ? results.map(canonicalJson) : null;
    process.stdout.write(JSON.stringify({ elapsed_ns: Number(elapsed), outputs }) + '\n');
  }
  return 0;
}

process.exitCode = await main();
