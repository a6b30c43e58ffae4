import { configDefaults, defineConfig } from 'vitest/config';

// `vitest run` is the quick suite; `vitest run --mode full` (npm run test:all, CI) the whole one
// (test/helpers/suite.ts): it adds the cross-compiled kernel checks under qemu and wine, and the
// full seeds, rounds and planted faults of the other suites.
export default defineConfig(({ mode }) => {
  const full = mode === 'full';
  return {
    test: {
      include: ['test/**/*.test.ts'],
      exclude: full ? configDefaults.exclude : [...configDefaults.exclude, 'test/native-cpu.test.ts'],
      env: full ? { MTO_TEST_FULL: '1' } : {},
      testTimeout: 120_000,
      // One file at a time: each suite already uses every core through the addon's thread pool.
      pool: 'forks',
      fileParallelism: false,
      reporters: ['default', './test/reporters/closing-line.ts'],
    },
  };
});
