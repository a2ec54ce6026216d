import type { Redis } from 'ioredis';
import { withScripts } from './redis-keys';

/**
 * After a lane job is added: records the message's lane (KEYS[1] = `lane-of` key, ARGV[1] the lane, for
 * ARGV[2] ms, or ARGV[3] ms when its job, KEYS[3], is already finished). A job to start now (ARGV[5] = 0)
 * adds the lane to the busy set (KEYS[2]); a delayed one (due at ARGV[5], Unix ms) to an idle lane only
 * brings its wake-up (KEYS[4]) forward to that time. Either publishes the lane on ARGV[4] when it changed.
 */
const LANE_ADDED_LUA = `
local keep = ARGV[2]
if redis.call('HEXISTS', KEYS[3], 'finishedOn') == 1 then keep = ARGV[3] end
redis.call('SET', KEYS[1], ARGV[1], 'PX', keep)
local changed = 0
if ARGV[5] == '0' then
  changed = redis.call('SADD', KEYS[2], ARGV[1])
elseif redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then
  changed = redis.call('ZADD', KEYS[4], 'LT', 'CH', ARGV[5], ARGV[1])
end
if changed == 1 then redis.call('PUBLISH', ARGV[4], ARGV[1]) end
return 0`;

/** Adds lane ARGV[1] to the busy set (KEYS[1]), publishing it on ARGV[2] when it was not there. */
const LANE_BUSY_LUA = `
if redis.call('SADD', KEYS[1], ARGV[1]) == 1 then redis.call('PUBLISH', ARGV[2], ARGV[1]) end
return 0`;

/**
 * Moves the lanes of the wake-up set (KEYS[2]) due at ARGV[1] (Unix ms) into the busy set (KEYS[1]), at most
 * 1000 a call, publishing on ARGV[2] when one was added; returns the next wake-up's score, or nil.
 */
const LANE_WAKE_LUA = `
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, 1000)
local added = 0
for _, lane in ipairs(due) do
  added = added + redis.call('SADD', KEYS[1], lane)
  redis.call('ZREM', KEYS[2], lane)
end
if added > 0 then redis.call('PUBLISH', ARGV[2], 'wake') end
local nextWake = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
return nextWake[2]`;

/**
 * The idle check of lane ARGV[1] (BullMQ 6 keys: KEYS[3] meta, [4] active, [5] wait, [6] paused, [7]
 * prioritized, [8] waiting-children, [9] delayed): when it has no job being delivered and (unless paused) none
 * ready to start, removes it from the busy set (KEYS[1]); when not paused, sets its wake-up (KEYS[2]) at its
 * earliest delayed job's time (score / 0x1000, BullMQ's getDelayedScore), or clears it without one; publishes
 * on ARGV[2]. Returns 1 when the lane was removed, else 0.
 */
const LANE_IDLE_LUA = `
if redis.call('LLEN', KEYS[4]) > 0 then return 0 end
local paused = redis.call('HEXISTS', KEYS[3], 'paused') == 1
if not paused and redis.call('LLEN', KEYS[5]) + redis.call('LLEN', KEYS[6]) + redis.call('ZCARD', KEYS[7]) + redis.call('ZCARD', KEYS[8]) > 0 then return 0 end
if redis.call('SREM', KEYS[1], ARGV[1]) == 0 then return 0 end
local earliest = redis.call('ZRANGE', KEYS[9], 0, 0, 'WITHSCORES')
if not paused and earliest[2] then
  redis.call('ZADD', KEYS[2], math.floor(tonumber(earliest[2]) / 4096), ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
redis.call('PUBLISH', ARGV[2], ARGV[1])
return 1`;

/** The lane scripts, as ioredis commands ({@link laneScripts}). */
export interface LaneScripts {
  restashLaneAdded(
    laneOfKey: string,
    lanesKey: string,
    jobKey: string,
    wakeKey: string,
    queueName: string,
    keepMs: number,
    settledKeepMs: number,
    channel: string,
    dueAt: number,
  ): Promise<number>;
  restashLaneBusy(lanesKey: string, queueName: string, channel: string): Promise<number>;
  restashLaneWake(lanesKey: string, wakeKey: string, now: number, channel: string): Promise<string | null>;
  restashLaneIdle(...args: Array<string>): Promise<number>;
}

/** A connection with the lane scripts defined (once per connection: LaneQueues defines them when it is made). */
export function laneScripts(redis: Redis): Redis & LaneScripts {
  return withScripts<LaneScripts>(redis, {
    restashLaneAdded: { numberOfKeys: 4, lua: LANE_ADDED_LUA },
    restashLaneBusy: { numberOfKeys: 1, lua: LANE_BUSY_LUA },
    restashLaneWake: { numberOfKeys: 2, lua: LANE_WAKE_LUA },
    restashLaneIdle: { numberOfKeys: 9, lua: LANE_IDLE_LUA },
  });
}
