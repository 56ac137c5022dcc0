// serve_workflows_chromium.mjs: drives Debian's Chromium (headless) to the dashboard's
// workflows view and checks it against GET /api/v1/workflows.
// Usage: node serve_workflows_chromium.mjs URL ARTIFACT_DIR PROFILE_DIR
import { openPage, fail } from './chromium_lib.mjs';

const [url, artifacts, profile] = process.argv.slice(2);
const { ctx, page, errors } = await openPage(profile);
async function rendered(prefix) { // polls with evaluate: waitForFunction would trip the CSP
  for (let i = 0; i < 150; i++) {
    const r = await page.evaluate(() => document.body.getAttribute('data-rendered') || '');
    if (r.startsWith(prefix)) return;
    await page.waitForTimeout(100);
  }
  fail('view ' + prefix + ' did not render');
}
const pct = (v) => (v === null || v === undefined ? '–' : (100 * v).toFixed(1) + '%');
const fix = (v, d) => (v === null || v === undefined ? '–' : Number(v).toFixed(d));

try {
  await page.goto(url, { waitUntil: 'load' });
  await rendered('#/');
  await page.locator('#nav-workflows').click();
  await rendered('#/workflows');
  await page.waitForSelector('#wf-kinds');
  const api = await page.evaluate(async () => (await fetch('api/v1/workflows')).json());
  if (api.kinds.length !== 3) fail('the API has ' + api.kinds.length + ' kinds, expected 3');
  if (!api.gpu_known) fail('the API joined no engine');
  const rows = await page.locator('#wf-kinds tr[data-kind]').count();
  if (rows !== api.kinds.length) fail(`${rows} kind rows for ${api.kinds.length} kinds`);
  let total = 0;
  for (const [i, k] of api.kinds.entries()) {
    total += k.count;
    const cells = await page.locator(`#wf-kinds tr[data-kind="${k.kind}"] td`).allTextContents();
    const want = [k.kind, String(k.count), pct(k.success_rate), fix(k.e2e_p50_s, 3) + ' s', fix(k.e2e_p95_s, 3) + ' s'];
    for (let c = 0; c < want.length; c++)
      if (cells[c].trim() !== want[c]) fail(`kind ${k.kind} column ${c}: '${cells[c]}' != '${want[c]}'`);
    if (cells[6].trim() !== fix(k.gpu_s_per_ok, 3) || cells[6].trim() === '–')
      fail(`kind ${k.kind} GPU-s per ok '${cells[6]}' != ${k.gpu_s_per_ok}`);
    // the time-by-step bar: one segment per step kind with time, widths summing to the row
    const segs = await page.locator(`#wf-kinds tr[data-kind="${k.kind}"] .bar span`).evaluateAll((s) =>
      s.map((x) => [x.getAttribute('data-step'), x.getBoundingClientRect().width, x.parentElement.getBoundingClientRect().width]));
    const withTime = Object.entries(k.time_by_step_s).filter(([, v]) => v > 0).map(([s]) => s);
    if (segs.length !== withTime.length) fail(`kind ${k.kind}: ${segs.length} bar segments for steps ${withTime}`);
    const w = segs.reduce((a, s) => a + s[1], 0);
    if (!(Math.abs(w - segs[0][2]) <= 2)) fail(`kind ${k.kind}: bar segments ${w}px of ${segs[0][2]}px`);
    // the slow workflow's waterfall: one visible bar per span
    const bars = await page.locator(`#wf-slow-${i} .wtrack span`).evaluateAll((s) => s.map((x) => x.getBoundingClientRect().width));
    if (bars.length !== k.slow.spans.length) fail(`kind ${k.kind}: ${bars.length} waterfall bars for ${k.slow.spans.length} spans`);
    if (!bars.every((b) => b > 0)) fail(`kind ${k.kind}: a waterfall bar is not drawn`);
  }
  if (total !== 60) fail(`the API counts ${total} workflows, the program sent 60`);
  const findings = await page.locator('#wf-findings .finding').count();
  if (findings !== api.findings.length || findings < 1) fail(`${findings} findings shown, the API has ${api.findings.length}`);
  const cls = await page.locator('#wf-findings .finding .cls').allTextContents();
  if (!cls.includes('tool_bound')) fail('no tool_bound finding shown: ' + cls);
  await page.screenshot({ path: `${artifacts}/dashboard-workflows.png`, fullPage: true });
  if (errors.length) fail('errors in the page:\n  ' + errors.join('\n  '));
  console.log(`ok: ${rows} kinds, ${total} workflows, ${findings} findings (${cls.join(', ')})`);
} catch (e) {
  if (!process.exitCode) { console.error('FAIL: ' + e.message); process.exitCode = 1; }
  try { await page.screenshot({ path: `${artifacts}/dashboard-workflows-failure.png`, fullPage: true }); } catch {}
  if (errors.length) console.error(errors.join('\n'));
} finally {
  await ctx.close();
}
