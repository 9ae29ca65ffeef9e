// A vitest reporter that prints how far the run is, one line as each test file ends:
// `[37/142] test/docs/uploads.test.ts`. `npm test` adds it to the default reporter, whose lines
// say nothing of how many files are left when the output is not a terminal (CI, a pipe).
export default class ProgressReporter {
	total = 0;
	done = 0;

	onTestRunStart(specifications) {
		this.total = specifications.length;
		this.done = 0;
	}

	onTestModuleEnd(testModule) {
		this.done += 1;
		const state = testModule.state() === "failed" ? " failed" : "";
		process.stdout.write(`[${this.done}/${this.total}] ${testModule.relativeModuleId}${state}\n`);
	}
}
