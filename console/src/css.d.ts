// Stylesheets are imported for their effect: esbuild bundles them into the console's CSS file.
declare module "*.css";
