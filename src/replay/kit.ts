// What other programs take of replays (`browser-telemetry-agent/replay`; docs/replay.md
// "For other programs"): the frames of a replay file decoded by the same ffmpeg, the encoder
// lookup, and the replays directory's records (a program beside the agent, e.g. the gateway's
// archive, reads them without the agent).

export { extractFrames, type ExtractedFrame, type FrameRequest } from './frames.ts';
export { locateEncoder, EncoderUnavailableError, type EncoderBinary, type ReplayFormat } from './encoder-binary.ts';
export { ReplayCatalogue, REPLAY_ID_PATTERN, type ReplayRecord, type ReplayState } from './catalogue.ts';
