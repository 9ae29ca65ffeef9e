// The media type a doc is served with (docs/files.md): its upload's Content-Type, kept when it
// is one (type/subtype and token parameters, at most 255 characters), else
// application/octet-stream. Only a few types, which a browser shows without running anything
// of the file, may be asked for inline; the rest is always an attachment.

export const OCTET_STREAM = "application/octet-stream";
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(\\s*;\\s*${TOKEN}=${TOKEN})*$`);
const MAX_LENGTH = 255;

export function keptMediaType(header: string | undefined): string {
	const text = header?.trim() ?? "";
	if (text.length === 0 || text.length > MAX_LENGTH || !MEDIA_TYPE.test(text)) return OCTET_STREAM;
	const [essence, ...parameters] = text.split(";");
	return [essence!.trim().toLowerCase(), ...parameters.map((parameter) => parameter.trim())].join("; ");
}

const INLINE = new Set(["application/pdf", "image/png", "image/jpeg", "image/gif", "image/webp", "text/plain"]);

export function showsInline(mediaType: string): boolean {
	const essence = mediaType.split(";")[0]!.trim().toLowerCase();
	return INLINE.has(essence) || /^(audio|video)\/[^/]+$/.test(essence);
}
