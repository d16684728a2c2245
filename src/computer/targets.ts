// What the computer actions need of the browser side: the active tab, every attached target, and
// a way to set up targets attached later. TargetManager provides all three; unit tests pass fakes.

import type { AttachedTarget } from '../browser/target-manager.ts';

/** One attached target as the executor uses it. */
export type InputTarget = Pick<AttachedTarget, 'send' | 'targetId' | 'type' | 'isDetached' | 'wasWaiting'>;

export type InputTargetSetupHook = (target: InputTarget) => Array<Promise<unknown>>;

export interface TargetSource {
  /** The tab actions run on: the most recently opened or focused page. */
  activePage(): InputTarget | undefined;
  all(): Iterable<InputTarget>;
  /** Run `hook` for every target attached from now on, before it is resumed. */
  addSetupHook(hook: InputTargetSetupHook): () => void;
}

/** Targets that host documents (tabs and out-of-process iframes). */
export function hostsDocuments(target: InputTarget): boolean {
  return target.type === 'page' || target.type === 'iframe';
}

/** A command that got no answer in time: the tab's renderer is hung. */
export class CommandTimeout extends Error {}

/** `work`, or a CommandTimeout naming `what` once `ms` have passed. */
export async function within<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CommandTimeout(`the tab did not answer ${what} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** `target` whose commands fail with CommandTimeout after `ms` instead of waiting forever. */
export function withDeadline(target: InputTarget, ms: number): InputTarget {
  const send = ((method: string, params?: object) =>
    within((target.send as (m: string, p?: object) => Promise<unknown>)(method, params), ms, method)) as InputTarget['send'];
  // A target's id, type and wasWaiting are fixed for its life; whether it is detached is read when asked.
  return {
    send,
    targetId: target.targetId,
    type: target.type,
    get isDetached() {
      return target.isDetached;
    },
    wasWaiting: target.wasWaiting,
  };
}
