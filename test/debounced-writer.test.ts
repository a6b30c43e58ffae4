// The writer behind the Metal pipeline archive (native/core/debounced_writer.h): a burst of
// changes (a cold start's dozens of pipeline compiles) is saved once, after the burst; flush()
// and the writer's end save what is pending at once. Driven through binding._internal with real
// time: the bounds below are the rule's (a save never before `quiet` has passed since the last
// change) plus generous slack for a loaded machine.
import { describe, expect, it } from 'vitest';
import { loadBinding } from '../lib/native';

type Run = { writes: number[]; atEnd: number };
const internal = (loadBinding() as unknown as {
  _internal: { debouncedWrites(quietMs: number, changesAtMs: number[], flushAtMs: number, endAtMs: number, destroyAtEnd: boolean): Run };
})._internal;
const every = (from: number, to: number, step: number) => Array.from({ length: Math.floor((to - from) / step) + 1 }, (_, i) => from + i * step);

describe('DebouncedWriter', () => {
  it('a burst of changes is saved once, after the last change plus the quiet time', () => {
    const r = internal.debouncedWrites(150, every(0, 200, 10), -1, 700, true);
    expect(r.writes.length).toBe(1);
    expect(r.writes[0]).toBeGreaterThanOrEqual(350);
    expect(r.atEnd).toBe(1);
  });

  it('two bursts apart by more than the quiet time are saved twice, each after its burst', () => {
    const r = internal.debouncedWrites(100, [...every(0, 50, 10), ...every(500, 550, 10)], -1, 1000, true);
    expect(r.writes.length).toBe(2);
    expect(r.writes[0]).toBeGreaterThanOrEqual(150);
    expect(r.writes[0]).toBeLessThan(500);
    expect(r.writes[1]).toBeGreaterThanOrEqual(650);
  });

  it('flush() saves a pending change at once, and nothing is saved again without a change', () => {
    const r = internal.debouncedWrites(300, [0], 20, 600, true);
    expect(r.writes.length).toBe(1);
    expect(r.writes[0]).toBeGreaterThanOrEqual(20);
    expect(r.writes[0]).toBeLessThan(300);
  });

  it('the writer\'s end saves what is pending; with nothing changed nothing is saved', () => {
    const pending = internal.debouncedWrites(5000, [0], -1, 50, true);
    expect(pending.atEnd).toBe(0);
    expect(pending.writes.length).toBe(1);
    const idle = internal.debouncedWrites(10, [], -1, 50, true);
    expect(idle.writes.length).toBe(0);
  });
});
