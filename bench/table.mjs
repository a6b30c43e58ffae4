#!/usr/bin/env node
// Renders a bench JSON document as the Markdown table PERFORMANCE.md shows.
//
//   node bench/table.mjs [file.json]                        print it (default: bench/results/linux-x64.json)
//   node bench/table.mjs [file.json] --update-performance   replace the table in PERFORMANCE.md (between
//                                                           its bench-table markers)
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderMarkdown, replaceTable } from './format.mjs';

const USAGE = 'usage: node bench/table.mjs [file.json] [--update-performance]';
const args = process.argv.slice(2);
for (const a of args.filter((x) => x.startsWith('-'))) {
  if (a === '--update-performance') continue;
  if (a === '--help' || a === '-h') {
    console.log(USAGE);
    process.exit(0);
  }
  const moved = a === '--update-readme' ? ' (the table moved from README.md to PERFORMANCE.md: --update-performance)' : '';
  console.error(`unknown option ${a}${moved}\n${USAGE}`);
  process.exit(2);
}
const update = args.includes('--update-performance');
const file = args.find((a) => !a.startsWith('-')) ?? fileURLToPath(new URL('./results/linux-x64.json', import.meta.url));
const table = renderMarkdown(JSON.parse(readFileSync(file, 'utf8')));

if (!update) {
  process.stdout.write(`${table}\n`);
} else {
  const doc = fileURLToPath(new URL('../PERFORMANCE.md', import.meta.url));
  writeFileSync(doc, replaceTable(readFileSync(doc, 'utf8'), table));
  process.stderr.write(`PERFORMANCE.md: table updated from ${file}\n`);
}
