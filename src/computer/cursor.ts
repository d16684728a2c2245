// set_cursor (docs/computer-batch.md): hides the mouse cursor in every document of the session, present and
// future. A style `* { cursor: none !important }` is injected from an isolated world (page scripts
// cannot see or call the injector) into every frame now, and registered with
// Page.addScriptToEvaluateOnNewDocument on every tab and out-of-process iframe, including targets
// attached later (a TargetManager setup hook, before they are resumed). Showing the cursor removes
// the registrations and the style elements.

import { isTargetGone, type IgnoredFailures } from '../browser/cdp-errors.ts';
import { CommandTimeout, hostsDocuments, within, withDeadline, type InputTarget, type TargetSource } from './targets.ts';

const WORLD = '__bta_cursor';
const STYLE_ID = '__bta_cursor_hidden';

// The document element may not exist yet when a new document's scripts start: wait for it.
const HIDE_SOURCE = `(() => {
  const add = () => {
    if (document.getElementById(${JSON.stringify(STYLE_ID)})) return;
    const style = document.createElement('style');
    style.id = ${JSON.stringify(STYLE_ID)};
    style.textContent = '*, *::before, *::after { cursor: none !important; }';
    document.documentElement.appendChild(style);
  };
  if (document.documentElement) add();
  else new MutationObserver((_, observer) => {
    if (document.documentElement) { observer.disconnect(); add(); }
  }).observe(document, { childList: true });
})()`;
const SHOW_SOURCE = `document.getElementById(${JSON.stringify(STYLE_ID)})?.remove()`;

export class CursorVisibility {
  private hidden = false;
  /** Per target: the identifier of its new-document script registration. */
  private readonly registrations = new WeakMap<InputTarget, Promise<string>>();
  private readonly hookedSources = new WeakSet<TargetSource>();

  constructor(
    /** How long a tab may take to answer a command before the action fails. */
    private readonly commandTimeoutMs: number,
    /** The agent's count of best-effort failures. */
    private readonly failures: IgnoredFailures,
  ) {}

  get isHidden(): boolean {
    return this.hidden;
  }

  /** Apply `hidden` to every current document of `source` and to its future ones. */
  async setHidden(hidden: boolean, source: TargetSource | undefined): Promise<void> {
    this.hidden = hidden;
    if (!source) return;
    this.follow(source);
    const targets = [...source.all()].filter(hostsDocuments);
    await Promise.all(targets.map((target) => ignoreGone(target, hidden ? this.hide(target) : this.show(target))));
  }

  /**
   * Bring a target source up to date: after a reconnect the targets are new objects of a new
   * source, so the state is applied again to every target that lacks it.
   */
  async sync(source: TargetSource | undefined): Promise<void> {
    if (!source) return;
    this.follow(source);
    if (!this.hidden) return;
    const missing = [...source.all()].filter((t) => hostsDocuments(t) && !this.registrations.has(t));
    await Promise.all(missing.map((target) => ignoreGone(target, this.hide(target))));
  }

  /** Register the setup hook on `source` once. */
  follow(source: TargetSource): void {
    if (this.hookedSources.has(source)) return;
    this.hookedSources.add(source);
    source.addSetupHook((target) => this.setUpTarget(target));
  }

  /**
   * A newly attached target: while hidden, register the style for its documents. A paused target
   * gets only the registration (evaluating into a paused renderer would block its resume); a
   * target that was already running (attached at start-up) also gets its current documents.
   */
  setUpTarget(target: InputTarget): Array<Promise<unknown>> {
    if (!this.hidden || !hostsDocuments(target) || this.registrations.has(target)) return [];
    const registration = this.register(target);
    if (target.wasWaiting) return [registration];
    return [registration, registration.then(() => evaluateInEveryFrame(target, HIDE_SOURCE))];
  }

  private async hide(target: InputTarget): Promise<void> {
    const known = this.registrations.has(target);
    await within(this.register(target), this.commandTimeoutMs, 'Page.addScriptToEvaluateOnNewDocument');
    if (!known) await evaluateInEveryFrame(withDeadline(target, this.commandTimeoutMs), HIDE_SOURCE);
  }

  private async show(target: InputTarget): Promise<void> {
    const registration = this.registrations.get(target);
    if (!registration) return;
    this.registrations.delete(target);
    let identifier: string | undefined;
    try {
      identifier = await within(this.failures.mayFail(registration), this.commandTimeoutMs, 'Page.addScriptToEvaluateOnNewDocument');
    } catch (err) {
      // A hung tab: take the registration back whenever it does answer.
      void this.failures.mayFail(registration.then((late) => target.send('Page.removeScriptToEvaluateOnNewDocument', { identifier: late })));
      throw err;
    }
    const bounded = withDeadline(target, this.commandTimeoutMs);
    if (identifier !== undefined) await bounded.send('Page.removeScriptToEvaluateOnNewDocument', { identifier });
    await evaluateInEveryFrame(bounded, SHOW_SOURCE);
  }

  /** Sends both commands at once: a paused target answers them before its resume. */
  private register(target: InputTarget): Promise<string> {
    const existing = this.registrations.get(target);
    if (existing) return existing;
    // New-document scripts apply only while the Page domain is enabled on the session
    // (docs/chromium.md "Injection"); telemetry may have it off.
    const enable = target.send('Page.enable');
    const add = target.send('Page.addScriptToEvaluateOnNewDocument', { source: HIDE_SOURCE, worldName: WORLD, runImmediately: true });
    const registration = Promise.all([enable, add]).then(([, result]) => result.identifier);
    this.registrations.set(target, registration);
    registration.catch(() => {
      if (this.registrations.get(target) === registration) this.registrations.delete(target);
    });
    return registration;
  }
}

/** Run `expression` in an isolated world of every frame the target's session hosts. */
async function evaluateInEveryFrame(target: InputTarget, expression: string): Promise<void> {
  const { frameTree } = await target.send('Page.getFrameTree');
  const frameIds: string[] = [];
  const walk = (node: typeof frameTree): void => {
    frameIds.push(node.frame.id);
    for (const child of node.childFrames ?? []) walk(child);
  };
  walk(frameTree);
  await Promise.all(
    frameIds.map(async (frameId) => {
      try {
        const { executionContextId } = await target.send('Page.createIsolatedWorld', { frameId, worldName: WORLD });
        await target.send('Runtime.evaluate', { expression, contextId: executionContextId });
      } catch (err) {
        // A frame hosted by another process (its own iframe target does it) or detached meanwhile;
        // a hung one fails the action.
        if (err instanceof CommandTimeout) throw err;
      }
    }),
  );
}

async function ignoreGone(target: InputTarget, work: Promise<void>): Promise<void> {
  try {
    await work;
  } catch (err) {
    if (!isTargetGone(err, target)) throw err;
  }
}
