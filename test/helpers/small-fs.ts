// Test helper: small real filesystems that run out of room, for the log store's full-disk tests. Mounting needs
// root (CAP_SYS_ADMIN); a test that cannot mount fails with a message saying so rather than skipping.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from './logstore.js';

export interface SmallFs {
  /** Where the filesystem is mounted. */
  dir: string;
  /** Gives the filesystem this many bytes: room comes back (or goes). */
  resize(bytes: number): void;
  /** Unmounts everything and removes the temporary directory (stop every process using it first). */
  cleanup(): void;
}

function run(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0)
    throw new Error(
      `${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}): ${(r.stderr || r.stdout || String(r.error)).trim()}` +
        (process.getuid?.() === 0 ? '' : ' (this test mounts a small filesystem, which needs root: run it as root)'),
    );
}

function unmount(dir: string): void {
  // Lazy: a process of a failed test may still hold a file open; the mount goes once it lets go.
  spawnSync('umount', ['-l', dir]);
}

/** A tmpfs of `bytes`: writes past it fail with ENOSPC. */
export function mountTmpfs(bytes: number): SmallFs {
  const root = tempDir('tidepool-tmpfs-');
  const dir = path.join(root, 'fs');
  mkdirSync(dir);
  try {
    run('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tidepool-test', dir]);
  } catch (err) {
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
  return {
    dir,
    resize: (size) => run('mount', ['-o', `remount,size=${size}`, dir]),
    cleanup() {
      unmount(dir);
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export interface FreezableFs extends SmallFs {
  /** Freezes the filesystem (fsfreeze): every write to it blocks, uninterruptibly, until thaw(), as on a stalled disk. */
  freeze(): void;
  /** Thaws it (a no-op when it is not frozen). Call before stopping a process that writes there: a thread blocked in a
   *  write to a frozen filesystem cannot be killed until then. */
  thaw(): void;
}

/** An ext4 filesystem of `bytes` on a loop device (a sparse image in a temporary directory), which can be frozen. */
export function mountFreezable(bytes: number): FreezableFs {
  const root = tempDir('tidepool-freeze-');
  const dir = path.join(root, 'fs');
  const image = path.join(root, 'fs.img');
  mkdirSync(dir);
  try {
    run('truncate', ['-s', String(bytes), image]);
    run('mkfs.ext4', ['-q', '-F', image]);
    run('mount', ['-o', 'loop', image, dir]);
  } catch (err) {
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
  const thaw = () => void spawnSync('fsfreeze', ['-u', dir]);
  return {
    dir,
    resize() {
      throw new Error('an ext4 image keeps its size');
    },
    freeze: () => run('fsfreeze', ['-f', dir]),
    thaw,
    cleanup() {
      thaw();
      unmount(dir);
      rmSync(root, { recursive: true, force: true });
    },
  };
}
