import type { Operation } from "../operations/operation";

// What the HTTP layer serves: one operation under one method and path. The table of them is
// src/routes.ts; the router, the API document and the fuzzing tests read it through this type.
export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
export type Route = { method: Method; path: string; operation: Operation };
