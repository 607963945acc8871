// A saturation bar (active / pool size) with its percentage; amber from 80%, red at 100%.
import { percent } from '../format';

export function Meter(props: { value: number | null; label: string; big?: boolean }) {
  const v = props.value === null ? null : Math.max(0, props.value);
  const tone = v === null ? '' : v >= 1 ? 'bad' : v >= 0.8 ? 'warn' : 'ok';
  return (
    <span
      className={`meter ${tone}${props.big ? ' big' : ''}`}
      role="meter"
      aria-label={props.label}
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={v === null ? undefined : Math.round(v * 100)}
    >
      <span className="meter-track" aria-hidden="true">
        <span className="meter-fill" style={{ width: `${Math.min(100, (v ?? 0) * 100)}%` }} />
      </span>
      <span className="meter-text">{percent(v)}</span>
    </span>
  );
}

/** sv_active / pool_size of a SHOW POOLS row (null without a pool size). */
export function saturation(r: Record<string, unknown>): number | null {
  const size = Number(r['pool_size']);
  const active = Number(r['sv_active']);
  return size > 0 && Number.isFinite(active) ? active / size : null;
}
