// The parts of jose the service uses, in one module that base/jwt.ts imports when the first
// token arrives: imported by name here, the bundler keeps only these (the whole library would
// be some 60 KB more for an isolate to compile).
export {
	createLocalJWKSet,
	createRemoteJWKSet,
	customFetch,
	decodeJwt,
	decodeProtectedHeader,
	errors,
	importJWK,
	jwtVerify,
	SignJWT,
} from "jose";
