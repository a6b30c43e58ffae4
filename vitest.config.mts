import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    // One fork at a time: each suite already uses every core through the addon's thread pool.
    pool: 'forks',
    fileParallelism: false,
  },
});
