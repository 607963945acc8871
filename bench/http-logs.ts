// The log-store benchmarks' documents: http_logs-shaped lines (timestamp, clientip, request, status, size, service).

export const HTTP_LOGS_START = Date.parse('2026-11-20T00:00:00Z');
export const HTTP_LOGS_SPAN_MS = 24 * 3_600_000;

const WORDS = [
  'images',
  'english',
  'french',
  'spanish',
  'news',
  'teams',
  'venues',
  'tickets',
  'history',
  'players',
  'home',
  'logo',
  'nav',
  'hm',
  'bg',
  'info',
  'splash',
  'mascot',
  'results',
  'schedule',
];
const EXT = ['gif', 'html', 'jpg', 'htm', 'css', 'js'];
const STATUSES: [number, number][] = [
  [200, 0.87],
  [304, 0.07],
  [404, 0.03],
  [206, 0.01],
  [500, 0.008],
  [400, 0.006],
  [403, 0.004],
  [302, 0.002],
];
const SERVICES = ['www', 'cdn', 'api', 'shop', 'media'];

/** Document i of `docs`: its time grows with i over one day from HTTP_LOGS_START, so the newest are the last. */
export function httpLogsDoc(i: number, docs: number, r: () => number): string {
  const t = new Date(HTTP_LOGS_START + Math.floor((i / docs) * HTTP_LOGS_SPAN_MS)).toISOString();
  const ip = `${(r() * 223 + 1) | 0}.${(r() * 255) | 0}.${(r() * 255) | 0}.${(r() * 40) | 0}`;
  const depth = 1 + ((r() * 3) | 0);
  let p = '';
  for (let k = 0; k < depth; k++) p += `/${WORDS[(r() * r() * WORDS.length) | 0]}`;
  p += `_${(r() * 300) | 0}.${EXT[(r() * EXT.length) | 0]}`;
  let x = r();
  let status = 200;
  for (const [s, w] of STATUSES) {
    if (x < w) {
      status = s;
      break;
    }
    x -= w;
  }
  const size = status === 304 ? 0 : (r() * r() * 50_000) | 0;
  return `{"timestamp":"${t}","clientip":"${ip}","request":"GET ${p} HTTP/1.0","status":${status},"size":${size},"service":"${SERVICES[(r() * r() * 5) | 0]}"}`;
}
