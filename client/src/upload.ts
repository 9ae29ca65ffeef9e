// A doc goes up in three steps (docs/files.md): an upload URL (POST /cache), the bytes PUT there
// with their Content-Length and Content-Type, then the upload attached under a name on a twin
// with the SHA-256 the client computed itself, so that bytes changed on the way attach nothing.

// What uploadDoc takes.
export type DocUpload = {
	twin: string;
	// The doc's name on the twin; folders are written with "/", as in "manuals/pump.pdf".
	name: string;
	// The bytes; read whole, to hash them before they go.
	body: Uint8Array | ArrayBuffer | Blob | string;
	// The Content-Type of the PUT: a Blob's own type, else application/octet-stream.
	contentType?: string;
	description?: Record<string, unknown> | null;
	storageClass?: "access_optimized" | "cost_optimized";
	// When the upload URL ends, if sooner than the hour it is given by default.
	validityTs?: number;
};

export async function bytesOf(body: DocUpload["body"]): Promise<Uint8Array> {
	if (typeof body === "string") return new TextEncoder().encode(body);
	if (body instanceof Uint8Array) return body;
	if (body instanceof ArrayBuffer) return new Uint8Array(body);
	return new Uint8Array(await body.arrayBuffer());
}

// Lowercase hex SHA-256, with WebCrypto (browsers, Node 20 and later, Workers).
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
	const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
	return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join("");
}
