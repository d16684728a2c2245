import { describe, expect, it } from 'vitest';
import { translateFrameNavigated, translatePageTiming, translateTabOpened } from '../../src/telemetry/page.ts';

const target = { sessionId: 'S1', targetId: 'F1', type: 'page' };

describe('page translators', () => {
  it('translates a main-frame navigation into exactly the page_navigation fields', () => {
    const frame = {
      id: 'F1',
      loaderId: 'L1',
      url: 'http://a.test/x',
      domainAndRegistry: '',
      securityOrigin: 'http://a.test',
      mimeType: 'text/html',
      secureContextType: 'Insecure',
      crossOriginIsolatedContextType: 'NotIsolated',
      gatedAPIFeatures: [],
    } as never;
    expect(translateFrameNavigated(frame, target)).toEqual({
      url: 'http://a.test/x',
      frame_id: 'F1',
      loader_id: 'L1',
      session_id: 'S1',
      target_id: 'F1',
      target_type: 'page',
    });
  });

  it('adds parent_frame_id for a child frame and keeps the URL fragment', () => {
    const frame = { id: 'F2', parentId: 'F1', loaderId: 'L2', url: 'http://a.test/y', urlFragment: '#top' } as never;
    expect(translateFrameNavigated(frame, target)).toMatchObject({ parent_frame_id: 'F1', url: 'http://a.test/y#top' });
  });

  it('keeps the monotonic timestamp at full precision beside the context', () => {
    expect(translatePageTiming(12345.678901234, { target_id: 'F1', nav_seq: 2 })).toEqual({ target_id: 'F1', nav_seq: 2, cdp_timestamp: 12345.678901234 });
  });

  it('announces a tab with its opener and nothing else', () => {
    const info = { targetId: 'T2', type: 'page', url: '', title: '', attached: false, openerId: 'T1', canAccessOpener: true, browserContextId: 'B' };
    expect(translateTabOpened(info)).toEqual({ target_id: 'T2', target_type: 'page', url: '', title: '', opener_id: 'T1' });
  });

  it('leaves opener_id out for a tab nobody opened', () => {
    const info = { targetId: 'T1', type: 'page', url: 'about:blank', title: 'about:blank', attached: false, canAccessOpener: false };
    expect(translateTabOpened(info)).not.toHaveProperty('opener_id');
  });
});
