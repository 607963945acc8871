// Pooler benchmark measurements from /proc: a pooler's CPU time and peak RSS over a run, and the CPU that
// processes outside this benchmark (other work on the machine) took during the same run.
import { readdirSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

export function clockTicks(): number {
  const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const n = Number(r.stdout?.trim());
  return Number.isFinite(n) && n > 0 ? n : 100;
}

/** Fields of /proc/<pid>/stat after "pid (comm) ": [0] state, [1] ppid, [11] utime, [12] stime, [13] cutime, [14] cstime. */
function statFields(pid: number | 'self'): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ESRCH')
      return null;
    throw err;
  }
}

/** utime + stime of a process (all its threads) in seconds, or NaN when it is gone. */
export function cpuSeconds(pid: number, ticksPerSecond: number): number {
  const f = statFields(pid);
  return f ? (Number(f[11]) + Number(f[12])) / ticksPerSecond : Number.NaN;
}

/** cutime + cstime of this process in seconds: the CPU of its children that have exited and been waited for. */
export function reapedChildrenSeconds(ticksPerSecond: number): number {
  const f = statFields('self')!;
  return (Number(f[13]) + Number(f[14])) / ticksPerSecond;
}

/** VmRSS of a process in bytes, or NaN when it is gone. */
export function rssBytes(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : Number.NaN;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return Number.NaN;
    throw err;
  }
}

/** Busy ticks of the whole machine from /proc/stat (everything but idle and iowait, steal included). */
function machineBusyTicks(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal guest guest_nice; guest time is already inside user.
  return v.slice(0, 8).reduce((a, b) => a + b, 0) - v[3]! - v[4]!;
}

/**
 * CPU ticks of this process and every descendant, living or reaped: utime + stime + cutime + cstime summed
 * over the tree. A reaped child's time moves into its parent's cutime, so nothing is counted twice.
 */
export function treeTicks(root: number): number {
  const children = new Map<number, number[]>();
  const ticks = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const f = statFields(pid);
    if (!f) continue;
    const ppid = Number(f[1]);
    ticks.set(pid, Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]));
    const list = children.get(ppid);
    if (list) list.push(pid);
    else children.set(ppid, [pid]);
  }
  let sum = 0;
  const stack = [root];
  while (stack.length) {
    const pid = stack.pop()!;
    sum += ticks.get(pid) ?? 0;
    stack.push(...(children.get(pid) ?? []));
  }
  return sum;
}

/** Proportional set size of `pid` in bytes (smaps_rollup), or 0 when it is gone or unreadable. */
function pssBytes(pid: number): number {
  try {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** The pids of `root`'s tree (itself and every living descendant). */
export function treePids(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const f = statFields(pid);
    if (!f) continue;
    const ppid = Number(f[1]);
    const list = children.get(ppid);
    if (list) list.push(pid);
    else children.set(ppid, [pid]);
  }
  const out: number[] = [];
  const stack = [root];
  while (stack.length) {
    const pid = stack.pop()!;
    out.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** Samples a pooler's CPU time and peak RSS, and the machine's CPU taken by processes outside our tree. With `tree`
 * (a pooler that forks a process per client, pgagroal) the CPU is the whole tree's, living and reaped
 * (utime + stime + cutime + cstime), and the memory the summed PSS of the tree (its processes share their pool's
 * memory, which RSS would count once per process), sampled every 2 s. */
export class RunSampler {
  private cpu0 = 0;
  private busy0 = 0;
  private own0 = 0;
  private t0 = 0;
  private peak = 0;
  private timer: NodeJS.Timeout | null = null;

  /** `pid`: the pooler to watch, or null for a direct run (machine figures only). */
  constructor(
    private readonly pid: number | null,
    private readonly ticks: number,
    private readonly tree = false,
  ) {}

  private cpuNow(pid: number): number {
    return this.tree ? treeTicks(pid) / this.ticks : cpuSeconds(pid, this.ticks);
  }

  private memNow(pid: number): number {
    return this.tree ? treePids(pid).reduce((a, p) => a + pssBytes(p), 0) : rssBytes(pid);
  }

  start(): void {
    this.busy0 = machineBusyTicks();
    this.own0 = treeTicks(process.pid);
    this.t0 = performance.now();
    if (this.pid === null) return;
    this.cpu0 = this.cpuNow(this.pid);
    this.peak = this.memNow(this.pid);
    const pid = this.pid;
    this.timer = setInterval(
      () => {
        this.peak = Math.max(this.peak, this.memNow(pid));
      },
      this.tree ? 2000 : 200,
    );
  }

  /**
   * cpuPercent: the pooler's CPU in percent of one core over the wall time (NaN without a pooler); rssMax: its
   * peak RSS in bytes; foreignCores: CPU used meanwhile by processes this benchmark did not start, in cores.
   */
  stop(): { cpuPercent: number; cpuSeconds: number; rssMax: number; foreignCores: number } {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const wall = (performance.now() - this.t0) / 1000;
    const foreign = (machineBusyTicks() - this.busy0 - (treeTicks(process.pid) - this.own0)) / this.ticks / wall;
    if (this.pid === null)
      return { cpuPercent: Number.NaN, cpuSeconds: Number.NaN, rssMax: Number.NaN, foreignCores: Math.max(0, foreign) };
    const cpu = this.cpuNow(this.pid) - this.cpu0;
    if (!this.tree) this.peak = Math.max(this.peak, rssBytes(this.pid));
    return { cpuPercent: (cpu / wall) * 100, cpuSeconds: cpu, rssMax: this.peak, foreignCores: Math.max(0, foreign) };
  }
}

/** CPU taken by processes outside this benchmark's tree over the next `ms` milliseconds, in cores. */
export async function otherLoad(ms: number, ticks: number): Promise<number> {
  const busy0 = machineBusyTicks();
  const own0 = treeTicks(process.pid);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  const wall = (performance.now() - t0) / 1000;
  return Math.max(0, (machineBusyTicks() - busy0 - (treeTicks(process.pid) - own0)) / ticks / wall);
}
