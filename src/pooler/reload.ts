// RELOAD's room: reads and checks the config file again and decides what the running pooler takes from it: what
// changed, what only a restart applies, the TLS files and the hba rules (or why the previous ones stay), and the
// message the operator reads. Pooler.reload applies the plan to its parts; nothing here changes the running state.
import { loadPoolerConfig, type PoolerConfig } from '../config/pooler.js';
import { HbaRules } from './auth/hba.js';
import { configChanges, restartNeeded } from './config-diff.js';
import type { NativeRelay } from './relay/native.js';
import { reloadTlsSettings, type TlsSettings } from './tls/tls-settings.js';

/** What the running pooler holds that RELOAD compares the file with. */
export interface ReloadBase {
  config: PoolerConfig;
  tls: TlsSettings;
  /** TLS is served by the JavaScript relay (chosen at start). */
  tlsRelay: boolean;
  nativeTls: NativeRelay | null;
}

/** A reload to apply: the new config and what comes with it. */
export interface ReloadPlan {
  next: PoolerConfig;
  /** Keys whose value changed (SHOW CONFIG names). */
  changed: string[];
  /** What only a restart applies. */
  restart: string[];
  tls: TlsSettings;
  /** The new hba rules; undefined when the file could not be read (the previous rules stay). */
  hba: HbaRules | null | undefined;
  /** Why something of the file was not taken (said in the answer and logged at warn). */
  notes: string[];
}

/**
 * The plan for RELOAD of `file` over `base`; throws the config's error when the file is bad (the old configuration
 * stays, untouched). The [native] section picks code paths at start, so the running one stays in force (and in SHOW
 * CONFIG) until a restart.
 */
export function planReload(base: ReloadBase, file: string): ReloadPlan {
  let next = loadPoolerConfig(file);
  const changed = configChanges(base.config, next);
  const restart = restartNeeded(base.config, next);
  next = Object.freeze({ ...next, native: base.config.native });
  const tls = reloadTlsSettings(base.tls, next, base.tlsRelay, base.nativeTls);
  if (tls.restart) restart.push(tls.restart);
  const notes = tls.error ? [`TLS files not loaded, the previous certificates and keys stay: ${tls.error}`] : [];
  let hba: HbaRules | null | undefined;
  try {
    hba = next.general.auth_hba_file ? HbaRules.load(next.general.auth_hba_file) : null;
  } catch (err) {
    hba = undefined;
    notes.push(`auth_hba_file not loaded, the previous rules stay: ${(err as Error).message}`);
  }
  return { next, changed, restart, tls: tls.settings, hba, notes };
}

/** The answer to RELOAD (the admin console's notice, the web API's message, the log line). */
export function reloadMessage(plan: ReloadPlan): string {
  let msg = plan.restart.length ? `RELOAD done; needs a restart to apply: ${plan.restart.join(', ')}` : 'RELOAD done';
  if (plan.notes.length) msg += `; ${plan.notes.join('; ')}`;
  return msg;
}
