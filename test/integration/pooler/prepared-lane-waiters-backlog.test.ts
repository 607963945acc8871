// Sixteen clients of the lane over four servers (prepared-lane-waiters-scenario.ts) with room for three events a round
// (TIDEPOOL_RELAY_EVENTS=3, read when this file's process makes its relay): many release reports wait in the relay's
// backlog, where they cannot bring the lane's counts, and JavaScript takes those with relayLaneTake. Every count must
// still be exact. On the JavaScript relay project the variable changes nothing.
import { laneWaitersSuite } from './prepared-lane-waiters-scenario.js';

process.env.TIDEPOOL_RELAY_EVENTS = '3';
laneWaitersSuite(
  'the native lane with clients waiting for four servers, release reports past the shared buffer',
  16,
  4,
  0,
);
