// The cuts in what the agent asks of Chromium (docs/network.md "Renderer body buffers",
// docs/chromium.md "Domains by target type"). They are not settings: the defaults are what the
// agent does, and only the bench changes them (programmatically, `AgentRuntime.cdpCuts` in
// src/agent.ts), to measure a cut against the agent without it in one interleaved run
// (docs/decisions.md "Behaviour"). A cut that keeps the telemetry identical is on by default; one
// that does not is off.

export interface CdpCuts {
  /**
   * `Network.enable` asks the renderer to keep no bodies when the browser keeps durable copies of
   * the responses. Off by default: the renderer's buffers also hold the request bodies
   * `Network.getRequestPostData` reads (Blob bodies, bodies over the inline limit), which the
   * durable copies do not cover, so with the cut those `post_data` are lost.
   */
  rendererBodyBuffers: boolean;
  /**
   * Runtime is enabled on a worker (or any target other than a page or iframe) only when its
   * console is reported. On by default; off: on every target whenever a category that needs
   * Runtime is on.
   */
  domainsByTargetType: boolean;
}

export const DEFAULT_CDP_CUTS: Readonly<CdpCuts> = { rendererBodyBuffers: false, domainsByTargetType: true };

/** The defaults with the bench's changes. */
export function cdpCuts(changes: Partial<CdpCuts> = {}): CdpCuts {
  return { ...DEFAULT_CDP_CUTS, ...changes };
}
