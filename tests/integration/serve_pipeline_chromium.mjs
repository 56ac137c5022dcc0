// serve_pipeline_chromium.mjs: drives Debian's Chromium (headless) to a pipeline job's view
// with playwright-core. Usage: node serve_pipeline_chromium.mjs JOB_URL ARTIFACT_DIR PROFILE_DIR
// Checks: the stage table lists the stages with the bottleneck highlighted, the queue-length
// chart draws, the finding's evidence and the sizing show, the what-if form returns a
// prediction, and the console has no errors. Saves dashboard-pipeline.png.
import { openPage, fail } from './chromium_lib.mjs';

const [url, artifacts, profile] = process.argv.slice(2);
const { ctx, page, errors } = await openPage(profile);
// Polls with evaluate, not waitForFunction (which needs eval, refused by the page's CSP).
async function until(fn, arg, what) {
  for (let i = 0; i < 150; i++) {
    if (await page.evaluate(fn, arg)) return;
    await page.waitForTimeout(100);
  }
  fail(what);
}
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
  await until(() => (document.body.getAttribute('data-rendered') || '').startsWith('#/job/'), null, 'job view did not render');
  await until(() => !!document.querySelector('#pipe-stages'), null, 'no pipeline stage table');
  const rows = await page.locator('#pipe-stages tr').allTextContents();
  if (rows.length !== 5) fail(`stage table has ${rows.length - 1} stages: ${rows.join(' | ')}`);
  const names = await page.evaluate(() => [...document.querySelectorAll('#pipe-stages tr')].slice(1)
    .map((tr) => tr.children[0].firstChild.textContent.trim()));
  if (names.join(',') !== 'read,decode,model,write') fail('stage order ' + names);
  const bn = await page.locator('#pipe-stages tr.bn').allTextContents();
  if (bn.length !== 1 || !/^decode/.test(bn[0].trim()) || !/bottleneck/.test(bn[0])) fail('bottleneck row: ' + bn);
  // Utilization column: a percentage per stage, the bottleneck's the highest.
  const util = await page.evaluate(() => [...document.querySelectorAll('#pipe-stages tr')].slice(1)
    .map((tr) => parseFloat(tr.children[4].textContent)));
  if (util.some((u) => !(u >= 0 && u <= 100)) || Math.max(...util) !== util[1]) fail('utilizations ' + util);
  await page.waitForSelector('#c-queues canvas');
  const ink = await inked('#c-queues');
  if (!(ink > 0.002)) fail('queue chart has nothing drawn: ' + ink);
  const finding = await page.locator('#pipeline ~ .grid2 .finding').first().textContent();
  if (!/pipeline_bottleneck/.test(finding) || !/decode/.test(finding) || !/Fix:/.test(finding)) fail('finding: ' + finding);
  if ((await page.locator('#pipeline ~ .grid2 .finding table tr').count()) < 2) fail('finding without evidence');
  const sizing = await page.locator('#pipe-sizing').textContent();
  if (!/Scale decode first/.test(sizing)) fail('sizing: ' + sizing);

  // What-if: decode=4, the others as the form proposes.
  await page.locator('#whatif input[name="decode"]').fill('4');
  await page.locator('#whatif button').click();
  await until(() => !!document.querySelector('#whatif-rate'), null, 'what-if gave no prediction');
  const rate = parseFloat(await page.locator('#whatif-rate').textContent());
  const measured = await page.evaluate(() => parseFloat(document.querySelector('#whatif-table tr:nth-child(2) td.num').textContent));
  if (!(rate > measured * 1.2)) fail(`what-if predicted ${rate} items/s, measured ${measured}`);
  const gpu = await page.locator('#whatif-gpu').textContent();
  if (!/%$/.test(gpu.trim())) fail('what-if GPU busy share ' + gpu);
  await page.locator('#pipeline').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${artifacts}/dashboard-pipeline.png`, fullPage: true });
  if (errors.length) fail('errors in the page:\n  ' + errors.join('\n  '));
  console.log(`ok: stages ${names.join(' -> ')}, bottleneck decode, queue chart ink ${(100 * ink).toFixed(1)}%, ` +
    `what-if decode=4: ${rate} items/s (measured ${measured}), GPU busy ${gpu.trim()}`);
} catch (e) {
  if (!process.exitCode) { console.error('FAIL: ' + e.message); process.exitCode = 1; }
  try { await page.screenshot({ path: `${artifacts}/dashboard-pipeline-failure.png`, fullPage: true }); } catch {}
  if (errors.length) console.error(errors.join('\n'));
} finally {
  await ctx.close();
}
