// esbuild bundles imported CSS into main.css; to TypeScript the import is only a side effect.
declare module "*.css";
