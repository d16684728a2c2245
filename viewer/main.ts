// The viewer page's entry point (docs/viewer.md). The page lives at `/browsers/{id}/viewer`; every
// URL it asks is relative to `/browsers/{id}/`, where the viewer cookie applies.

import { ViewerApp } from './app.ts';

const match = /^(.*\/browsers\/([^/]+)\/)viewer$/.exec(location.pathname);
if (match) {
  const session = new URL(match[1]!, location.origin);
  new ViewerApp(document.body, session, decodeURIComponent(match[2]!)).start();
} else {
  document.body.textContent = 'The viewer is served at /browsers/{id}/viewer.';
}
