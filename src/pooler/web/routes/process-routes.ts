// GET /api/version and /api/process: what runs, since when, and how the process is doing.
import type { FastifyInstance } from 'fastify';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { WebContext } from '../context.js';

export function registerProcessRoutes(app: FastifyInstance, ctx: WebContext): void {
  const pub = { config: { access: 'public' as const } };
  const loop = monitorEventLoopDelay({ resolution: 20 });
  loop.enable();
  app.addHook('onClose', async () => loop.disable());
  let lastCpu = process.cpuUsage();
  let lastAt = process.hrtime.bigint();

  app.get('/api/version', pub, async () => ({ version: ctx.version, node: process.version }));
  app.get('/api/process', pub, async () => {
    const mem = process.memoryUsage();
    const now = process.hrtime.bigint();
    const cpu = process.cpuUsage(lastCpu);
    const wallUs = Number(now - lastAt) / 1000;
    lastCpu = process.cpuUsage();
    lastAt = now;
    const body = {
      pid: process.pid,
      version: ctx.version,
      node: process.version,
      started_at: ctx.control.startedAt.toISOString(),
      uptime_seconds: Math.round((Date.now() - ctx.control.startedAt.getTime()) / 1000),
      rss_bytes: mem.rss,
      heap_used_bytes: mem.heapUsed,
      heap_total_bytes: mem.heapTotal,
      cpu_user_seconds_total: process.cpuUsage().user / 1e6,
      cpu_system_seconds_total: process.cpuUsage().system / 1e6,
      cpu_percent: wallUs > 0 ? Math.round(((cpu.user + cpu.system) / wallUs) * 1000) / 10 : 0,
      event_loop_delay_ms: {
        mean: Number.isNaN(loop.mean) ? 0 : Math.round(loop.mean / 1e4) / 100,
        p99: Math.round(loop.percentile(99) / 1e4) / 100,
        max: Math.round(loop.max / 1e4) / 100,
      },
    };
    loop.reset();
    return body;
  });
}
