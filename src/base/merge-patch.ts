import type { Json } from "./json";

// RFC 7396 JSON Merge Patch: an object patch merges into the target member by member,
// recursively, and a null member removes that member; any other patch (an array too) replaces
// the target whole. A target that is not an object counts as an empty one. Members keep their
// place and new ones come last, as SQLite's json_patch leaves them. The result is built with
// Object.fromEntries, so no key (not even "__proto__") is taken for the prototype's setter.
export function mergePatch(target: Json | undefined, patch: Json): Json {
	if (!isObject(patch)) return patch;
	const merged = new Map(Object.entries(isObject(target) ? target : {}));
	for (const [key, value] of Object.entries(patch)) {
		if (value === null) merged.delete(key);
		else merged.set(key, mergePatch(merged.get(key), value));
	}
	return Object.fromEntries(merged);
}

function isObject(value: Json | undefined): value is { [key: string]: Json } {
	return value !== null && typeof value === "object" && !Array.isArray(value);
}
