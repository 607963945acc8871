// Vite build of the pooler console into ui/dist/console (hashed assets under /assets/).
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

const here = path.dirname(fileURLToPath(import.meta.url));

export default defineConfig({
  root: here,
  base: '/',
  plugins: [react()],
  logLevel: 'warn',
  build: {
    outDir: path.resolve(here, '../dist/console'),
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    target: 'es2020',
  },
});
