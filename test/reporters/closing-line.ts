// Prints one plain closing line, "tests: N passed, N failed, N skipped", after vitest's own
// summary, so CI logs (and tools that read them) get the counts in a runner-neutral form.
import type { Reporter, TestModule } from 'vitest/node';

export default class ClosingLineReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0, failed = unhandledErrors.length, skipped = 0;
    for (const module of modules) {
      let failedTests = 0;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failedTests++;
        else skipped++;
      }
      // A file that failed outside any test (a throwing beforeAll, an import error) counts as one
      // failure, so its skipped tests can never read as a clean run.
      failed += failedTests || (module.state() === 'failed' ? 1 : 0);
    }
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
