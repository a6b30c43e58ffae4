// PERFORMANCE.md's table is what bench/table.mjs renders from bench/results/linux-x64.json, so the
// numbers it shows are those of the committed run; and the table script's update mode splices a
// table between the markers without touching the text around them.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(__dirname, '..');

// bench/format.mjs is plain JavaScript shared with the bench scripts.
interface Format {
  renderMarkdown(doc: unknown): string;
  replaceTable(text: string, table: string): string;
  TABLE_BEGIN: string;
  TABLE_END: string;
}
const load = async (): Promise<Format> => (await import(join(root, 'bench/format.mjs'))) as Format;

describe('PERFORMANCE.md table (bench/table.mjs)', () => {
  it('is the rendering of bench/results/linux-x64.json', async () => {
    const { renderMarkdown, replaceTable } = await load();
    const doc = readFileSync(join(root, 'PERFORMANCE.md'), 'utf8');
    const table = renderMarkdown(JSON.parse(readFileSync(join(root, 'bench/results/linux-x64.json'), 'utf8')));
    expect(table).toMatch(/^\| case \| ours \| ORT \|/m);
    // Regenerate with: node bench/table.mjs --update-performance
    expect(replaceTable(doc, table)).toBe(doc);
  });

  it('replaces only what lies between the markers', async () => {
    const { replaceTable, TABLE_BEGIN, TABLE_END } = await load();
    const text = `# title\n\nbefore\n\n${TABLE_BEGIN}\nold table\n${TABLE_END}\n\nafter\n`;
    expect(replaceTable(text, '| new |')).toBe(`# title\n\nbefore\n\n${TABLE_BEGIN}\n| new |\n${TABLE_END}\n\nafter\n`);
    expect(() => replaceTable('no markers here', '| new |')).toThrow(/bench-table:begin/);
  });

  it('prints the table, and refuses an unknown option with the usage (exit 2)', () => {
    const table = join(root, 'bench/table.mjs');
    const printed = spawnSync(process.execPath, [table], { encoding: 'utf8' });
    expect(printed.status, printed.stderr).toBe(0);
    expect(printed.stdout).toMatch(/^targets: \d+ met/m);
    const old = spawnSync(process.execPath, [table, '--update-readme'], { encoding: 'utf8' });
    expect(old.status).toBe(2);
    expect(old.stderr).toMatch(/moved from README\.md to PERFORMANCE\.md: --update-performance/);
    expect(old.stderr).toMatch(/^usage: node bench\/table\.mjs/m);
  });
});
