/**
 * Shared by the Redis suites: one real `redis-server` per test file, and store options with a key
 * prefix of each test's own (tests share the file's server, never keys).
 */
import { afterAll, beforeAll } from "@effect/vitest"
import type * as Redis from "@modelgate/adapters/redis"
import { type RedisServer, startRedis } from "@modelgate/testing/RedisServer"
import { Duration } from "effect"

/** @see redisPerFile */
export interface RedisPerFile {
  /** The file's server (started before its first test). */
  readonly server: () => RedisServer
  /** Options for the file's server with a fresh key prefix (command timeout 2 s unless `extra` says). */
  readonly freshOptions: (extra?: Partial<Redis.Options>) => Redis.Options
}

let seq = 0

/** Starts a `redis-server` before the calling file's tests and stops it after them. */
export const redisPerFile = (): RedisPerFile => {
  let started: RedisServer | undefined
  beforeAll(async () => {
    started = await startRedis()
  }, 20_000)
  afterAll(async () => {
    await started?.stop()
  })
  const server = () => {
    if (started === undefined) throw new Error("redis-server is started before the file's tests")
    return started
  }
  return {
    server,
    freshOptions: (extra = {}) => ({
      url: server().url,
      keyPrefix: `t${++seq}-${Date.now()}:`,
      commandTimeout: Duration.seconds(2),
      ...extra
    })
  }
}
