// Test helper: the native addon for tests that compare it with its TypeScript twins; a missing addon fails them.
import { addon, type NativeAddon } from '../../src/native/index.js';

/** The loaded addon; throws (failing the test) when it is not built or TIDEPOOL_NATIVE=0 turned it off. */
export function requireAddon(): NativeAddon {
  if (addon) return addon;
  throw new Error(
    process.env.TIDEPOOL_NATIVE === '0'
      ? 'TIDEPOOL_NATIVE=0: the native addon is turned off, so it cannot be compared with its TypeScript twin'
      : 'the native addon is not built (build/Release/tidepool_native.node): npm ci builds it with node-gyp; its output says why it failed',
  );
}
