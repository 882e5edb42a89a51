import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";

import type { TokenUsage } from "@odyssey-ai/client/web";

export function when(ts: Timestamp | undefined): string {
  if (!ts) return "—";
  return timestampDate(ts).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

export function usage(u: TokenUsage | undefined): string {
  if (!u) return "—";
  return `${u.inputTokens} in · ${u.outputTokens} out`;
}

/** `SESSION_STATE_WAITING_FOR_APPROVAL`-style enum names as `waiting_for_approval`. */
export function label(name: string | undefined, prefix: string): string {
  if (!name) return "unknown";
  return name.startsWith(prefix) ? name.slice(prefix.length).toLowerCase() : name.toLowerCase();
}
