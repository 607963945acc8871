// The console's one duration formatter and the axis tick labels: every duration carries a unit, ticks share one.
import { describe, expect, it } from 'vitest';
import {
  bytes,
  duration,
  micros,
  microsTicks,
  millis,
  numberTicks,
  seconds,
  unitOf,
} from '../../../ui/console/src/format.js';

describe('duration', () => {
  it('under a second: µs, then ms with three digits', () => {
    expect(micros(0)).toBe('0 µs');
    expect(micros(250)).toBe('250 µs');
    expect(micros(5000)).toBe('5.00 ms');
    expect(micros(8700)).toBe('8.70 ms');
    expect(micros(19641)).toBe('19.6 ms');
    expect(micros(250_000)).toBe('250 ms');
    expect(millis(999)).toBe('999 ms');
  });
  it('seconds to days in whole units past a minute', () => {
    expect(seconds(5)).toBe('5 s');
    expect(seconds(8.7)).toBe('8.7 s');
    expect(micros(1_250_000)).toBe('1.25 s');
    expect(seconds(45)).toBe('45 s');
    expect(seconds(59.6)).toBe('1 min');
    expect(seconds(1816)).toBe('30 min 16 s');
    expect(seconds(1800)).toBe('30 min');
    expect(seconds(7500)).toBe('2 h 5 min');
    expect(seconds(3600)).toBe('1 h');
    expect(seconds(3 * 86400 + 4 * 3600)).toBe('3 d 4 h');
    expect(millis(61_000)).toBe('1 min 1 s');
  });
  it('missing and odd values', () => {
    expect(micros(null)).toBe('–');
    expect(seconds('abc')).toBe('–');
    expect(seconds('12')).toBe('12 s');
    expect(duration(Number.NaN)).toBe('–');
    expect(duration(-2)).toBe('-2 s');
  });
});

describe('unitOf', () => {
  it('formats fields by name: SHOW STATS times in µs, *_ms, *_seconds, maxwait, bytes', () => {
    expect(unitOf('avg_xact_time')!(19641)).toBe('19.6 ms');
    expect(unitOf('total_query_time')!(2_000_000)).toBe('2 s');
    expect(unitOf('maxwait_us')!(1500)).toBe('1.50 ms');
    expect(unitOf('xact_age_ms')!(1500)).toBe('1.5 s');
    expect(unitOf('age_seconds')!(1816)).toBe('30 min 16 s');
    expect(unitOf('maxwait')!(3)).toBe('3 s');
    expect(unitOf('avg_recv')).toBe(bytes);
    expect(unitOf('query_count')).toBeNull();
  });
});

describe('axis ticks', () => {
  it('durations: one unit for all ticks, the decimals the step needs, nothing cut', () => {
    expect(microsTicks([0, 5000, 10000, 15000, 20000])).toEqual(['0 ms', '5 ms', '10 ms', '15 ms', '20 ms']);
    expect(microsTicks([0, 2500, 5000])).toEqual(['0 ms', '2.5 ms', '5.0 ms']);
    expect(microsTicks([0, 250, 500])).toEqual(['0 µs', '250 µs', '500 µs']);
    expect(microsTicks([0, 500_000, 1_000_000, 1_500_000])).toEqual(['0 s', '0.5 s', '1.0 s', '1.5 s']);
    expect(microsTicks([4000, 4200, 4400])).toEqual(['4.0 ms', '4.2 ms', '4.4 ms']);
  });
  it('plain numbers: the same decimals on every tick', () => {
    expect(numberTicks([0, 50, 100, 150])).toEqual(['0', '50', '100', '150']);
    expect(numberTicks([0, 0.25, 0.5])).toEqual(['0', '0.25', '0.50']);
    expect(numberTicks([0, 2000, 4000])).toEqual(['0', '2,000', '4,000']);
  });
});
