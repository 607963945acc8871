// `tidepool pooler` as a process with [web] enabled: the listener comes up with it, and SIGHUP reloads the SSO key.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../src/launcher/embedded-postgres.js';
import { startChildPooler, type ChildPooler } from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { basicHeader, webToml } from '../../helpers/web.js';
import { makeRsaKey, signToken } from '../../helpers/web-sso.js';

let db: TestPostgres;
let dir: string;
let child: ChildPooler | null = null;

beforeAll(async () => {
  db = await startTestPostgres();
  dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-webproc-'));
});
afterAll(async () => {
  await child?.stop();
  await db?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('pooler process with the web listener', () => {
  it('serves /metrics and the API on [web] port; SIGHUP after fixing the key turns SSO on', async () => {
    const [pgPort, webPort] = [await freePort(), await freePort()];
    const key = makeRsaKey();
    const pem = path.join(dir, 'sso.pem');
    const configFile = path.join(dir, 'pooler.toml');
    const toml = webToml(db, { web: `sso_enabled = true\nsso_public_key_file = "${pem}"\nsso_audience = ["console"]` })
      .replace(/\nport = 0\n/, `\nport = ${pgPort}\n`)
      .replace(/\nport = 0\n/, `\nport = ${webPort}\n`)
      .replace('log_level = "debug"', 'log_level = "info"');
    writeFileSync(configFile, toml);
    child = await startChildPooler(configFile, pgPort);
    const base = `http://127.0.0.1:${webPort}`;
    for (let i = 0; i < 100 && !/web listener started/.test(child.output()); i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(child.output()).toMatch(/target=pooler::web msg="web listener started"/);

    expect((await fetch(`${base}/metrics`)).status).toBe(200);
    expect(await (await fetch(`${base}/api/auth/config`)).json()).toMatchObject({
      sso_enabled: false,
      sso_config_error: expect.stringMatching(/cannot read/),
    });
    expect((await fetch(`${base}/api/pools`, { headers: { authorization: basicHeader() } })).status).toBe(200);

    writeFileSync(pem, key.publicPem);
    child.child.kill('SIGHUP');
    let cfg: Record<string, unknown> = {};
    for (let i = 0; i < 100 && cfg['sso_enabled'] !== true; i++) {
      cfg = (await (await fetch(`${base}/api/auth/config`)).json()) as Record<string, unknown>;
      if (cfg['sso_enabled'] !== true) await new Promise((r) => setTimeout(r, 50));
    }
    expect(cfg).toMatchObject({ sso_enabled: true });
    const token = await signToken(key, { aud: 'console', preferred_username: 'alice' });
    expect((await fetch(`${base}/api/pools`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect(child.output()).toMatch(
      /level=info target=pooler::web::access method=GET path=\/api\/auth\/config query=false status=200 bytes=\d+ latency_ms=\d+ peer=127\.0\.0\.1:\d+ auth_role=rejected auth_source=- auth_user=-/,
    );
  });
});
