// Switches of the cuts in what the agent asks of Chromium (docs/network.md "Renderer body buffers",
// docs/chromium.md "Domains by target type"), so that the bench can measure a cut against the
// agent without it in one interleaved run (docs/decisions.md "Behaviour"). They are not settings. A cut that keeps the telemetry identical is on unless its
// variable is `off`; one that does not is off unless its variable is `on`.

export interface CdpCuts {
  /**
   * `Network.enable` asks the renderer to keep no bodies when the browser keeps durable copies of
   * the responses. Off unless `BTA_CUT_RENDERER_BUFFERS=on`: the renderer's buffers also hold the
   * request bodies `Network.getRequestPostData` reads (Blob bodies, bodies over the inline limit),
   * which the durable copies do not cover, so with the cut those `post_data` are lost.
   */
  rendererBodyBuffers: boolean;
  /**
   * Runtime is enabled on a worker (or any target other than a page or iframe) only when its
   * console is reported. `BTA_CUT_DOMAINS_BY_TYPE=off`: on every target whenever a category that
   * needs Runtime is on.
   */
  domainsByTargetType: boolean;
}

export const CUT_ENV = { rendererBodyBuffers: 'BTA_CUT_RENDERER_BUFFERS', domainsByTargetType: 'BTA_CUT_DOMAINS_BY_TYPE' } as const;

export function cdpCuts(env: Record<string, string | undefined> = process.env): CdpCuts {
  const value = (name: string) => env[name]?.trim().toLowerCase();
  return { rendererBodyBuffers: value(CUT_ENV.rendererBodyBuffers) === 'on', domainsByTargetType: value(CUT_ENV.domainsByTargetType) !== 'off' };
}
