import { createRequire } from 'node:module';

/** The package version, read from package.json (one level up from src/ and from dist/). */
export const VERSION: string = (createRequire(import.meta.url)('../package.json') as { version: string }).version;
