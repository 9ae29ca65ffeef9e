// A value loaded on first use (a module's import), kept once loaded. The value is kept, not
// the promise: a request must not await a promise another request made (the runtime resumes
// it in that request's context, and a request that ended takes it along), so requests that
// come before the first load has ended each load it; the module itself runs once.
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
	let value: T | undefined;
	return async () => (value ??= await load());
}
