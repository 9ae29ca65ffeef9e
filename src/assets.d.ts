// Files of swagger-ui-dist imported as text (see the module rule in wrangler.toml).
declare module "swagger-ui-dist/swagger-ui-bundle.js" {
	const text: string;
	export default text;
}
declare module "swagger-ui-dist/swagger-ui.css" {
	const text: string;
	export default text;
}
