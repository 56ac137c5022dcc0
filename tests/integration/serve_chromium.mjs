// serve_chromium.mjs: drives Debian's Chromium (headless) through the dashboard with
// playwright-core. Usage: node serve_chromium.mjs URL ARTIFACT_DIR PROFILE_DIR
// Checks: every view renders with data in its charts (canvas pixels drawn, API series with
// numbers), navigation fleet -> job -> device -> fleet works by clicking links, and the
// console has no errors. Saves screenshots of each view.
import { openPage, fail } from './chromium_lib.mjs';

const [url, artifacts, profile] = process.argv.slice(2);
const { ctx, page, errors } = await openPage(profile);
// Polls with evaluate (CDP callFunctionOn), not waitForFunction, which needs eval and so
// would trip the dashboard's Content-Security-Policy.
async function rendered(prefix) {
  for (let i = 0; i < 150; i++) {
    const r = await page.evaluate(() => document.body.getAttribute('data-rendered') || '');
    if (r.startsWith(prefix)) return;
    await page.waitForTimeout(100);
  }
  fail('view ' + prefix + ' did not render');
}
// Share of a chart's canvas pixels that are drawn (not transparent/white).
async function inked(sel) {
  return page.evaluate((sel) => {
    const c = document.querySelector(sel + ' canvas');
    if (!c) return -1;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let ink = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && (d[i] < 240 || d[i + 1] < 240 || d[i + 2] < 240)) ink++;
    return ink / (d.length / 4);
  }, sel);
}

try {
  await page.goto(url, { waitUntil: 'load' });
  await rendered('#/');
  const jobs = await page.locator('#jobs a').count();
  if (jobs < 2) fail(`fleet view lists ${jobs} jobs`);
  const goodputCard = await page.locator('.card .v').first().textContent();
  if (!/%$/.test(goodputCard.trim())) fail('fleet goodput card shows ' + goodputCard);
  await page.screenshot({ path: `${artifacts}/dashboard-fleet.png`, fullPage: true });

  // Fleet -> job: the first job in the table.
  await page.locator('#jobs a').first().click();
  await rendered('#/job/');
  await page.waitForSelector('#c-signals canvas');
  const jobInk = await inked('#c-signals');
  if (!(jobInk > 0.005)) fail('job chart has no data drawn: ' + jobInk);
  const id = decodeURIComponent((await page.evaluate(() => location.hash)).slice(6));
  const series = await page.evaluate(async (id) => (await fetch('api/v1/jobs/' + encodeURIComponent(id) + '/series?points=100')).json(), id);
  const numbers = series.signals.gpu_util.filter((v) => typeof v === 'number').length;
  if (numbers < 10) fail(`job ${id} series has ${numbers} numeric gpu_util points`);
  if ((await page.locator('#timeline span').count()) < 1) fail('no lifecycle timeline');
  if ((await page.locator('#buckets tr').count()) < 9) fail('no badput table');
  await page.screenshot({ path: `${artifacts}/dashboard-job.png`, fullPage: true });

  // Job -> device.
  await page.locator('main ul a[href^="#/device/"]').first().click();
  await rendered('#/device/');
  await page.waitForSelector('#c-device canvas');
  const devInk = await inked('#c-device');
  if (!(devInk > 0.005)) fail('device chart has no data drawn: ' + devInk);
  await page.screenshot({ path: `${artifacts}/dashboard-device.png`, fullPage: true });

  // Device -> a job on it -> back to the fleet.
  await page.locator('#dev-jobs a').first().click();
  await rendered('#/job/');
  await page.locator('#nav-fleet').click();
  await rendered('#/');
  await page.waitForSelector('#jobs');
  if (errors.length) fail('errors in the page:\n  ' + errors.join('\n  '));
  console.log(`ok: ${jobs} jobs, job ${id} chart ink ${(100 * jobInk).toFixed(1)}%, device chart ink ${(100 * devInk).toFixed(1)}%`);
} catch (e) {
  if (!process.exitCode) { console.error('FAIL: ' + e.message); process.exitCode = 1; }
  try { await page.screenshot({ path: `${artifacts}/dashboard-failure.png`, fullPage: true }); } catch {}
  if (errors.length) console.error(errors.join('\n'));
} finally {
  await ctx.close();
}
