/**
 * A real `redis-server` for tests and examples: a child process on a free loopback port (or a given
 * one, to restart it where it was), no persistence, stopped afterwards; it can be killed (SIGKILL)
 * or paused (SIGSTOP: connections stay open, nothing is answered) to test failure handling. Needs
 * `redis-server` on the PATH (Debian/Ubuntu: `apt-get install -y redis-server`; the repository's
 * `.ci/system-packages` installs it).
 *
 * @since 0.2.0
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as net from "node:net"

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/** Resolves once the server answers `PING` (or rejects after `timeoutMs`). */
const ready = (port: number, timeoutMs: number) =>
  new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + timeoutMs
    const attempt = () => {
      const socket = net.connect(port, "127.0.0.1")
      const retry = () => {
        socket.destroy()
        if (Date.now() > deadline) reject(new Error("redis-server did not start"))
        else setTimeout(attempt, 20)
      }
      socket.once("error", retry)
      socket.once("connect", () => socket.write("PING\r\n"))
      socket.once("data", (data) => {
        socket.destroy()
        if (data.toString().startsWith("+PONG")) resolve()
        else retry()
      })
    }
    attempt()
  })

/**
 * A running server: its port and URL, and ways to end it.
 *
 * @since 0.2.0
 * @category Models
 */
export interface RedisServer {
  readonly port: number
  readonly url: string
  /** SIGKILL: the server vanishes without closing anything. */
  readonly kill: () => void
  /** SIGSTOP / SIGCONT: the server keeps its connections but stops answering, then answers again. */
  readonly pause: () => void
  readonly resume: () => void
  /** SIGTERM, waiting for the process to exit. */
  readonly stop: () => Promise<void>
}

/**
 * Starts a `redis-server` (on `onPort`, or a free port) and resolves once it answers `PING`.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const startRedis = async (onPort?: number): Promise<RedisServer> => {
  const port = onPort ?? (await freePort())
  const child: ChildProcess = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning"],
    { stdio: "ignore" }
  )
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  await ready(port, 10_000)
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    kill: () => {
      child.kill("SIGKILL")
    },
    pause: () => {
      child.kill("SIGSTOP")
    },
    resume: () => {
      child.kill("SIGCONT")
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
      await exited
    }
  }
}
