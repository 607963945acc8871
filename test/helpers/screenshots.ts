// Test helper: compares a page's screenshot with the kept one in test/e2e/__screenshots__ (pixelmatch on pngjs-decoded images).
import { existsSync, mkdirSync, writeFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import pixelmatch from 'pixelmatch';
import { PNG } from 'pngjs';

export const SCREENSHOT_DIR = path.resolve('test/e2e/__screenshots__');

/** Share of pixels allowed to differ (about 100 of 1280x800). Two runs in the same Chromium differ by 0 pixels
 * (anti-aliasing is not counted); a changed word, badge or layout differs by hundreds. Values are checked as text. */
export const DEFAULT_TOLERANCE = 0.0001;

/** pixelmatch's per-pixel colour distance (0..1) under which two pixels count as equal. */
const PIXEL_THRESHOLD = 0.1;

export interface CompareResult {
  /** `WxH` of each image when they differ in size (then every pixel counts as mismatched). */
  sizes: string | null;
  width: number;
  height: number;
  mismatched: number;
  ratio: number;
  diff: PNG;
}

/** Compares two PNG files' pixels; images of different sizes are a mismatch of every pixel. */
export function comparePngs(actual: Buffer, expected: Buffer): CompareResult {
  const a = PNG.sync.read(actual);
  const e = PNG.sync.read(expected);
  const width = Math.max(a.width, e.width);
  const height = Math.max(a.height, e.height);
  const diff = new PNG({ width, height });
  if (a.width !== e.width || a.height !== e.height) {
    return {
      sizes: `${a.width}x${a.height} against ${e.width}x${e.height}`,
      width,
      height,
      mismatched: width * height,
      ratio: 1,
      diff,
    };
  }
  const mismatched = pixelmatch(a.data, e.data, diff.data, width, height, { threshold: PIXEL_THRESHOLD });
  return { sizes: null, width, height, mismatched, ratio: mismatched / (width * height), diff };
}

export interface ScreenshotOptions {
  /** Parts of the page whose content changes between runs (timestamps, pids, memory): painted over. */
  mask?: Locator[];
  tolerance?: number;
}

/**
 * Screenshots `page` and compares it with `<name>.png`. The shot is always written as `<name>.tmp.png` (ignored by
 * git); on a mismatch a `<name>.diff.tmp.png` shows the differing pixels in red and the test fails with the ratio.
 * UPDATE_SCREENSHOTS=1 rewrites `<name>.png` instead of comparing.
 */
export async function expectScreenshot(page: Page, name: string, o: ScreenshotOptions = {}): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const kept = path.join(SCREENSHOT_DIR, `${name}.png`);
  const shot = await page.screenshot({
    animations: 'disabled',
    caret: 'hide',
    mask: o.mask ?? [],
    maskColor: '#ff00ff',
  });
  if (process.env['UPDATE_SCREENSHOTS']) {
    writeFileSync(kept, shot);
    return;
  }
  const actualFile = path.join(SCREENSHOT_DIR, `${name}.tmp.png`);
  writeFileSync(actualFile, shot);
  if (!existsSync(kept)) {
    throw new Error(
      `no kept screenshot ${path.relative(process.cwd(), kept)} to compare with (this run's is ${path.relative(process.cwd(), actualFile)}): run the test with UPDATE_SCREENSHOTS=1, check the image and commit it`,
    );
  }
  const r = comparePngs(shot, readFileSync(kept));
  const tolerance = o.tolerance ?? DEFAULT_TOLERANCE;
  if (r.ratio > tolerance) {
    const diffFile = path.join(SCREENSHOT_DIR, `${name}.diff.tmp.png`);
    writeFileSync(diffFile, PNG.sync.write(r.diff));
    throw new Error(
      `screenshot ${name} differs from the kept one${r.sizes ? ` (size ${r.sizes})` : ''}: ${r.mismatched} of ${r.width * r.height} pixels (ratio ${r.ratio.toFixed(5)} > tolerance ${tolerance}); ` +
        `this run: ${path.relative(process.cwd(), actualFile)}, diff: ${path.relative(process.cwd(), diffFile)}; if the change is intended, rerun with UPDATE_SCREENSHOTS=1 and commit the new image`,
    );
  }
}
