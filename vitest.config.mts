import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    // One file at a time: each suite already uses every core through the addon's thread pool.
    pool: 'forks',
    fileParallelism: false,
    reporters: ['default', './test/reporters/closing-line.ts'],
  },
});
