// Loads an original evaluator script and hands back its `evaluate`.
//
// The script is run exactly as written, its own assert loop included; the
// only addition is a separate line after it that exports `evaluate`, since a
// module keeps its top-level functions private. `moduleSource` returns the
// exact text Node runs, so a test can prove the original is in it verbatim.
import { readFile } from 'node:fs/promises';

export const EXPORT_LINE = '\nexport { evaluate };\n';

export function moduleSource(originalText) {
  return originalText + EXPORT_LINE;
}

// The original prints one self-check line with console.log; keep stdout for
// results by capturing that line and returning it instead.
export async function loadEvaluate(scriptPath) {
  const original = await readFile(scriptPath, 'utf8');
  const url = 'data:text/javascript;charset=utf-8,' + encodeURIComponent(moduleSource(original));
  const printed = [];
  const log = console.log;
  console.log = (...args) => { printed.push(args.join(' ')); };
  try {
    const module = await import(url);
    return { evaluate: module.evaluate, selfCheck: printed.join('\n') };
  } finally {
    console.log = log;
  }
}
