// Seconds since the epoch, rounded to milliseconds: the API's timestamp format.
export function now(): number {
	return Math.round(Date.now()) / 1000;
}
