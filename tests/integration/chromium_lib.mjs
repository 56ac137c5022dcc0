// chromium_lib.mjs: opens Debian's Chromium (headless) with playwright-core the way every
// dashboard test needs it: the flags that keep it off the network, a fresh profile, and
// every console error, page error, failed request and HTTP >= 400 collected in `errors`.
import { createRequire } from 'module';
const require = createRequire(process.cwd() + '/');
const { chromium } = require('playwright-core');

export async function openPage(profile) {
  const errors = [];
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: false, // the flag below selects Chromium's own headless mode
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1366, height: 900 },
  });
  const page = ctx.pages()[0] || await ctx.newPage();
  page.on('console', (m) => { if (m.type() === 'error') errors.push('console: ' + m.text() + ' at ' + JSON.stringify(m.location())); });
  page.on('pageerror', (e) => errors.push('pageerror: ' + e.message));
  page.on('requestfailed', (r) => errors.push('request failed: ' + r.url()));
  page.on('response', (r) => { if (r.status() >= 400) errors.push(`HTTP ${r.status()} ${r.url()}`); });
  return { ctx, page, errors };
}

export function fail(msg) { console.error('FAIL: ' + msg); process.exitCode = 1; throw new Error(msg); }
