// Truncation and size limits (docs/events.md#truncation-limits). Byte limits count UTF-8 bytes; cuts never split a
// character.

export interface Limits {
  /** Response `body` kept in network_response. */
  maxBodyBytes: number;
  /** Largest response body the agent asks Chromium for. */
  maxBodyFetchBytes: number;
  /** `post_data` of network_request. */
  maxPostDataBytes: number;
  /** Console `text` and each `args` item. */
  maxConsoleTextBytes: number;
  /** Console `args` count. */
  maxConsoleArgs: number;
  /** Each header value. */
  maxHeaderValueBytes: number;
  /** Frames kept in `stack_trace` (the parent chain counts too). */
  maxStackFrames: number;
  /** Serialized `data` of one event. */
  maxEventDataBytes: number;
  /** write_file body. */
  maxUploadBytes: number;
}

const KiB = 1024;
const MiB = 1024 * KiB;

export const DEFAULT_LIMITS: Limits = {
  maxBodyBytes: 64 * KiB,
  maxBodyFetchBytes: 1 * MiB,
  maxPostDataBytes: 64 * KiB,
  maxConsoleTextBytes: 16 * KiB,
  maxConsoleArgs: 100,
  maxHeaderValueBytes: 8 * KiB,
  maxStackFrames: 50,
  maxEventDataBytes: 256 * KiB,
  maxUploadBytes: 512 * MiB,
};
