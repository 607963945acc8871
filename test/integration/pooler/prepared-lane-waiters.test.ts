// The native lane while clients outnumber servers: every transaction's server comes through the pool's waiter queue,
// and the lane's counts of the transaction come with the relay's release report (Relay::EmitRelease) instead of a
// call into the addon (prepared-lane-waiters-scenario.ts).
import { laneWaitersSuite } from './prepared-lane-waiters-scenario.js';

laneWaitersSuite('the native lane with clients waiting for one server', 4, 1, 26);
