import type { Clock } from "../base/index.js";
import type { FunctionLogEntry } from "../functions/index.js";

/**
 * `--log-format` of `cairn serve` and `cairn dev`: how a node's output reads.
 *
 * - `text` (default): `cairn: <line>` per node log line; what functions print goes to the
 *   console as it is printed, prefixed with the function's path and request id.
 * - `json`: one JSON object per line on stdout, for log shippers. A node log line is
 *   `{"time": ISO, "level": "info", "msg": line}`; a function call as it ended is
 *   `{"time": ISO, "type": "function", ...its log entry}` (the entry's own ms `time` is
 *   the ISO one), whose `lines` hold what it printed: console lines are not echoed
 *   separately, so every line on stdout parses.
 */
export const LOG_FORMATS = ["text", "json"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** What a node is started with to log in one format (NodeOptions' log, onFunctionLog, echoFunctionConsole). */
export interface NodeLogging {
  readonly log: (line: string) => void;
  /** Each function call's log entry as it ended (json only). */
  readonly onFunctionLog?: (entry: FunctionLogEntry) => void;
  /** Whether what functions print goes to the console as it is printed. */
  readonly echoFunctionConsole: boolean;
}

export function nodeLogging(format: LogFormat, clock: Clock, write: (text: string) => void = (text) => process.stdout.write(text)): NodeLogging {
  switch (format) {
    case "text":
      return { log: (line) => write(`cairn: ${line}\n`), echoFunctionConsole: true };
    case "json":
      return {
        log: (line) => write(`${JSON.stringify({ time: isoTime(clock.nowMs()), level: "info", msg: line })}\n`),
        onFunctionLog: (entry) => write(`${functionLogLine(entry)}\n`),
        echoFunctionConsole: false,
      };
  }
}

/** An entry as one JSON line: `time` and `type` first (what a shipper indexes on), then the entry's fields. */
export function functionLogLine(entry: FunctionLogEntry): string {
  const { time, ...fields } = entry;
  return JSON.stringify({ time: isoTime(time), type: "function", ...fields });
}

function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}
