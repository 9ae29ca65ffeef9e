import type { JobState, StepRuntime } from "./store";

// An export's stages (docs/batches.md, "Exports"): not yet written.
export async function exportStep(_rt: StepRuntime, _state: JobState): Promise<number | undefined> {
	throw new Error("Exports are not built yet");
}
